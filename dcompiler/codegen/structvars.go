package codegen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/check"
	"github.com/dstar-trace/dstar/dcompiler/types"
)

// Struct-valued variables live in place: a global in the globals value
// (with the arrays), a clause-local in the state, a thread-local as its
// map's value. Their members are read as kernel struct members are, by
// address through probe_read; stores and whole-value copies turn the
// address back into a pointer the verifier accepts, checked to be inside
// the variable (varMemPtr).

// structAddr leaves in R0, as a number, the address of the struct value
// e stands for: a variable, a member of one, a kernel struct member, *p,
// or an element of a global array.
func (pg *probeGen) structAddr(e ast.Expr) error {
	switch x := check.Unparen(e).(type) {
	case *ast.Ident, *ast.Member:
		// An inline of a struct type stands for its value.
		if id, ok := x.(*ast.Ident); ok && pg.in.InlineOf(id.Name) != nil {
			return pg.structAddr(pg.in.InlineOf(id.Name).Init)
		}
		if r, ok := check.RefOf(x); ok {
			return pg.varAddr(r)
		}
		if m, ok := x.(*ast.Member); ok {
			return pg.kernelAddr(m)
		}
	case *ast.Unary:
		if x.Op == "*" {
			return pg.expr(x.X)
		}
	case *ast.Index:
		if v, ix := pg.arrayIndexOf(x); v != nil {
			return pg.arrayAddr(v, ix.Keys[0], true)
		}
		if _, at, _ := pg.in.MemberArray(x, pg.env); at != nil {
			return pg.memberElemAddr(x)
		}
		if r, ok := check.RefOf(x); ok {
			return pg.varAddr(r) // an associative array's element
		}
	case *ast.Assign:
		// (x = y).m and a = b = c: the value assigned is the left's.
		if err := pg.assign(x); err != nil {
			return err
		}
		return pg.structAddr(x.LHS)
	}
	return pg.errorf(e.Start(), "operator . cannot be applied to this expression yet")
}

// varAddr leaves in R0, as a number, the address of struct variable r.
// A thread-local the thread has not assigned, or an associative array's
// element not there, reads as zeros.
func (pg *probeGen) varAddr(r check.VarRef) error {
	v := pg.varOf(r)
	switch {
	case v.Map == "" && v.Scope == check.ScopeGlobal:
		pg.globalsAddr(asm.R0)
	case v.Map == "":
		pg.emit(asm.StoreMem(regState, stSelf, regState, asm.DWord))
		pg.emit(asm.LoadMem(asm.R0, regState, stSelf, asm.DWord))
	default:
		if _, err := pg.lookupElem(v, r); err != nil {
			return err
		}
		none, done := pg.newLabel("struct_unset"), pg.newLabel("struct_addr")
		pg.emit(asm.JEq.Imm(asm.R0, 0, none))
		// Through map memory the pointer comes back as a number.
		slot := pg.allocScratch(8)
		pg.emit(asm.StoreMem(regState, int16(slot), asm.R0, asm.DWord))
		pg.emit(asm.LoadMem(asm.R0, regState, int16(slot), asm.DWord))
		pg.emit(asm.Ja.Label(done))
		pg.label(none)
		pg.globalsAddr(asm.R0)
		pg.emit(asm.Add.Imm(asm.R0, int32(pg.zeroOff)))
		pg.label(done)
		return nil
	}
	if v.Off != 0 {
		pg.emit(asm.Add.Imm(asm.R0, int32(v.Off)))
	}
	return nil
}

// ensureElem gives dynamic struct variable r (a thread-local, an
// associative array's element) an element of zeros when it has none, so
// that a store to one of its members has a place. A full map leaves it
// without: varMemPtr counts the drop.
func (pg *probeGen) ensureElem(r check.VarRef) error {
	v := pg.varOf(r)
	if v.Map == "" {
		return nil
	}
	keyOff, err := pg.lookupElem(v, r)
	if err != nil {
		return err
	}
	done := pg.newLabel("elem_there")
	pg.emit(asm.JNE.Imm(asm.R0, 0, done))
	pg.mapPtr(asm.R1, v.Map)
	pg.addrOf(asm.R2, regState, keyOff)
	pg.addrOf(asm.R3, regGlob, pg.zeroOff)
	pg.emit(asm.Mov.Imm(asm.R4, 1)) // BPF_NOEXIST
	pg.call(asm.FnMapUpdateElem)
	pg.label(done)
	return nil
}

// varMemPtr turns the address stored at state+slot, which must be of n
// bytes inside struct variable r, into a pointer left in R1; any other
// address is an invalid address fault. A thread-local without an element
// (its map full) counts a drop and jumps to the label returned, which the
// caller places after its store.
func (pg *probeGen) varMemPtr(r check.VarRef, slot, n int) (skip string, err error) {
	v := pg.varOf(r)
	base := pg.allocScratch(8)
	var ptr int16
	switch {
	case v.Map != "":
		skip = pg.newLabel("struct_drop")
		if _, err := pg.lookupElem(v, r); err != nil {
			return "", err
		}
		there := pg.newLabel("struct_elem")
		pg.emit(asm.JNE.Imm(asm.R0, 0, there))
		pg.count(StDynDrops)
		pg.emit(asm.Ja.Label(skip))
		pg.label(there)
		// The stack keeps the pointer a pointer; map memory gives back
		// its number.
		if ptr, err = pg.push(); err != nil {
			return "", pg.errorf(r.Pos, "%v", err)
		}
		pg.emit(asm.StoreMem(regState, int16(base), asm.R0, asm.DWord))
	default:
		if err := pg.varAddr(r); err != nil {
			return "", err
		}
		pg.emit(asm.Add.Imm(asm.R0, -int32(v.Off)))
		pg.emit(asm.StoreMem(regState, int16(base), asm.R0, asm.DWord))
	}
	bad, ok := pg.newLabel("var_mem_bad"), pg.newLabel("var_mem_ok")
	lo, hi := v.Off, v.Off+v.Type.Size-n
	if v.Map != "" {
		lo, hi = 0, v.Type.Size-n
	}
	pg.emit(asm.LoadMem(asm.R0, regState, int16(slot), asm.DWord))
	pg.emit(asm.LoadMem(asm.R1, regState, int16(base), asm.DWord))
	pg.emit(asm.Sub.Reg(asm.R0, asm.R1))
	pg.emit(asm.JSLT.Imm(asm.R0, int32(lo), bad), asm.JSGT.Imm(asm.R0, int32(hi), bad), asm.Ja.Label(ok))
	pg.label(bad)
	pg.emit(asm.LoadMem(asm.R1, regState, int16(slot), asm.DWord))
	pg.raise(FaultBadAddr, asm.R1, true)
	pg.label(ok)
	switch {
	case v.Map != "":
		pg.emit(asm.LoadMem(asm.R1, asm.RFP, ptr, asm.DWord))
		pg.depth--
	case v.Scope == check.ScopeClause:
		pg.emit(asm.Mov.Reg(asm.R1, regState))
	default:
		pg.emit(asm.Mov.Reg(asm.R1, regGlob))
	}
	pg.emit(asm.Add.Reg(asm.R1, asm.R0))
	return skip, nil
}

// assignStruct copies the struct value e.RHS stands for into e.LHS, a
// struct variable, a struct member of one, or an element of a global
// array of structs; R0 is left 0.
func (pg *probeGen) assignStruct(e *ast.Assign) error {
	t, err := pg.typeOf(e.LHS)
	if err != nil {
		return err
	}
	if pg.in.DeletesStruct(e) {
		// A dynamic variable assigned 0 is freed.
		r, _ := check.RefOf(e.LHS)
		v := pg.varOf(r)
		keyOff, err := pg.elemKey(v, r)
		if err != nil {
			return err
		}
		pg.deleteElem(v, keyOff)
		pg.emit(asm.Mov.Imm(asm.R0, 0))
		return nil
	}
	r, _, inVar := pg.in.StructRoot(e.LHS)
	if v, _ := pg.arrayIndexOf(e.LHS); !inVar && v == nil {
		return pg.errorf(e.LHS.Start(), "operator = can assign a struct only to a variable, a member of one or an element of a global array")
	}
	slots := pg.allocScratch(16) // the source's address, then the target's
	if err := pg.structAddr(e.RHS); err != nil {
		return err
	}
	pg.emit(asm.StoreMem(regState, int16(slots), asm.R0, asm.DWord))
	if inVar {
		if err := pg.ensureElem(r); err != nil {
			return err
		}
	}
	if err := pg.structAddr(e.LHS); err != nil {
		return err
	}
	pg.emit(asm.StoreMem(regState, int16(slots+8), asm.R0, asm.DWord))
	skip := ""
	if inVar {
		if skip, err = pg.varMemPtr(r, slots+8, t.Size); err != nil {
			return err
		}
	} else {
		pg.memoryPtr(slots+8, t.Size) // an element of a global array
	}
	pg.emit(asm.Mov.Reg(asm.R5, asm.R1))
	pg.emit(asm.LoadMem(asm.R3, regState, int16(slots), asm.DWord))
	pg.allocaAddr(asm.R3, asm.R3, asm.R4, t.Size, asm.R2, "")
	pg.emit(asm.Mov.Reg(asm.R1, asm.R5))
	pg.emit(asm.Mov.Imm(asm.R2, int32(t.Size)))
	pg.call(asm.FnProbeReadKernel)
	done := pg.newLabel("struct_copied")
	pg.emit(asm.JEq.Imm(asm.R0, 0, done))
	pg.emit(asm.LoadMem(asm.R1, regState, int16(slots), asm.DWord))
	pg.raise(FaultBadAddr, asm.R1, true)
	pg.label(done)
	if skip != "" {
		pg.label(skip)
	}
	pg.emit(asm.Mov.Imm(asm.R0, 0))
	return nil
}

// structInto copies the struct value e stands for, of type t, to
// base+off: what trace( ) records.
func (pg *probeGen) structInto(e ast.Expr, t *types.Type, base asm.Register, off int) error {
	if err := pg.structAddr(e); err != nil {
		return err
	}
	slot := pg.allocScratch(8)
	pg.emit(asm.StoreMem(regState, int16(slot), asm.R0, asm.DWord))
	pg.allocaAddr(asm.R3, asm.R0, asm.R1, t.Size, asm.R2, "")
	pg.addrOf(asm.R1, base, off)
	pg.emit(asm.Mov.Imm(asm.R2, int32(t.Size)))
	pg.call(asm.FnProbeReadKernel)
	done := pg.newLabel("struct_read")
	pg.emit(asm.JEq.Imm(asm.R0, 0, done))
	pg.emit(asm.LoadMem(asm.R1, regState, int16(slot), asm.DWord))
	pg.raise(FaultBadAddr, asm.R1, true)
	pg.label(done)
	return nil
}
