package codegen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/check"
	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/providers"
)

// strInto writes string expression e, NUL-terminated and at most size
// bytes, to base+off. base must be a callee-saved register (R7, R8, R9).
func (pg *probeGen) strInto(e ast.Expr, base asm.Register, off, size int) error {
	if t, err := pg.typeOf(e); err == nil && (t.Kind == types.Pointer || t.Kind == types.Int) {
		return pg.pointedString(e, base, off, size)
	}
	switch e := e.(type) {
	case *ast.Paren:
		return pg.strInto(e.X, base, off, size)
	case *ast.StrLit:
		pg.literal(e.Val, base, off, size)
		return nil
	case *ast.MacroVar:
		_, s, _, err := pg.in.Macro(e)
		if err != nil {
			return err
		}
		pg.literal(s, base, off, size)
		return nil
	case *ast.Ident:
		if il := pg.in.InlineOf(e.Name); il != nil {
			return pg.strInto(il.Init, base, off, size)
		}
		if r, ok := check.RefOf(e); ok && pg.varOf(r) != nil {
			return pg.refStrInto(r, base, off, size)
		}
		switch e.Name {
		case "execname":
			pg.addrOf(asm.R1, base, off)
			pg.emit(asm.Mov.Imm(asm.R2, int32(min(size, 16))))
			pg.call(asm.FnGetCurrentComm)
			return nil
		case "probeprov", "probemod", "probefunc", "probename":
			pg.literal(check.ProbeString(e.Name, pg.probe), base, off, size)
			return nil
		case "cwd", "root":
			return pg.kernelPath(check.PathCall(check.DirPath(e)), base, off, size)
		}
	case *ast.Cond:
		return pg.strCond(e, func(x ast.Expr) error { return pg.strInto(x, base, off, size) })
	case *ast.Call:
		if e.Fn == "copyinstr" {
			return pg.copyinstr(e, base, off, size)
		}
		if e.Fn == check.ArgsFn {
			return pg.userArgs(e, base, off, size)
		}
		if e.Fn == check.PathFn {
			return pg.kernelPath(e, base, off, size)
		}
		if e.Fn == "d_path" {
			return pg.kernelPath(check.PathCall(e), base, off, size)
		}
		return pg.subrStr(e, base, off, size, false)
	case *ast.Unary:
		if e.Op == "*" {
			// *p of a string pointer: the string at p.
			return pg.pointedString(e.X, base, off, size)
		}
		if e.Op == "stringof" {
			t, err := pg.typeOf(e.X)
			if err != nil {
				return err
			}
			if t.IsString() {
				return pg.strInto(e.X, base, off, size)
			}
			return pg.pointedString(e.X, base, off, size)
		}
	case *ast.Cast:
		// (string)p: the string at p, as stringof(p).
		t, err := pg.typeOf(e.X)
		if err != nil {
			return err
		}
		if t.IsString() {
			return pg.strInto(e.X, base, off, size)
		}
		if t.IsScalar() {
			return pg.pointedString(e.X, base, off, size)
		}
	case *ast.Member:
		if r, ok := check.RefOf(e); ok {
			return pg.refStrInto(r, base, off, size)
		}
		if id, ok := e.X.(*ast.Ident); ok && id.Name == "args" {
			return pg.fieldStr(e, base, off, size)
		}
		t, err := pg.typeOf(e)
		if err != nil {
			return err
		}
		return pg.kernelString(e, base, off, size, t)
	case *ast.Index:
		if r, ok := check.RefOf(e); ok {
			return pg.refStrInto(r, base, off, size)
		}
		if id, ok := e.X.(*ast.Ident); ok && id.Name == "args" && len(e.Keys) == 1 {
			n, _ := pg.in.ConstInt(e.Keys[0])
			if m := check.ArgsIndexMember(e, pg.probe, int(n)); m != nil {
				return pg.fieldStr(m, base, off, size)
			}
		}
	case *ast.Binary:
		return pg.strOffset(e, base, off, size)
	case *ast.Assign:
		// (x = s) as a string: the assignment, then x.
		if r, ok := check.RefOf(e.LHS); ok && e.Op == "=" {
			if err := pg.assign(e); err != nil {
				return err
			}
			return pg.refStrInto(r, base, off, size)
		}
	}
	return pg.errorf(e.Start(), "string expression is not supported here")
}

// nullString marks a NULL string where strings are kept by value: a
// NUL and then 0x7f, as Oracle's DT_NULL_STRING, which no string stored
// through strIntoOrNull or refStr leaves behind an empty one.
const nullString = 0x7f00

// nullStr writes the NULL marker at base+off when nullable, and otherwise
// faults as a read of address 0 does; it reports whether the code falls
// through (a jump after a fault would be unreachable).
func (pg *probeGen) nullStr(base asm.Register, off, size int, nullable bool) bool {
	if nullable && size >= 2 {
		pg.emit(storeImm(base, int16(off), nullString, asm.Half))
		return true
	}
	pg.raise(FaultBadAddr, asm.R0, false)
	return false
}

// strIntoOrNull is strInto where a NULL string is a value, not a fault:
// the right side of an assignment to a string variable, an operand of a
// comparison. It writes the NULL marker for NULL.
func (pg *probeGen) strIntoOrNull(e ast.Expr, base asm.Register, off, size int) error {
	if n, ok := pg.in.ConstInt(e); ok && n == 0 {
		pg.nullStr(base, off, size, true)
		return nil
	}
	switch x := e.(type) {
	case *ast.Paren:
		return pg.strIntoOrNull(x.X, base, off, size)
	case *ast.Cond:
		return pg.strCond(x, func(y ast.Expr) error { return pg.strIntoOrNull(y, base, off, size) })
	case *ast.Ident, *ast.Member, *ast.Index:
		if id, ok := x.(*ast.Ident); ok && pg.in.InlineOf(id.Name) != nil {
			break
		}
		if t, err := pg.typeOf(e); err == nil && t.IsString() {
			if r, ok := check.RefOf(e); ok && pg.varOf(r) != nil {
				return pg.refStr(r, base, off, size, true)
			}
		}
	case *ast.Call:
		switch x.Fn {
		case "strchr", "strrchr", "strstr", "strtok":
			return pg.subrStr(x, base, off, size, true)
		}
	}
	if err := pg.strInto(e, base, off, size); err != nil {
		return err
	}
	if size >= 2 {
		// An empty string must not read as the NULL marker.
		nonEmpty := pg.newLabel("str_nonempty")
		pg.emit(asm.LoadMem(asm.R1, base, int16(off), asm.Byte))
		pg.emit(asm.JNE.Imm(asm.R1, 0, nonEmpty))
		pg.emit(storeImm(base, int16(off+1), 0, asm.Byte))
		pg.label(nonEmpty)
	}
	return nil
}

// strOffset copies s + i (or i + s, or s - i): s from its character i
// on, "" for an i outside s's buffer.
func (pg *probeGen) strOffset(e *ast.Binary, base asm.Register, off, size int) error {
	xt, err := pg.typeOf(e.X)
	if err != nil {
		return err
	}
	yt, err := pg.typeOf(e.Y)
	if err != nil {
		return err
	}
	if !check.StringOffset(e, xt, yt) {
		return pg.errorf(e.Start(), "string expression is not supported here")
	}
	s, i, st := e.X, e.Y, xt
	if !xt.IsString() {
		s, i, st = e.Y, e.X, yt
	}
	tmp := pg.allocScratch(st.Size)
	if err := pg.strInto(s, regState, tmp, st.Size); err != nil {
		return err
	}
	if err := pg.expr(i); err != nil {
		return err
	}
	if e.Op == "-" {
		pg.emit(asm.Neg.Imm(asm.R0, 0))
	}
	in, done := pg.newLabel("stroff_in"), pg.newLabel("stroff_done")
	// Unsigned: a negative offset is outside too.
	pg.emit(asm.JLT.Imm(asm.R0, int32(st.Size), in))
	pg.emit(storeImm(base, int16(off), 0, asm.Byte), asm.Ja.Label(done))
	pg.label(in)
	pg.addrOf(asm.R3, regState, tmp)
	pg.emit(asm.Add.Reg(asm.R3, asm.R0))
	pg.readStr(base, off, min(size, st.Size), asm.FnProbeReadKernelStr)
	pg.label(done)
	return nil
}

// literal stores s (cut to size-1 bytes) and its NUL.
func (pg *probeGen) literal(s string, base asm.Register, off, size int) {
	if len(s) > size-1 {
		s = s[:size-1]
	}
	b := append([]byte(s), 0)
	pg.bytes(base, off, b)
}

// pointedString copies the string at the kernel address e gives (a char
// *, or NULL) to base+off: an address that cannot be read is an invalid
// address fault, as DTrace's string functions give for it.
func (pg *probeGen) pointedString(e ast.Expr, base asm.Register, off, size int) error {
	if err := pg.expr(e); err != nil {
		return err
	}
	addr, err := pg.push()
	if err != nil {
		return pg.errorf(e.Start(), "%v", err)
	}
	defer func() { pg.depth-- }()
	pg.allocaAddr(asm.R3, asm.R0, asm.R1, 1, asm.R2, "")
	pg.readStr(base, off, size, asm.FnProbeReadKernelStr)
	pg.emit(asm.JSGT.Imm(asm.R0, 0, pg.labelNext("str_read")))
	pg.emit(asm.LoadMem(asm.R1, asm.RFP, addr, asm.DWord))
	pg.raise(FaultBadAddr, asm.R1, true)
	pg.label(pg.lastLabel)
	return nil
}

// readStr calls a probe-read-str helper: dst base+off, size, src in R3.
func (pg *probeGen) readStr(base asm.Register, off, size int, fn asm.BuiltinFunc) {
	pg.addrOf(asm.R1, base, off)
	pg.emit(asm.Mov.Imm(asm.R2, int32(size)))
	pg.call(fn)
}

// userArgs is the D library's __dstar_args(addr, len): len bytes (at most
// PRARGSZ-1) of the current process's memory at addr, where the kernel
// keeps its NUL-separated arguments, read as one string with the NULs
// between arguments turned into spaces, as ps(1) shows them. A bad
// address reads as "": the library asks only for the current process's
// own arguments, which may be paged out.
func (pg *probeGen) userArgs(e *ast.Call, base asm.Register, off, size int) error {
	n := min(size, check.PRArgSz)
	pg.bytes(base, off, make([]byte, n))
	if err := pg.expr(e.Args[1]); err != nil {
		return err
	}
	if _, err := pg.push(); err != nil {
		return pg.errorf(e.Pos, "%v", err)
	}
	if err := pg.expr(e.Args[0]); err != nil {
		return err
	}
	pg.emit(asm.Mov.Reg(asm.R3, asm.R0))
	pg.pop(asm.R2)
	short, read := pg.newLabel("args_short"), pg.newLabel("args_read")
	pg.emit(
		asm.JSGE.Imm(asm.R2, 0, short),
		asm.Mov.Imm(asm.R2, 0),
		asm.JLE.Imm(asm.R2, int32(n-1), read).WithSymbol(short),
		asm.Mov.Imm(asm.R2, int32(n-1)),
	)
	pg.label(read)
	pg.addrOf(asm.R1, base, off)
	pg.call(asm.FnProbeReadUser)
	// A NUL with more text after it separates two arguments.
	for i := 0; i < n-1; i++ {
		next := pg.newLabel("args_next")
		pg.emit(
			asm.LoadMem(asm.R1, base, int16(off+i), asm.Byte),
			asm.JNE.Imm(asm.R1, 0, next),
			asm.LoadMem(asm.R1, base, int16(off+i+1), asm.Byte),
			asm.JEq.Imm(asm.R1, 0, next),
			storeImm(base, int16(off+i), ' ', asm.Byte),
		)
		pg.label(next)
	}
	return nil
}

// copyinstr copies a user-space string, faulting on a bad address.
func (pg *probeGen) copyinstr(e *ast.Call, base asm.Register, off, size int) error {
	if len(e.Args) == 2 {
		// copyinstr(addr, maxlen) copies, as Oracle's does, at most
		// min(maxlen, strsize) bytes, the NUL included.
		size = min(size, pg.in.Opts.StrSize-1)
		if lit, ok := e.Args[1].(*ast.IntLit); ok && lit.Val > 0 && int(lit.Val) < size {
			size = int(lit.Val)
		}
	}
	if err := pg.expr(e.Args[0]); err != nil {
		return err
	}
	tmp, err := pg.push()
	if err != nil {
		return pg.errorf(e.Pos, "%v", err)
	}
	pg.emit(asm.Mov.Reg(asm.R3, asm.R0))
	pg.readStr(base, off, size, asm.FnProbeReadUserStr)
	ok := pg.newLabel("copyin_ok")
	pg.emit(asm.JSGE.Imm(asm.R0, 0, ok))
	pg.emit(asm.LoadMem(asm.R1, asm.RFP, tmp, asm.DWord))
	pg.depth--
	pg.raise(FaultBadAddr, asm.R1, true)
	pg.depth++
	pg.label(ok)
	pg.depth--
	return nil
}

// fieldStr copies a string tracepoint field (char[N] or __data_loc).
func (pg *probeGen) fieldStr(e *ast.Member, base asm.Register, off, size int) error {
	f := check.ArgField(pg.probe, e.Name)
	if f == nil {
		return pg.errorf(e.Pos, "args->%s is not available on %s", e.Name, pg.probe)
	}
	switch f.Kind {
	case providers.ArgArray:
		pg.addrOf(asm.R3, regCtx, f.Offset)
		pg.readStr(base, off, min(size, f.Size+1), asm.FnProbeReadKernelStr)
	case providers.ArgDataLoc:
		pg.emit(asm.LoadMem(asm.R3, regCtx, int16(f.Offset), asm.Word))
		pg.emit(asm.And.Imm(asm.R3, 0xffff))
		pg.emit(asm.Add.Reg(asm.R3, regCtx))
		pg.readStr(base, off, size, asm.FnProbeReadKernelStr)
	case providers.ArgPointer:
		pg.loadField(asm.R3, f, 8)
		pg.readStr(base, off, size, asm.FnProbeReadKernelStr)
	default:
		return pg.errorf(e.Pos, "args->%s is not a string", e.Name)
	}
	return nil
}

// strCompare compares two strings into R0 (1 or 0), byte by byte up to
// the shorter buffer, stopping at the first NUL. NULL, the string
// pointer 0 in DTrace, is less than any string and equal to itself.
func (pg *probeGen) strCompare(e *ast.Binary) error {
	xt, err := pg.typeOf(e.X)
	if err != nil {
		return err
	}
	yt, err := pg.typeOf(e.Y)
	if err != nil {
		return err
	}
	// A NULL operand takes the other's size.
	if !xt.IsString() {
		xt = yt
	} else if !yt.IsString() {
		yt = xt
	}
	// The operands are dead once compared: their scratch serves the
	// next expression.
	if mark := pg.scratch; !keepsScratch(e) {
		defer pg.releaseScratch(mark)
	}
	xo := pg.allocScratch(xt.Size)
	if err := pg.strIntoOrNull(e.X, regState, xo, xt.Size); err != nil {
		return err
	}
	// A literal on the right is compared against immediates.
	lit, isLit := literalOf(pg, e.Y)
	yo := 0
	if !isLit {
		yo = pg.allocScratch(yt.Size)
		if err := pg.strIntoOrNull(e.Y, regState, yo, yt.Size); err != nil {
			return err
		}
	}
	nulls, strs, done := pg.newLabel("cmp_nulls"), pg.newLabel("cmp_strs"), pg.newLabel("cmp_done")
	pg.emit(asm.LoadMem(asm.R4, regState, int16(xo), asm.Half))
	if isLit {
		pg.emit(asm.JNE.Imm(asm.R4, nullString, strs))
		pg.emit(asm.Mov.Imm(asm.R1, -1))
	} else {
		pg.emit(asm.LoadMem(asm.R5, regState, int16(yo), asm.Half))
		pg.emit(asm.JEq.Imm(asm.R4, nullString, nulls))
		pg.emit(asm.JNE.Imm(asm.R5, nullString, strs))
		pg.emit(asm.Mov.Imm(asm.R1, 1))
	}
	pg.emit(asm.Ja.Label(done))
	if !isLit {
		pg.label(nulls)
		pg.emit(asm.Mov.Imm(asm.R1, 0))
		pg.emit(asm.JEq.Imm(asm.R5, nullString, done))
		pg.emit(asm.Mov.Imm(asm.R1, -1))
		pg.emit(asm.Ja.Label(done))
	}
	pg.label(strs)
	n := min(xt.Size, yt.Size)
	if isLit {
		n = min(xt.Size, len(lit)+1)
	}
	less, greater, equal := pg.newLabel("lt"), pg.newLabel("gt"), pg.newLabel("eq")
	if !isLit {
		// Two strings known only at run time: a loop, whose ways out
		// the verifier explores one iteration at a time, where an
		// unrolled compare would leave hundreds of branches pending.
		pg.emit(asm.Mov.Imm(asm.R1, 0))
		pg.loop(asm.R2, 0, int32(n), func(brk string) {
			notLess, notGreater := pg.newLabel("cmp_nlt"), pg.newLabel("cmp_ngt")
			pg.addrOf(asm.R3, regState, xo)
			pg.emit(asm.Add.Reg(asm.R3, asm.R2), asm.LoadMem(asm.R4, asm.R3, 0, asm.Byte))
			pg.addrOf(asm.R3, regState, yo)
			pg.emit(asm.Add.Reg(asm.R3, asm.R2), asm.LoadMem(asm.R5, asm.R3, 0, asm.Byte))
			pg.emit(asm.JGE.Reg(asm.R4, asm.R5, notLess), asm.Mov.Imm(asm.R1, -1), asm.Ja.Label(brk))
			pg.label(notLess)
			pg.emit(asm.JLE.Reg(asm.R4, asm.R5, notGreater), asm.Mov.Imm(asm.R1, 1), asm.Ja.Label(brk))
			pg.label(notGreater)
			pg.emit(asm.JEq.Imm(asm.R4, 0, brk))
		})
		pg.emit(asm.Ja.Label(done))
	}
	jumpedEqual := false
	for i := 0; isLit && i < n; i++ {
		jumpedEqual = false
		pg.emit(asm.LoadMem(asm.R1, regState, int16(xo+i), asm.Byte))
		var b int32
		if isLit {
			if i < len(lit) {
				b = int32(lit[i])
			}
			pg.emit(asm.JLT.Imm(asm.R1, b, less))
			pg.emit(asm.JGT.Imm(asm.R1, b, greater))
			if b == 0 {
				pg.emit(asm.Ja.Label(equal))
				jumpedEqual = true
			}
			continue
		}
		pg.emit(asm.LoadMem(asm.R2, regState, int16(yo+i), asm.Byte))
		pg.emit(asm.JLT.Reg(asm.R1, asm.R2, less))
		pg.emit(asm.JGT.Reg(asm.R1, asm.R2, greater))
		pg.emit(asm.JEq.Imm(asm.R1, 0, equal))
	}
	if isLit {
		if !jumpedEqual {
			pg.emit(asm.Ja.Label(equal))
		}
		// R1 = -1, 0 or 1 as strcmp, then the comparison against zero.
		pg.label(less)
		pg.emit(asm.Mov.Imm(asm.R1, -1), asm.Ja.Label(done))
		pg.label(greater)
		pg.emit(asm.Mov.Imm(asm.R1, 1), asm.Ja.Label(done))
		pg.label(equal)
		pg.emit(asm.Mov.Imm(asm.R1, 0))
	}
	pg.label(done)
	yes := pg.newLabel("true")
	pg.emit(asm.Mov.Imm(asm.R0, 1))
	pg.emit(compareJumps[e.Op][1].Imm(asm.R1, 0, yes))
	pg.emit(asm.Mov.Imm(asm.R0, 0))
	pg.label(yes)
	return nil
}

// literalOf returns the constant string value of e, if it has one.
func literalOf(pg *probeGen, e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.Paren:
		return literalOf(pg, e.X)
	case *ast.StrLit:
		return e.Val, true
	case *ast.MacroVar:
		_, s, isStr, err := pg.in.Macro(e)
		return s, isStr && err == nil
	case *ast.Ident:
		switch e.Name {
		case "probeprov", "probemod", "probefunc", "probename":
			return check.ProbeString(e.Name, pg.probe), true
		}
	}
	return "", false
}

var _ = types.IntT

// strCond stores the string of whichever branch of c its condition picks,
// with into.
func (pg *probeGen) strCond(c *ast.Cond, into func(ast.Expr) error) error {
	f, end := pg.newLabel("scond_false"), pg.newLabel("scond_end")
	if err := pg.expr(c.C); err != nil {
		return err
	}
	pg.emit(asm.JEq.Imm(asm.R0, 0, f))
	if err := into(c.T); err != nil {
		return err
	}
	pg.emit(asm.Ja.Label(end))
	pg.label(f)
	if err := into(c.F); err != nil {
		return err
	}
	pg.label(end)
	return nil
}
