package codegen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/check"
	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/providers"
)

// typeOf types e on the current probe; checking already succeeded, so an
// error here is the compiler's own.
func (pg *probeGen) typeOf(e ast.Expr) (*types.Type, error) { return pg.in.TypeOf(e, pg.env) }

// expr evaluates an integer or pointer expression into R0.
func (pg *probeGen) expr(e ast.Expr) error {
	t, err := pg.typeOf(e)
	if err != nil {
		return err
	}
	if t.IsString() {
		return pg.errorf(e.Start(), "string value used where a scalar is required")
	}
	if t.Kind == types.Struct {
		if a, ok := e.(*ast.Assign); ok {
			return pg.assign(a)
		}
		return pg.errorf(e.Start(), "%s value used where a scalar is required", t)
	}
	if t.Kind == types.Void {
		if call, ok := e.(*ast.Call); ok {
			return pg.exprAny(call)
		}
	}
	switch e := e.(type) {
	case *ast.IntLit:
		pg.emit(asm.LoadImm(asm.R0, int64(e.Val), asm.DWord))
		pg.normalize(asm.R0, t.Size, t.Signed)
	case *ast.Paren:
		return pg.expr(e.X)
	case *ast.MacroVar:
		v, _, _, err := pg.in.Macro(e)
		if err != nil {
			return err
		}
		pg.emit(asm.LoadImm(asm.R0, v, asm.DWord))
	case *ast.Ident:
		return pg.ident(e, t)
	case *ast.KSym:
		if err := pg.ksymAddr(e); err != nil {
			return err
		}
		return pg.readKernel(t)
	case *ast.Unary:
		return pg.unary(e, t)
	case *ast.Postfix:
		return pg.incdec(e.X, e.Op, true)
	case *ast.Binary:
		if v, ok := pg.in.ConstInt(e); ok {
			// DTrace folds an operation on constants in 64 bits and keeps
			// the whole value: (1 << 63) - 1 is INT64_MAX, though 1 is an
			// int.
			pg.emit(asm.LoadImm(asm.R0, v, asm.DWord))
			return nil
		}
		return pg.binary(e, t)
	case *ast.Cond:
		f, end := pg.newLabel("cond_false"), pg.newLabel("cond_end")
		if err := pg.expr(e.C); err != nil {
			return err
		}
		pg.emit(asm.JEq.Imm(asm.R0, 0, f))
		if err := pg.convert(e.T, t); err != nil {
			return err
		}
		pg.emit(asm.Ja.Label(end))
		pg.label(f)
		if err := pg.convert(e.F, t); err != nil {
			return err
		}
		pg.label(end)
	case *ast.Assign:
		return pg.assign(e)
	case *ast.Cast:
		// A char array cast to a pointer or integer is its address, as
		// in C: (char *)curthread->comm.
		x, _ := pg.bytesAddr(e.X)
		if err := pg.expr(x); err != nil {
			return err
		}
		if t.Kind == types.Int {
			pg.normalize(asm.R0, t.Size, t.Signed)
		}
	case *ast.OffsetOf:
		off, _ := pg.in.ConstInt(e)
		pg.emit(asm.Mov.Imm(asm.R0, int32(off)))
	case *ast.SizeofType:
		tt, err := pg.in.TypeNamed(e.Type)
		if err != nil {
			return err
		}
		pg.emit(asm.Mov.Imm(asm.R0, int32(pg.in.SizeOf(tt))))
	case *ast.Call:
		return pg.subrInt(e)
	case *ast.Member:
		if r, ok := check.RefOf(e); ok {
			return pg.loadRef(r)
		}
		if id, ok := e.X.(*ast.Ident); ok && id.Name == "args" {
			return pg.argsField(e, t)
		}
		return pg.kernelMember(e, t)
	case *ast.Index:
		if v := pg.arrayVar(e.X); v != nil {
			return pg.loadArrayElem(v, e.Keys[0])
		}
		if id, ok := e.X.(*ast.Ident); ok && id.Name == "args" {
			n, _ := pg.in.ConstInt(e.Keys[0])
			if m := check.ArgsIndexMember(e, pg.probe, int(n)); m != nil {
				return pg.argsField(m, t)
			}
			pg.emit(asm.LoadMem(asm.R0, regState, int16(StArgs+8*n), asm.DWord))
			if t.Kind == types.Int {
				pg.normalize(asm.R0, t.Size, t.Signed)
			}
			return nil
		}
		if id, ok := e.X.(*ast.Ident); ok && id.Name == "uregs" {
			return pg.uregs(e)
		}
		if f, _ := pg.in.ArrayField(e, pg.env); f != nil {
			return pg.arrayElem(e, f, t)
		}
		if pg.in.PointerIndex(e, pg.env) != nil {
			if err := pg.pointerElemAddr(e); err != nil {
				return err
			}
			return pg.readKernel(t)
		}
		if pg.in.StringIndex(e, pg.env) {
			return pg.stringIndex(e)
		}
		if r, ok := check.RefOf(e); ok {
			return pg.loadRef(r)
		}
		if _, at, _ := pg.in.MemberArray(e, pg.env); at != nil && at.Elem.Kind != types.Struct {
			if err := pg.memberElemAddr(e); err != nil {
				return err
			}
			return pg.readKernel(t)
		}
		return pg.errorf(e.Start(), "expression is not supported here")
	default:
		return pg.errorf(e.Start(), "expression is not supported here")
	}
	return nil
}

// convert evaluates e and converts it to type t.
func (pg *probeGen) convert(e ast.Expr, t *types.Type) error {
	if err := pg.expr(e); err != nil {
		return err
	}
	if t.Kind == types.Int {
		pg.normalize(asm.R0, t.Size, t.Signed)
	}
	return nil
}

func (pg *probeGen) ident(e *ast.Ident, t *types.Type) error {
	if il := pg.in.InlineOf(e.Name); il != nil {
		return pg.convert(il.Init, pg.in.InlineType(il))
	}
	if n := check.ArgIndex(e.Name); n >= 0 {
		pg.emit(asm.LoadMem(asm.R0, regState, int16(StArgs+8*n), asm.DWord))
		return nil
	}
	if v := pg.arrayVar(e); v != nil {
		return pg.arrayAddr(v, nil, false)
	}
	if r, ok := check.RefOf(e); ok && pg.varOf(r) != nil {
		return pg.loadRef(r)
	}
	switch e.Name {
	case "curthread":
		pg.call(asm.FnGetCurrentTask)
	case "curcpu":
		// The current processor's record: key 0 of a per-CPU array.
		pg.mapPtr(asm.R1, pg.cpuInfoMap())
		pg.addrOf(asm.R2, asm.RFP, stackKey)
		pg.call(asm.FnMapLookupElem)
		// The verifier forbids arithmetic on the map pointer it tracks
		// (curcpu >> 8): copied through a helper, it is a plain
		// address, as every D pointer is.
		off, err := pg.push()
		if err != nil {
			return pg.errorf(e.Pos, "%v", err)
		}
		pg.addrOf(asm.R1, asm.RFP, int(off))
		pg.emit(asm.Mov.Imm(asm.R2, 8))
		pg.addrOf(asm.R3, asm.RFP, int(off))
		pg.call(asm.FnProbeReadKernel)
		pg.pop(asm.R0)
	case "pid":
		pg.call(asm.FnGetCurrentPidTgid)
		pg.emit(asm.RSh.Imm(asm.R0, 32))
	case "tid":
		pg.call(asm.FnGetCurrentPidTgid)
		pg.emit(asm.Mov.Reg32(asm.R0, asm.R0))
	case "uid":
		pg.call(asm.FnGetCurrentUidGid)
		pg.emit(asm.Mov.Reg32(asm.R0, asm.R0))
	case "gid":
		pg.call(asm.FnGetCurrentUidGid)
		pg.emit(asm.RSh.Imm(asm.R0, 32))
	case "cpu":
		pg.call(asm.FnGetSmpProcessorId)
	case "timestamp":
		if pg.tstamp == 0 {
			pg.call(asm.FnKtimeGetNs)
			break
		}
		pg.emit(asm.LoadMem(asm.R0, regState, int16(pg.tstamp), asm.DWord))
		pg.emit(asm.JNE.Imm(asm.R0, 0, pg.labelNext("tstamp")))
		pg.call(asm.FnKtimeGetNs)
		pg.emit(asm.StoreMem(regState, int16(pg.tstamp), asm.R0, asm.DWord))
		pg.label(pg.lastLabel)
	case "walltimestamp":
		pg.call(asm.FnKtimeGetNs)
		pg.emit(asm.LoadMem(asm.R1, regGlob, GlWallOffset, asm.DWord))
		pg.emit(asm.Add.Reg(asm.R0, asm.R1))
	case "errno":
		pg.emit(asm.LoadMem(asm.R0, regState, StErrno, asm.DWord))
	case "epid":
		pg.emit(asm.Mov.Imm(asm.R0, int32(pg.epid)))
	case "id":
		pg.emit(asm.Mov.Imm(asm.R0, int32(pg.probe.ID)))
	case "ppid":
		return pg.taskField(e, []string{"real_parent", "tgid"}, t)
	case "vtimestamp":
		return pg.taskField(e, []string{"se", "sum_exec_runtime"}, t)
	case "caller", "ucaller", "stackdepth", "ustackdepth":
		return pg.stackVar(e.Name)
	default:
		return pg.errorf(e.Pos, "%s is not supported here", e.Name)
	}
	return nil
}

func (pg *probeGen) unary(e *ast.Unary, t *types.Type) error {
	switch e.Op {
	case "++", "--":
		return pg.incdec(e.X, e.Op, false)
	case "&":
		switch x := check.Unparen(e.X).(type) {
		case *ast.KSym:
			return pg.ksymAddr(x)
		case *ast.Unary:
			if x.Op == "*" {
				return pg.expr(x.X)
			}
		case *ast.Index:
			if v := pg.arrayVar(x.X); v != nil {
				return pg.arrayAddr(v, x.Keys[0], false)
			}
			if pg.in.PointerIndex(x, pg.env) != nil {
				return pg.pointerElemAddr(x)
			}
			return pg.memberElemAddr(x)
		}
		return pg.kernelAddr(unparenMember(e.X))
	case "sizeof":
		if v := pg.arrayVar(e.X); v != nil {
			pg.emit(asm.Mov.Imm(asm.R0, int32(v.Type.Size)))
			return nil
		}
		// A member array's size is the array's, not that of the string
		// a char array reads as (one more, for its NUL).
		if m, ok := check.Unparen(e.X).(*ast.Member); ok {
			if _, mt, err := pg.in.MemberOffset(m, pg.env); err == nil && mt.Kind == types.Array {
				pg.emit(asm.Mov.Imm(asm.R0, int32(mt.Size)))
				return nil
			}
		}
		xt, err := pg.typeOf(e.X)
		if err != nil {
			return err
		}
		size := pg.in.SizeOf(xt)
		if _, lit := check.Unparen(e.X).(*ast.StrLit); lit {
			size = xt.Size // a literal's length and NUL, as DTrace says
		}
		pg.emit(asm.Mov.Imm(asm.R0, int32(size)))
		return nil
	}
	if err := pg.expr(e.X); err != nil {
		return err
	}
	switch e.Op {
	case "*":
		return pg.readKernel(t)
	case "-":
		pg.emit(asm.Neg.Imm(asm.R0, 0))
	case "~":
		pg.emit(asm.Xor.Imm(asm.R0, -1))
	case "!":
		pg.bool(asm.JEq, asm.R0, 0)
		return nil
	case "+":
	}
	pg.normalize(asm.R0, t.Size, t.Signed)
	return nil
}

// bool sets R0 to 1 when "R0 op imm" holds, else 0.
func (pg *probeGen) bool(op asm.JumpOp, r asm.Register, imm int32) {
	yes := pg.newLabel("true")
	pg.emit(asm.Mov.Reg(asm.R1, r), asm.Mov.Imm(asm.R0, 1))
	pg.emit(op.Imm(asm.R1, imm, yes))
	pg.emit(asm.Mov.Imm(asm.R0, 0))
	pg.label(yes)
}

func (pg *probeGen) binary(e *ast.Binary, t *types.Type) error {
	switch e.Op {
	case "&&", "||":
		return pg.logical(e)
	case ",":
		if err := pg.exprAny(e.X); err != nil {
			return err
		}
		return pg.expr(e.Y)
	}
	xt, err := pg.typeOf(e.X)
	if err != nil {
		return err
	}
	if xt.IsString() || pg.in.StringNullCompare(e) && e.Op != "^^" {
		if yt, err := pg.typeOf(e.Y); err == nil && (xt.IsString() || yt.IsString()) {
			return pg.strCompare(e)
		}
	}
	yt, err := pg.typeOf(e.Y)
	if err != nil {
		return err
	}
	if e.Op == "%" && t.Signed {
		// DTrace folds constants as C computes them: 7 % -3 is 1, where
		// the same at run time is -1 (see divide).
		x, okx := pg.in.ConstInt(e.X)
		y, oky := pg.in.ConstInt(e.Y)
		if okx && oky && y != 0 {
			pg.emit(asm.LoadImm(asm.R0, x%y, asm.DWord))
			return nil
		}
	}
	// Left into a temporary, right into R0, then R1 = right, R0 = left.
	if err := pg.expr(e.X); err != nil {
		return err
	}
	if _, err := pg.push(); err != nil {
		return pg.errorf(e.Pos, "%v", err)
	}
	if err := pg.expr(e.Y); err != nil {
		return err
	}
	pg.emit(asm.Mov.Reg(asm.R1, asm.R0))
	pg.pop(asm.R0)
	if e.Op == "^^" {
		pg.emit(asm.Mov.Reg(asm.R2, asm.R1))
		pg.bool(asm.JNE, asm.R0, 0)
		pg.emit(asm.Mov.Reg(asm.R3, asm.R0))
		pg.bool(asm.JNE, asm.R2, 0)
		pg.emit(asm.Xor.Reg(asm.R0, asm.R3))
		return nil
	}
	if compare, ok := compareJumps[e.Op]; ok {
		common := types.Arith(xt, yt)
		op := compare[0]
		if common.Signed {
			op = compare[1]
		}
		yes := pg.newLabel("true")
		pg.emit(asm.Mov.Reg(asm.R2, asm.R0), asm.Mov.Imm(asm.R0, 1))
		pg.emit(op.Reg(asm.R2, asm.R1, yes))
		pg.emit(asm.Mov.Imm(asm.R0, 0))
		pg.label(yes)
		return nil
	}
	pg.pointerScale(e.Op, xt, yt)
	if err := pg.arith(e.Op, t, e); err != nil {
		return err
	}
	if e.Op == "-" && xt.Kind == types.Pointer && yt.Kind == types.Pointer {
		pg.divideSigned(elemSize(xt)) // a count of elements, as in C
	}
	return nil
}

// elemSize is the size p + 1 steps by for a pointer type: what it points
// at, or 1 for void and other sizeless types (byte steps, as for char).
func elemSize(t *types.Type) int {
	if t.Kind != types.Pointer || t.Elem == nil || t.Elem.Size <= 0 {
		return 1
	}
	if t.Elem.Kind == types.Pointer {
		return 8
	}
	return t.Elem.Size
}

// pointerScale prepares R0 op R1 (left and right, of types lt and rt) as
// C's pointer arithmetic: an integer added to or taken from a pointer
// counts elements, so it is scaled by the element's size.
func (pg *probeGen) pointerScale(op string, lt, rt *types.Type) {
	if op != "+" && op != "-" {
		return
	}
	lp, rp := lt.Kind == types.Pointer, rt.Kind == types.Pointer
	switch {
	case lp && !rp:
		if n := elemSize(lt); n != 1 {
			pg.emit(asm.Mul.Imm(asm.R1, int32(n)))
		}
	case rp && !lp && op == "+":
		if n := elemSize(rt); n != 1 {
			pg.emit(asm.Mul.Imm(asm.R0, int32(n)))
		}
	}
}

// divideSigned divides R0 by n, rounding toward zero (BPF's division is
// unsigned).
func (pg *probeGen) divideSigned(n int) {
	if n <= 1 {
		return
	}
	neg, done := pg.newLabel("div_neg"), pg.newLabel("div_done")
	pg.emit(asm.JSLT.Imm(asm.R0, 0, neg))
	pg.emit(asm.Div.Imm(asm.R0, int32(n)), asm.Ja.Label(done))
	pg.label(neg)
	pg.emit(asm.Neg.Imm(asm.R0, 0), asm.Div.Imm(asm.R0, int32(n)), asm.Neg.Imm(asm.R0, 0))
	pg.label(done)
}

// compareJumps maps comparisons to their unsigned and signed jumps.
var compareJumps = map[string][2]asm.JumpOp{
	"==": {asm.JEq, asm.JEq}, "!=": {asm.JNE, asm.JNE},
	"<": {asm.JLT, asm.JSLT}, "<=": {asm.JLE, asm.JSLE},
	">": {asm.JGT, asm.JSGT}, ">=": {asm.JGE, asm.JSGE},
}

// arith computes R0 = R0 op R1 in type t.
func (pg *probeGen) arith(op string, t *types.Type, at ast.Expr) error {
	switch op {
	case "+":
		pg.emit(asm.Add.Reg(asm.R0, asm.R1))
	case "-":
		pg.emit(asm.Sub.Reg(asm.R0, asm.R1))
	case "*":
		pg.emit(asm.Mul.Reg(asm.R0, asm.R1))
	case "&":
		pg.emit(asm.And.Reg(asm.R0, asm.R1))
	case "|":
		pg.emit(asm.Or.Reg(asm.R0, asm.R1))
	case "^":
		pg.emit(asm.Xor.Reg(asm.R0, asm.R1))
	case "<<":
		pg.emit(asm.LSh.Reg(asm.R0, asm.R1))
	case ">>":
		if t.Signed {
			pg.emit(asm.ArSh.Reg(asm.R0, asm.R1))
		} else {
			pg.emit(asm.RSh.Reg(asm.R0, asm.R1))
		}
	case "/", "%":
		pg.divide(op == "%", t.Signed)
	default:
		return pg.errorf(at.Start(), "operator %s is not supported", op)
	}
	// No truncation to t: DTrace computes in 64-bit registers and cuts a
	// value to its type's size only where it is stored, cast or recorded
	// (i * i / i of an int i is i, even past 2^31).
	return nil
}

// divide computes R0 = R0 / R1 (or R0 % R1), faulting on a zero divisor.
// BPF divides unsigned, so signed operands divide by magnitude and the
// sign is put back as Oracle's DTrace for Linux does, for the quotient as
// for the remainder: negative when exactly one operand is (19 % -5 is -4,
// where C says 4).
func (pg *probeGen) divide(mod, signed bool) {
	nonzero := pg.newLabel("divisor_ok")
	pg.emit(asm.JNE.Imm(asm.R1, 0, nonzero))
	pg.raise(FaultDivZero, 0, false)
	pg.label(nonzero)
	op := asm.Div
	if mod {
		op = asm.Mod
	}
	if !signed {
		pg.emit(op.Reg(asm.R0, asm.R1))
		return
	}
	xpos, ypos, done := pg.newLabel("x_pos"), pg.newLabel("y_pos"), pg.newLabel("div_done")
	pg.emit(asm.Mov.Imm(asm.R2, 0))
	pg.emit(asm.JSGE.Imm(asm.R0, 0, xpos))
	pg.emit(asm.Neg.Imm(asm.R0, 0), asm.Xor.Imm(asm.R2, 1))
	pg.label(xpos)
	pg.emit(asm.JSGE.Imm(asm.R1, 0, ypos))
	pg.emit(asm.Neg.Imm(asm.R1, 0), asm.Xor.Imm(asm.R2, 1))
	pg.label(ypos)
	pg.emit(op.Reg(asm.R0, asm.R1))
	pg.emit(asm.JEq.Imm(asm.R2, 0, done))
	pg.emit(asm.Neg.Imm(asm.R0, 0))
	pg.label(done)
}

// logical generates short-circuit && and ||.
func (pg *probeGen) logical(e *ast.Binary) error {
	short, end := pg.newLabel("short"), pg.newLabel("logic_end")
	if err := pg.expr(e.X); err != nil {
		return err
	}
	if e.Op == "&&" {
		pg.emit(asm.JEq.Imm(asm.R0, 0, short))
	} else {
		pg.emit(asm.JNE.Imm(asm.R0, 0, short))
	}
	if err := pg.expr(e.Y); err != nil {
		return err
	}
	pg.bool(asm.JNE, asm.R0, 0)
	pg.emit(asm.Ja.Label(end))
	pg.label(short)
	if e.Op == "&&" {
		pg.emit(asm.Mov.Imm(asm.R0, 0))
	} else {
		pg.emit(asm.Mov.Imm(asm.R0, 1))
	}
	pg.label(end)
	return nil
}

// exprAny evaluates e for its effect, whatever its type.
func (pg *probeGen) exprAny(e ast.Expr) error {
	t, err := pg.typeOf(e)
	if err != nil {
		return err
	}
	if a, ok := e.(*ast.Assign); ok {
		return pg.assign(a)
	}
	if t.IsString() {
		off := pg.allocScratch(t.Size)
		return pg.strInto(e, regState, off, t.Size)
	}
	if t.Kind == types.Void {
		if call, ok := e.(*ast.Call); ok {
			switch call.Fn {
			case "raise", "stop", "chill", "copyoutstr", "bcopy", "copyinto", "copyout":
				return pg.subrInt(call)
			case "panic", "breakpoint":
				// Destructive beyond what dstar will do to a kernel.
				return pg.errorf(call.Pos, "%s( ) is not supported: dstar does not stop or crash the kernel", call.Fn)
			}
			return pg.errorf(call.Pos, "%s( ) may not be used in an expression", call.Fn)
		}
	}
	return pg.expr(e)
}

// assign generates an assignment to a variable; R0 holds the value
// assigned.
func (pg *probeGen) assign(e *ast.Assign) error {
	if lt, err := pg.typeOf(e.LHS); err == nil && lt.Kind == types.Struct {
		return pg.assignStruct(e)
	}
	if v, ix := pg.arrayIndexOf(e.LHS); v != nil {
		return pg.assignArrayElem(e, v, ix)
	}
	r, ok := check.RefOf(e.LHS)
	if ix, isIdx := check.Unparen(e.LHS).(*ast.Index); !ok || isIdx && pg.in.PointerIndex(ix, pg.env) != nil {
		return pg.storeMemory(e)
	}
	v := pg.varOf(r)
	if v.Type.IsString() {
		if err := pg.storeRefStr(r, e.RHS); err != nil {
			return err
		}
		pg.emit(asm.Mov.Imm(asm.R0, 0))
		return nil
	}
	if e.Op != "=" {
		// The left side's value is read first, as DTrace does (i += ++i
		// adds to the old i).
		if err := pg.loadRef(r); err != nil {
			return err
		}
		if _, err := pg.push(); err != nil {
			return pg.errorf(e.Pos, "%v", err)
		}
		if err := pg.expr(e.RHS); err != nil {
			return err
		}
		pg.emit(asm.Mov.Reg(asm.R1, asm.R0))
		pg.pop(asm.R0)
		rt, err := pg.typeOf(e.RHS)
		if err != nil {
			return err
		}
		pg.pointerScale(e.Op[:len(e.Op)-1], v.Type, rt)
		if err := pg.arith(e.Op[:len(e.Op)-1], types.Arith(v.Type, rt), e); err != nil {
			return err
		}
	} else if rt, err := pg.typeOf(e.RHS); err == nil && rt.IsString() && v.Type.Kind == types.Pointer {
		// char *p = s: p points at the string, kept in the clause's
		// scratch as DTrace keeps it in its temporary string space.
		off, err := pg.strTemp(e.RHS, rt.Size)
		if err != nil {
			return err
		}
		pg.addrOf(asm.R0, regState, off)
		pg.pinned++
	} else if err := pg.expr(e.RHS); err != nil {
		return err
	}
	return pg.storeRef(r)
}

// incdec generates ++ and -- on a variable; R0 is the old value for
// postfix, the new one for prefix.
func (pg *probeGen) incdec(x ast.Expr, op string, postfix bool) error {
	delta := int32(1)
	if op == "--" {
		delta = -1
	}
	r, ok := check.RefOf(x)
	arr, _ := pg.arrayIndexOf(x)
	if ix, isIdx := check.Unparen(x).(*ast.Index); !ok || arr != nil || isIdx && pg.in.PointerIndex(ix, pg.env) != nil {
		// In memory: x += 1 (or -= 1), which leaves the new value.
		as := &ast.Assign{Pos: x.Start(), Op: op[:1] + "=", LHS: x, RHS: &ast.IntLit{Pos: x.Start(), Val: 1, Text: "1"}}
		if err := pg.assign(as); err != nil {
			return err
		}
		if postfix {
			xt, err := pg.typeOf(x)
			if err != nil {
				return err
			}
			pg.emit(asm.Add.Imm(asm.R0, -delta*int32(elemSize(xt))))
			if xt.Kind == types.Int {
				pg.normalize(asm.R0, xt.Size, xt.Signed)
			}
		}
		return nil
	}
	if pg.varOf(r) == nil {
		return pg.errorf(x.Start(), "operator %s requires a writable variable", op)
	}
	delta *= int32(elemSize(pg.varOf(r).Type))
	if err := pg.loadRef(r); err != nil {
		return err
	}
	old, err := pg.push()
	if err != nil {
		return pg.errorf(x.Start(), "%v", err)
	}
	pg.emit(asm.Add.Imm(asm.R0, delta))
	if err := pg.storeRef(r); err != nil {
		return err
	}
	pg.depth--
	if postfix {
		pg.emit(asm.LoadMem(asm.R0, asm.RFP, old, asm.DWord))
		v := pg.varOf(r)
		pg.normalize(asm.R0, v.Type.Size, v.Type.Signed)
	}
	return nil
}

// argsField loads an integer or pointer tracepoint field args->name.
func (pg *probeGen) argsField(e *ast.Member, t *types.Type) error {
	f := check.ArgField(pg.probe, e.Name)
	if f == nil {
		return pg.errorf(e.Pos, "args->%s is not available on %s", e.Name, pg.probe)
	}
	switch f.Kind {
	case providers.ArgConst:
		pg.emit(asm.LoadImm(asm.R0, f.Value, asm.DWord))
		return nil
	case providers.ArgInt, providers.ArgPointer:
		size := f.Size
		if f.Kind == providers.ArgPointer || size > 8 {
			size = 8
		}
		pg.loadField(asm.R0, f, size)
		if t.Kind == types.Int && t.Signed {
			pg.normalize(asm.R0, size, true)
		}
		return nil
	}
	return pg.errorf(e.Pos, "args->%s is not a scalar", e.Name)
}

// loadField loads size bytes of the scalar field f into r: from the
// probe's context, or from the arg slot its prologue left it in (whole,
// so narrowed here as the record would have it).
func (pg *probeGen) loadField(r asm.Register, f *providers.Arg, size int) {
	if f.Slot == 0 {
		pg.emit(asm.LoadMem(r, regCtx, int16(f.Offset), sizeOf(size)))
		return
	}
	pg.emit(asm.LoadMem(r, regState, int16(StArgs+8*(f.Slot-1)), asm.DWord))
	pg.normalize(r, size, false)
}

// taskField reads current->path... using the kernel's BTF for offsets.
func (pg *probeGen) taskField(e *ast.Ident, path []string, t *types.Type) error {
	offs, size, err := taskOffsets(path)
	if err != nil {
		return pg.errorf(e.Pos, "%s needs kernel BTF: %v", e.Name, err)
	}
	tmp := pg.allocScratch(8)
	pg.call(asm.FnGetCurrentTask)
	for i, off := range offs {
		n := 8
		if i == len(offs)-1 {
			n = size
		}
		pg.emit(storeImm(regState, int16(tmp), 0, asm.DWord))
		pg.emit(asm.Mov.Reg(asm.R3, asm.R0), asm.Add.Imm(asm.R3, int32(off)))
		pg.addrOf(asm.R1, regState, tmp)
		pg.emit(asm.Mov.Imm(asm.R2, int32(n)))
		pg.call(asm.FnProbeReadKernel)
		pg.emit(asm.LoadMem(asm.R0, regState, int16(tmp), asm.DWord))
	}
	pg.normalize(asm.R0, size, t.Signed)
	return nil
}

// arrayElem loads args->field[i] of an inline integer array. A constant
// index loads straight from the context; a computed one is bounded, and
// one out of range reads as 0.
func (pg *probeGen) arrayElem(e *ast.Index, f *providers.Arg, t *types.Type) error {
	es := f.Size / f.Len
	if i, ok := pg.in.ConstInt(e.Keys[0]); ok {
		pg.emit(asm.LoadMem(asm.R0, regCtx, int16(f.Offset+int(i)*es), sizeOf(es)))
		pg.normalize(asm.R0, es, t.Signed)
		return nil
	}
	if err := pg.expr(e.Keys[0]); err != nil {
		return err
	}
	tmp := pg.allocScratch(8)
	out, done := pg.newLabel("idx_out"), pg.newLabel("idx_done")
	pg.emit(asm.JGE.Imm(asm.R0, int32(f.Len), out))
	pg.emit(storeImm(regState, int16(tmp), 0, asm.DWord))
	pg.emit(asm.Mul.Imm(asm.R0, int32(es)), asm.Add.Imm(asm.R0, int32(f.Offset)))
	pg.emit(asm.Mov.Reg(asm.R3, regCtx), asm.Add.Reg(asm.R3, asm.R0))
	pg.addrOf(asm.R1, regState, tmp)
	pg.emit(asm.Mov.Imm(asm.R2, int32(es)))
	pg.call(asm.FnProbeReadKernel)
	pg.emit(asm.LoadMem(asm.R0, regState, int16(tmp), sizeOf(es)))
	pg.normalize(asm.R0, es, t.Signed)
	pg.emit(asm.Ja.Label(done))
	pg.label(out)
	pg.emit(asm.Mov.Imm(asm.R0, 0))
	pg.label(done)
	return nil
}

// unparenMember strips parentheses from a member expression.
func unparenMember(e ast.Expr) *ast.Member {
	for {
		switch x := e.(type) {
		case *ast.Paren:
			e = x.X
		case *ast.Member:
			return x
		default:
			return nil
		}
	}
}

// uregs loads uregs[i], word i of the user registers of the thread that
// fired the probe. Where they are the program's context (pid probes) they
// are read from it; elsewhere from the registers the thread saved on
// entering the kernel (bpf_task_pt_regs), as DTrace's uregs[] reads them
// on any probe. Both are read only at constant offsets, so a computed
// index picks its word by comparison; an index out of range reads 0.
func (pg *probeGen) uregs(e *ast.Index) error {
	n := providers.NumUserRegs()
	if pg.probe.UserRegs {
		if i, ok := pg.in.ConstInt(e.Keys[0]); ok {
			pg.emit(asm.LoadMem(asm.R0, regCtx, int16(8*i), asm.DWord))
			return nil
		}
		if err := pg.expr(e.Keys[0]); err != nil {
			return err
		}
		done := pg.newLabel("uregs_done")
		pg.emit(asm.Mov.Reg(asm.R1, asm.R0), asm.Mov.Imm(asm.R0, 0))
		for i := 0; i < n; i++ {
			next := pg.newLabel("uregs_next")
			pg.emit(asm.JNE.Imm(asm.R1, int32(i), next),
				asm.LoadMem(asm.R0, regCtx, int16(8*i), asm.DWord),
				asm.Ja.Label(done))
			pg.label(next)
		}
		pg.label(done)
		return nil
	}
	// The saved registers are a BTF pointer, which takes only constant
	// offsets: each index adds its own, then one read serves them all.
	mark := pg.scratch
	defer pg.releaseScratch(mark)
	idx, constIdx := pg.in.ConstInt(e.Keys[0])
	slot := 0
	if !constIdx {
		if err := pg.expr(e.Keys[0]); err != nil {
			return err
		}
		slot = pg.allocScratch(8)
		pg.emit(asm.StoreMem(regState, int16(slot), asm.R0, asm.DWord))
	}
	pg.call(asm.FnGetCurrentTaskBtf)
	pg.emit(asm.Mov.Reg(asm.R1, asm.R0))
	pg.call(asm.FnTaskPtRegs)
	read, zero, done := pg.newLabel("uregs_read"), pg.newLabel("uregs_zero"), pg.newLabel("uregs_done")
	if constIdx {
		pg.emit(asm.Add.Imm(asm.R0, int32(8*idx)))
	} else {
		pg.emit(asm.LoadMem(asm.R1, regState, int16(slot), asm.DWord))
		for i := 0; i < n; i++ {
			next := pg.newLabel("uregs_next")
			pg.emit(asm.JNE.Imm(asm.R1, int32(i), next),
				asm.Add.Imm(asm.R0, int32(8*i)),
				asm.Ja.Label(read))
			pg.label(next)
		}
		pg.emit(asm.Ja.Label(zero))
	}
	pg.label(read)
	if err := pg.readKernel(types.Uint64T); err != nil {
		return err
	}
	if !constIdx {
		pg.emit(asm.Ja.Label(done))
		pg.label(zero)
		pg.emit(asm.Mov.Imm(asm.R0, 0))
		pg.label(done)
	}
	return nil
}
