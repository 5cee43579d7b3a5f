package codegen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/dcompiler/printf"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/check"
	"github.com/dstar-trace/dstar/dcompiler/types"
)

// maxPrint bounds the bytes print( ) records: the start of a larger
// value is printed.
const maxPrint = 2048

// isRecording reports whether call is a data-recording action.
func isRecording(call *ast.Call) bool {
	switch call.Fn {
	case "printf", "trace", "exit", "commit", "discard", "speculate", "system", "tracemem", "print",
		"setopt", "freopen", "ftruncate", "stack", "ustack":
		return true
	}
	if check.SymFuncs[call.Fn] != "" {
		return true
	}
	return check.AggActions[call.Fn]
}

// hasHeaderOnlyAction reports whether a clause calls one of the actions
// that record no data but, being actions, make the clause record its
// firing all the same (the probe line, unless quiet), as in DTrace: raise,
// stop, chill. Where in the clause they are does not matter: a record
// with no data is the same whichever way the clause goes.
func hasHeaderOnlyAction(body []ast.Stmt) bool {
	found := false
	ast.InspectStmts(body, func(e ast.Expr) {
		if c, ok := e.(*ast.Call); ok && (c.Fn == "raise" || c.Fn == "stop" || c.Fn == "chill") {
			found = true
		}
	})
	return found
}

// layoutRecord lays out the record a clause writes, or returns nil when the
// clause records nothing. A clause with no statements records the default
// action: just the probe firing.
func (pg *probeGen) layoutRecord(cl *check.Clause) (*Record, error) {
	rec := &Record{EPID: pg.epid, Probe: pg.probe, Clause: pg.stmtNum, Size: HdrSize}
	recording := len(cl.Body) == 0
	for i, s := range cl.Body {
		es, ok := s.(*ast.ExprStmt)
		if !ok {
			if err := pg.noRecordingIn(s); err != nil {
				return nil, err
			}
			continue
		}
		call, ok := es.X.(*ast.Call)
		if !ok || !isRecording(call) {
			continue
		}
		recording = true
		act := Action{Index: i + 1}
		args := call.Args
		switch call.Fn {
		case "printf", "system", "freopen":
			act.Kind = map[string]ActionKind{"printf": ActPrintf, "system": ActSystem, "freopen": ActFreopen}[call.Fn]
			ts := make([]*types.Type, len(args)-1)
			for j, a := range args[1:] {
				t, err := pg.in.TypeOf(a, pg.env)
				if err != nil {
					return nil, err
				}
				ts[j] = t
			}
			f, err := pg.in.Format(call, ts)
			if err != nil {
				return nil, err
			}
			act.Format = f
			args = args[1:]
		case "trace":
			act.Kind = ActTrace
		case "exit":
			act.Kind = ActExit
		case "commit":
			act.Kind = ActCommit
		case "discard":
			act.Kind = ActDiscard
		case "speculate":
			act.Kind = ActSpeculate
			args = nil
		case "setopt":
			act.Kind = ActSetopt
		case "ftruncate":
			act.Kind = ActFtruncate
		case "print":
			// The address, then as much of what it points at as fits.
			act.Kind = ActPrint
			t, err := pg.in.TypeOf(args[0], pg.env)
			if err != nil {
				return nil, err
			}
			n := min(t.Elem.Size, maxPrint)
			act.Args = append(act.Args, Datum{Off: rec.Size, Size: 8, Type: t}, Datum{Off: rec.Size + 8, Size: n, Type: t.Elem})
			rec.Size += 8 + align8(n)
			args = nil
		case "stack", "ustack":
			act.Kind = ActStack
			t, err := pg.in.TypeOf(call, pg.env)
			if err != nil {
				return nil, err
			}
			act.Args = append(act.Args, Datum{Off: rec.Size, Size: t.Size, Type: t})
			rec.Size += t.Size
			args = nil
		case "sym", "func", "mod", "usym", "ufunc", "umod", "uaddr":
			act.Kind = ActSym
			t, err := pg.in.TypeOf(call, pg.env)
			if err != nil {
				return nil, err
			}
			act.Args = append(act.Args, Datum{Off: rec.Size, Size: t.Size, Type: t})
			rec.Size += t.Size
			args = nil
		case "tracemem":
			act.Kind = ActTraceMem
			n, _ := pg.in.ConstInt(args[1])
			act.Args = append(act.Args, Datum{Off: rec.Size, Size: int(n), Type: types.VoidT})
			rec.Size += align8(int(n) + 1) // room for a string's NUL past n bytes
			args = args[2:]                // the count to print, if given
		default:
			act.Kind = aggActions[call.Fn]
			if call.Fn == "printa" && len(args) > 0 {
				if lit, ok := args[0].(*ast.StrLit); ok {
					f, err := printf.Parse(lit.Val)
					if err != nil {
						return nil, pg.errorf(lit.Pos, "%v", err)
					}
					act.Format = f
					args = args[1:]
				}
			}
			for len(args) > 0 {
				av, ok := args[0].(*ast.AggVar)
				if !ok {
					break
				}
				act.Aggs = append(act.Aggs, av.Name)
				args = args[1:]
			}
		}
		for _, a := range args {
			t, err := pg.in.TypeOf(a, pg.env)
			if err != nil {
				return nil, err
			}
			size := 8
			if t.IsString() || t.Kind == types.Stack || t.Kind == types.Struct {
				size = align8(t.Size)
			}
			act.Args = append(act.Args, Datum{Off: rec.Size, Size: size, Type: t})
			rec.Size += size
		}
		rec.Actions = append(rec.Actions, act)
	}
	if !recording && !hasHeaderOnlyAction(cl.Body) {
		return nil, nil
	}
	pg.out.Records[rec.EPID] = rec
	return rec, nil
}

// noRecordingIn rejects data-recording actions inside if/else, whose
// records would be laid out conditionally.
func (pg *probeGen) noRecordingIn(s ast.Stmt) error {
	ifs, ok := s.(*ast.IfStmt)
	if !ok {
		return nil
	}
	for _, list := range [][]ast.Stmt{ifs.Then, ifs.Else} {
		for _, s := range list {
			if es, ok := s.(*ast.ExprStmt); ok {
				if call, ok := es.X.(*ast.Call); ok && isRecording(call) {
					return pg.errorf(call.Pos, "%s( ) inside if is not yet supported", call.Fn)
				}
			}
			if err := pg.noRecordingIn(s); err != nil {
				return err
			}
		}
	}
	return nil
}

// actionOf returns the recorded action of the clause's call, if any.
func (pg *probeGen) actionOf(call *ast.Call) *Action {
	if pg.record == nil {
		return nil
	}
	for i := range pg.record.Actions {
		if pg.record.Actions[i].Index == pg.actions {
			return &pg.record.Actions[i]
		}
	}
	return nil
}

// stmt generates a top-level statement of a clause.
func (pg *probeGen) stmt(x ast.Expr) error {
	if call, ok := x.(*ast.Call); ok && call.Fn == "speculate" {
		// The clause's record belongs to the speculation.
		if err := pg.expr(call.Args[0]); err != nil {
			return err
		}
		// An ID speculation( ) did not give (0 included), or one since
		// committed or discarded, drops the rest of the clause, as in
		// DTrace. IDs are 32-bit there.
		pg.emit(asm.Mov.Reg32(asm.R0, asm.R0))
		pg.emit(asm.Mov.Reg(asm.R1, asm.R0), asm.Sub.Imm(asm.R1, 1))
		pg.emit(asm.JGE.Imm(asm.R1, int32(pg.opts.NSpec), pg.drop))
		pg.emit(asm.LSh.Imm(asm.R1, 3), asm.Add.Reg(asm.R1, regGlob))
		pg.emit(asm.LoadMem(asm.R1, asm.R1, GlSpecs, asm.DWord))
		pg.emit(asm.JEq.Imm(asm.R1, 0, pg.drop))
		pg.raised[pg.drop] = true
		pg.emit(asm.Or.Imm32(asm.R0, SpecMark))
		pg.emit(asm.StoreMem(regRecord, HdrSpec, asm.R0, asm.Word))
		return nil
	}
	if call, ok := x.(*ast.Call); ok && (call.Fn == "commit" || call.Fn == "discard") {
		return pg.recordingAction(call)
	}
	if call, ok := x.(*ast.Call); ok && isRecording(call) {
		return pg.recordingAction(call)
	}
	if a, ok := x.(*ast.Assign); ok {
		if av, isAgg := check.AggTarget(a.LHS); isAgg {
			return pg.aggregate(a, av)
		}
	}
	return pg.exprAny(x)
}

// recordingAction writes a printf/trace/exit action's data to the record.
func (pg *probeGen) recordingAction(call *ast.Call) error {
	act := pg.actionOf(call)
	if act == nil {
		return pg.errorf(call.Pos, "internal error: %s( ) has no record", call.Fn)
	}
	if call.Fn == "print" {
		if err := pg.expr(call.Args[0]); err != nil {
			return err
		}
		addr, val := act.Args[0], act.Args[1]
		off, back := pg.recWindow(addr.Off, 8)
		pg.emit(asm.StoreMem(regRecord, int16(off), asm.R0, asm.DWord))
		back()
		pg.allocaAddr(asm.R3, asm.R0, asm.R1, val.Size, asm.R2, "")
		pg.addrOf(asm.R1, regRecord, val.Off)
		pg.emit(asm.Mov.Imm(asm.R2, int32(val.Size)))
		pg.call(asm.FnProbeReadKernel) // on failure it zero-fills: nothing to print
		return nil
	}
	if call.Fn == "stack" || call.Fn == "ustack" {
		off, back := pg.recWindow(act.Args[0].Off, act.Args[0].Size)
		err := pg.stackInto(act.Args[0].Type, regRecord, off)
		back()
		return err
	}
	if check.SymFuncs[call.Fn] != "" {
		off, back := pg.recWindow(act.Args[0].Off, act.Args[0].Size)
		defer back()
		return pg.symInto(act.Args[0].Type, call, regRecord, off)
	}
	if call.Fn == "tracemem" {
		d := act.Args[0]
		addr, str := pg.bytesAddr(call.Args[0])
		if str {
			// A string value (dtrace takes any type here): its bytes.
			off, back := pg.recWindow(d.Off, d.Size+1)
			if err := pg.strInto(addr, regRecord, off, d.Size+1); err != nil {
				return err
			}
			back()
			return pg.traceMemCount(call, act)
		}
		// Kernel memory, or the process's when that fails.
		if err := pg.expr(addr); err != nil {
			return err
		}
		pg.allocaAddr(asm.R3, asm.R0, asm.R1, d.Size, asm.R2, "")
		src, err := pg.push()
		if err != nil {
			return pg.errorf(call.Pos, "%v", err)
		}
		pg.depth--
		pg.addrOf(asm.R1, regRecord, d.Off)
		pg.emit(asm.Mov.Imm(asm.R2, int32(d.Size)))
		pg.call(asm.FnProbeReadKernel)
		done := pg.newLabel("tracemem_done")
		pg.emit(asm.JEq.Imm(asm.R0, 0, done))
		pg.addrOf(asm.R1, regRecord, d.Off)
		pg.emit(asm.Mov.Imm(asm.R2, int32(d.Size)))
		pg.emit(asm.LoadMem(asm.R3, asm.RFP, src, asm.DWord))
		pg.call(asm.FnProbeReadUser)
		pg.label(done)
		return pg.traceMemCount(call, act)
	}
	args := call.Args
	if call.Fn == "printf" || call.Fn == "system" || call.Fn == "freopen" {
		args = args[1:]
	}
	if check.AggActions[call.Fn] {
		// What follows the format and the aggregations: trunc's and
		// normalize's number.
		args = args[len(args)-len(act.Args):]
	}
	for i, a := range args {
		d := act.Args[i]
		mark := pg.scratch
		if d.Type.Kind == types.Stack {
			off, back := pg.recWindow(d.Off, d.Size)
			err := pg.stackInto(d.Type, regRecord, off) // printf's %k
			back()
			if err != nil {
				return err
			}
		} else if d.Type.IsString() {
			off, back := pg.recWindow(d.Off, d.Type.Size)
			if err := pg.strInto(a, regRecord, off, d.Type.Size); err != nil {
				return err
			}
			back()
		} else if d.Type.Kind == types.Struct {
			off, back := pg.recWindow(d.Off, d.Size)
			if err := pg.structInto(a, d.Type, regRecord, off); err != nil {
				return err
			}
			back()
		} else {
			if err := pg.expr(a); err != nil {
				return err
			}
			off, back := pg.recWindow(d.Off, 8)
			pg.emit(asm.StoreMem(regRecord, int16(off), asm.R0, asm.DWord))
			back()
		}
		// The argument is in the record now: the scratch its temporaries
		// took serves the next one, unless something in it lives on.
		if !keepsScratch(a) {
			pg.releaseScratch(mark)
		}
	}
	if call.Fn == "commit" || call.Fn == "discard" {
		pg.freeSpeculation(act.Args[0].Off)
	}
	if call.Fn == "exit" {
		// No probe fires after exit(); END still will.
		pg.emit(storeImm(regGlob, GlActivity, Draining, asm.DWord))
		pg.mayExit = true
	}
	return nil
}

// pointsIntoScratch reports whether e may leave a pointer to scratch in a
// variable: alloca( ) and copyin( ) memory. (Values, strings included, are
// copied into variables.)
func pointsIntoScratch(e ast.Expr) bool {
	points := false
	ast.Inspect(e, func(x ast.Expr) {
		if c, ok := x.(*ast.Call); ok && (c.Fn == "alloca" || c.Fn == "copyin") {
			points = true
		}
	})
	return points
}

// freeSpeculation gives the speculation whose number is in the record at
// off back to speculation( ) at once, as DTrace does when a buffer is
// committed or discarded on the CPU that filled it: a speculation per
// system call works with one buffer. The record is reserved, so whatever
// takes the buffer next comes after this commit in the ring buffer, where
// the consumer settles the speculation's records.
func (pg *probeGen) freeSpeculation(off int) {
	done, bad := pg.newLabel("spec_freed"), pg.newLabel("spec_bad")
	pg.emit(asm.LoadMem(asm.R1, regRecord, int16(off), asm.DWord))
	pg.emit(asm.Mov.Reg32(asm.R1, asm.R1)) // IDs are 32-bit in DTrace
	pg.emit(asm.JEq.Imm(asm.R1, 0, done))  // 0: nothing to free
	pg.emit(asm.Sub.Imm(asm.R1, 1))
	// An ID past nspec is no speculation's: an illegal operation, as in
	// DTrace.
	pg.emit(asm.JGE.Imm(asm.R1, int32(pg.opts.NSpec), bad))
	pg.emit(asm.LSh.Imm(asm.R1, 3))
	pg.emit(asm.Add.Reg(asm.R1, regGlob))
	pg.emit(storeImm(asm.R1, GlSpecs, 0, asm.DWord))
	pg.emit(asm.Ja.Label(done))
	pg.label(bad)
	pg.raise(FaultIllOp, asm.R1, false)
	pg.label(done)
}

// bytesAddr is where an expression's bytes are, for tracemem( ) and casts
// to a scalar: a char array member, which D reads as a string, is its
// memory (&x->m[0]); another string (str) has only a value.
func (pg *probeGen) bytesAddr(e ast.Expr) (addr ast.Expr, str bool) {
	t, err := pg.typeOf(e)
	if err != nil || !t.IsString() {
		return e, false
	}
	// A char array in memory, a struct's member or a declared global
	// (uint8_t a[20]), is its bytes from &x[0], NULs and all.
	x := check.Unparen(e)
	if _, ok := x.(*ast.Ident); ok || isMember(x) {
		first := &ast.Unary{Pos: x.Start(), Op: "&", X: &ast.Index{Pos: x.Start(), X: x, Keys: []ast.Expr{&ast.IntLit{Pos: x.Start(), Text: "0"}}}}
		if pt, err := pg.typeOf(first); err == nil && pt.Kind == types.Pointer {
			return first, false
		}
	}
	return e, true
}

func isMember(x ast.Expr) bool {
	_, ok := x.(*ast.Member)
	return ok
}

// traceMemCount records tracemem( )'s third argument, the bytes to print.
func (pg *probeGen) traceMemCount(call *ast.Call, act *Action) error {
	if len(call.Args) == 3 {
		if err := pg.expr(call.Args[2]); err != nil {
			return err
		}
		off, back := pg.recWindow(act.Args[1].Off, 8)
		pg.emit(asm.StoreMem(regRecord, int16(off), asm.R0, asm.DWord))
		back()
	}
	return nil
}

// keepsScratch reports whether scratch an expression takes may be used
// after it: alloca( ) and copyin( ) memory, and assignments, which may
// keep a pointer to it.
func keepsScratch(e ast.Expr) bool {
	keeps := false
	ast.Inspect(e, func(x ast.Expr) {
		switch x := x.(type) {
		case *ast.Assign:
			keeps = true
		case *ast.Call:
			keeps = keeps || x.Fn == "alloca" || x.Fn == "copyin"
		}
	})
	return keeps
}
