package codegen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/check"
	"github.com/dstar-trace/dstar/dcompiler/types"
)

// Global fixed-size arrays ("int a[5];") live in the globals value, after
// the scalars. a[i] is reached through R8 plus a checked offset, which the
// verifier accepts; a itself, and &a[i], are addresses as plain numbers,
// which pointer reads take through probe_read and pointer stores turn back
// into the globals value (memoryPtr).

// arrayVar returns the layout of the global array x names, or nil.
func (pg *probeGen) arrayVar(x ast.Expr) *Var {
	v := pg.in.ArrayVar(x)
	if v == nil {
		return nil
	}
	return pg.vars[check.ScopeGlobal][v.Name]
}

// arrayElemSize is the bytes of one element of array type t.
func arrayElemSize(t *types.Type) int {
	if t.Elem.Kind == types.Pointer {
		return 8
	}
	return t.Elem.Size
}

// globalsAddr leaves in r the globals value's address as a plain number:
// through map memory a pointer comes back as one.
func (pg *probeGen) globalsAddr(r asm.Register) {
	slot := pg.allocScratch(8)
	pg.emit(asm.StoreMem(regState, int16(slot), regGlob, asm.DWord))
	pg.emit(asm.LoadMem(r, regState, int16(slot), asm.DWord))
}

// arrayIndex leaves in R0 the index idx of v, which must be in bounds: an
// index outside the array faults with it, as DTrace's "index out of
// bounds".
func (pg *probeGen) arrayIndex(v *Var, idx ast.Expr) error {
	if err := pg.expr(idx); err != nil {
		return err
	}
	ok := pg.newLabel("index_ok")
	// Unsigned, so that a negative index is out of bounds too.
	pg.emit(asm.JLT.Imm(asm.R0, int32(v.Type.Len), ok))
	pg.emit(asm.Mov.Reg(asm.R1, asm.R0))
	pg.raise(FaultBadIndex, asm.R1, true)
	pg.label(ok)
	return nil
}

// arrayElemPtr leaves in R0 a pointer to v[idx], checked (a constant
// index was checked at compile time).
func (pg *probeGen) arrayElemPtr(v *Var, idx ast.Expr) error {
	size := arrayElemSize(v.Type)
	if !v.Type.Elem.IsScalar() {
		return pg.errorf(idx.Start(), "an element of %s is reached only by its members or its address", v.Name)
	}
	if c, ok := pg.in.ConstInt(idx); ok && c >= 0 && int(c) < v.Type.Len {
		pg.addrOf(asm.R0, regGlob, v.Off+int(c)*size)
		return nil
	}
	if err := pg.arrayIndex(v, idx); err != nil {
		return err
	}
	if size != 1 {
		pg.emit(asm.Mul.Imm(asm.R0, int32(size)))
	}
	pg.emit(asm.Mov.Reg(asm.R1, regGlob), asm.Add.Reg(asm.R1, asm.R0))
	pg.addrOf(asm.R0, asm.R1, v.Off)
	return nil
}

// loadArrayElem loads v[idx] into R0.
func (pg *probeGen) loadArrayElem(v *Var, idx ast.Expr) error {
	if err := pg.arrayElemPtr(v, idx); err != nil {
		return err
	}
	size := arrayElemSize(v.Type)
	pg.emit(asm.LoadMem(asm.R0, asm.R0, 0, sizeOf(size)))
	pg.normalize(asm.R0, size, v.Type.Elem.Signed)
	return nil
}

// arrayAddr leaves in R0 the address of v[idx] as a number, or of v's
// first element when idx is nil. Taking an address reads nothing, so &a[i]
// is not checked at run time (C's pointer one past the end is fine); an
// address to read a member at is.
func (pg *probeGen) arrayAddr(v *Var, idx ast.Expr, checked bool) error {
	if idx == nil {
		pg.globalsAddr(asm.R0)
		pg.emit(asm.Add.Imm(asm.R0, int32(v.Off)))
		return nil
	}
	var err error
	if checked {
		err = pg.arrayIndex(v, idx)
	} else {
		err = pg.expr(idx)
	}
	if err != nil {
		return err
	}
	if size := arrayElemSize(v.Type); size != 1 {
		pg.emit(asm.Mul.Imm(asm.R0, int32(size)))
	}
	pg.globalsAddr(asm.R1)
	pg.emit(asm.Add.Reg(asm.R0, asm.R1), asm.Add.Imm(asm.R0, int32(v.Off)))
	return nil
}

// assignArrayElem generates v[i] = x and v[i] op= x; R0 is the value
// stored. The element's address is had once, so i is evaluated once.
func (pg *probeGen) assignArrayElem(e *ast.Assign, v *Var, ix *ast.Index) error {
	et := v.Type.Elem
	size := arrayElemSize(v.Type)
	if err := pg.expr(e.RHS); err != nil {
		return err
	}
	val, err := pg.push()
	if err != nil {
		return pg.errorf(e.Pos, "%v", err)
	}
	if err := pg.arrayElemPtr(v, ix.Keys[0]); err != nil {
		return err
	}
	if _, err := pg.push(); err != nil {
		return pg.errorf(e.Pos, "%v", err)
	}
	if e.Op != "=" {
		op := e.Op[:len(e.Op)-1]
		pg.emit(asm.LoadMem(asm.R0, asm.R0, 0, sizeOf(size)))
		pg.normalize(asm.R0, size, et.Signed)
		pg.emit(asm.LoadMem(asm.R1, asm.RFP, val, asm.DWord))
		rt, err := pg.typeOf(e.RHS)
		if err != nil {
			return err
		}
		pg.pointerScale(op, et, rt)
		if err := pg.arith(op, types.Arith(et, rt), e); err != nil {
			return err
		}
		pg.emit(asm.StoreMem(asm.RFP, val, asm.R0, asm.DWord))
	}
	pg.pop(asm.R2)
	pg.pop(asm.R0)
	if et.Kind == types.Int {
		pg.normalize(asm.R0, size, et.Signed)
	}
	pg.emit(asm.StoreMem(asm.R2, 0, asm.R0, sizeOf(size)))
	return nil
}

// arrayIndexOf returns e as an element v[i] of a global array, if it is one.
func (pg *probeGen) arrayIndexOf(e ast.Expr) (*Var, *ast.Index) {
	ix, ok := check.Unparen(e).(*ast.Index)
	if !ok {
		return nil, nil
	}
	v := pg.arrayVar(ix.X)
	if v == nil {
		return nil, nil
	}
	return v, ix
}

// memoryPtr turns the address stored at state+slot into a pointer for n
// bytes D may write, left in R1: in the clause's alloca( ) memory, or in
// the global arrays. Any other address is an invalid address fault. ok is
// false when the program has neither.
func (pg *probeGen) memoryPtr(slot, n int) (ok bool) {
	alloca := pg.allocaArea != 0
	arrays := pg.arraysOff < pg.glSize
	if !alloca && !arrays {
		return false
	}
	bad, done := pg.newLabel("mem_bad"), pg.newLabel("mem_ok")
	if alloca {
		next := bad
		if arrays {
			next = pg.newLabel("mem_not_alloca")
		}
		pg.emit(asm.LoadMem(asm.R0, regState, int16(slot), asm.DWord))
		pg.allocaAddr(asm.R1, asm.R0, asm.R2, n, asm.R3, next)
		pg.emit(asm.Ja.Label(done))
		if arrays {
			pg.label(next)
		}
	}
	if arrays {
		pg.globalsAddr(asm.R1)
		pg.emit(asm.LoadMem(asm.R0, regState, int16(slot), asm.DWord))
		pg.emit(asm.Sub.Reg(asm.R0, asm.R1))
		pg.emit(asm.JSLT.Imm(asm.R0, int32(pg.arraysOff), bad), asm.JSGT.Imm(asm.R0, int32(pg.glSize-n), bad))
		pg.emit(asm.Mov.Reg(asm.R1, regGlob), asm.Add.Reg(asm.R1, asm.R0), asm.Ja.Label(done))
	}
	pg.label(bad)
	pg.emit(asm.LoadMem(asm.R1, regState, int16(slot), asm.DWord))
	pg.raise(FaultBadAddr, asm.R1, true)
	pg.label(done)
	return true
}
