package codegen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/check"
	"github.com/dstar-trace/dstar/dcompiler/types"
)

// varOf returns the layout of the variable r names.
func (pg *probeGen) varOf(r check.VarRef) *Var { return pg.vars[r.Scope][r.Name] }

// elemKey builds the key of r's element in scratch and returns its
// offset: the tuple of an associative array, the thread id of a
// thread-local.
func (pg *probeGen) elemKey(v *Var, r check.VarRef) (int, error) {
	off := pg.allocScratch(v.KeySize)
	if v.Scope == check.ScopeThread {
		pg.call(asm.FnGetCurrentPidTgid)
		pg.emit(asm.Mov.Reg32(asm.R0, asm.R0))
		pg.emit(asm.StoreMem(regState, int16(off), asm.R0, asm.DWord))
		if len(r.Keys) == 0 {
			return off, nil
		}
	} else if len(r.Keys) == 0 {
		pg.emit(storeImm(regState, int16(off), 0, asm.DWord))
	}
	for i, k := range r.Keys {
		d := v.Keys[i]
		if d.Type.IsString() {
			pg.zero(regState, off+d.Off, d.Size)
			if err := pg.strInto(k, regState, off+d.Off, d.Type.Size); err != nil {
				return 0, err
			}
			continue
		}
		if d.Type.Kind == types.Struct {
			// A struct is its bytes, as DTrace compares keys.
			pg.zero(regState, off+d.Off, d.Size)
			if err := pg.structInto(k, d.Type, regState, off+d.Off); err != nil {
				return 0, err
			}
			continue
		}
		if err := pg.expr(k); err != nil {
			return 0, err
		}
		pg.emit(asm.StoreMem(regState, int16(off+d.Off), asm.R0, asm.DWord))
	}
	return off, nil
}

// lookupElem leaves in R0 a pointer to r's element, or 0 when it has none.
func (pg *probeGen) lookupElem(v *Var, r check.VarRef) (keyOff int, err error) {
	keyOff, err = pg.elemKey(v, r)
	if err != nil {
		return 0, err
	}
	pg.lookupKey(v.Map, keyOff)
	return keyOff, nil
}

// base returns the register and offset of a variable kept in place.
func (v *Var) base() (asm.Register, int) {
	if v.Scope == check.ScopeClause {
		return regState, v.Off
	}
	return regGlob, v.Off
}

// loadRef loads an integer variable into R0; an element that was never
// assigned (or was assigned zero) reads as 0.
func (pg *probeGen) loadRef(r check.VarRef) error {
	v := pg.varOf(r)
	if v.Map == "" {
		reg, off := v.base()
		pg.emit(asm.LoadMem(asm.R0, reg, int16(off), asm.DWord))
		return nil
	}
	if _, err := pg.lookupElem(v, r); err != nil {
		return err
	}
	none := pg.newLabel("no_elem")
	pg.emit(asm.JEq.Imm(asm.R0, 0, none))
	pg.emit(asm.LoadMem(asm.R0, asm.R0, 0, asm.DWord))
	pg.label(none)
	return nil
}

// refStrInto copies a string variable to base+off; a NULL one (an
// unassigned element, or one assigned NULL) is an invalid address fault
// at 0, as dereferencing DTrace's NULL string pointer is.
func (pg *probeGen) refStrInto(r check.VarRef, base asm.Register, off, size int) error {
	return pg.refStr(r, base, off, size, false)
}

// refStr copies a string variable to base+off; a NULL one faults, or
// when nullable is copied as the NULL marker.
func (pg *probeGen) refStr(r check.VarRef, base asm.Register, off, size int, nullable bool) error {
	v := pg.varOf(r)
	null, done := pg.newLabel("str_null"), pg.newLabel("str_done")
	if v.Map == "" {
		reg, voff := v.base()
		pg.emit(asm.LoadMem(asm.R3, reg, int16(voff), asm.Half))
		pg.emit(asm.JEq.Imm(asm.R3, nullString, null))
		pg.addrOf(asm.R3, reg, voff)
	} else {
		if _, err := pg.lookupElem(v, r); err != nil {
			return err
		}
		pg.emit(asm.JEq.Imm(asm.R0, 0, null))
		pg.emit(asm.LoadMem(asm.R3, asm.R0, 0, asm.Half))
		pg.emit(asm.JEq.Imm(asm.R3, nullString, null))
		pg.emit(asm.Mov.Reg(asm.R3, asm.R0))
	}
	n := min(size, v.Type.Size)
	pg.readStr(base, off, n, asm.FnProbeReadKernelStr)
	if n >= 2 {
		// An empty copy must not leave the NULL marker behind it.
		pg.emit(asm.JGT.Imm(asm.R0, 1, done))
		pg.emit(storeImm(base, int16(off+1), 0, asm.Byte))
	}
	pg.emit(asm.Ja.Label(done))
	pg.label(null)
	pg.nullStr(base, off, size, nullable)
	pg.label(done)
	return nil
}

// storeRef stores the integer in R0 into r. Storing zero in an element
// deletes it, as DTrace frees dynamic variables assigned zero.
func (pg *probeGen) storeRef(r check.VarRef) error {
	v := pg.varOf(r)
	pg.normalize(asm.R0, v.Type.Size, v.Type.Signed)
	if v.Map == "" {
		reg, off := v.base()
		pg.emit(asm.StoreMem(reg, int16(off), asm.R0, asm.DWord))
		return nil
	}
	val := pg.allocScratch(8)
	pg.emit(asm.StoreMem(regState, int16(val), asm.R0, asm.DWord))
	keyOff, err := pg.elemKey(v, r)
	if err != nil {
		return err
	}
	del, done := pg.newLabel("del_elem"), pg.newLabel("store_done")
	pg.emit(asm.LoadMem(asm.R0, regState, int16(val), asm.DWord))
	pg.emit(asm.JEq.Imm(asm.R0, 0, del))
	pg.update(v.Map, keyOff, val, done)
	pg.label(del)
	pg.deleteElem(v, keyOff)
	pg.label(done)
	pg.emit(asm.LoadMem(asm.R0, regState, int16(val), asm.DWord))
	return nil
}

// update stores the value at state+valOff under the key at state+keyOff,
// counting a dynamic-variable drop when the map is full; then jumps to
// done.
func (pg *probeGen) update(m string, keyOff, valOff int, done string) {
	pg.mapPtr(asm.R1, m)
	pg.addrOf(asm.R2, regState, keyOff)
	pg.addrOf(asm.R3, regState, valOff)
	pg.emit(asm.Mov.Imm(asm.R4, 0)) // BPF_ANY
	pg.call(asm.FnMapUpdateElem)
	pg.emit(asm.JEq.Imm(asm.R0, 0, done))
	pg.count(StDynDrops)
	pg.emit(asm.Ja.Label(done))
}

// deleteElem frees v's element whose key is at keyOff in the state:
// assigning 0 (or a NULL string) to a dynamic variable frees it, as in
// DTrace.
func (pg *probeGen) deleteElem(v *Var, keyOff int) {
	pg.mapPtr(asm.R1, v.Map)
	pg.addrOf(asm.R2, regState, keyOff)
	pg.call(asm.FnMapDeleteElem)
}

// storeRefStr assigns string expression rhs to r.
func (pg *probeGen) storeRefStr(r check.VarRef, rhs ast.Expr) error {
	v := pg.varOf(r)
	if n, ok := pg.in.ConstInt(rhs); ok && n == 0 && v.Map != "" {
		// NULL: a dynamic variable of any type assigned 0 is freed, as
		// in DTrace.
		keyOff, err := pg.elemKey(v, r)
		if err != nil {
			return err
		}
		pg.deleteElem(v, keyOff)
		return nil
	}
	if v.Map == "" {
		reg, off := v.base()
		return pg.strIntoOrNull(rhs, reg, off, v.Type.Size)
	}
	val := pg.allocScratch(v.Type.Size)
	if err := pg.strIntoOrNull(rhs, regState, val, v.Type.Size); err != nil {
		return err
	}
	keyOff, err := pg.elemKey(v, r)
	if err != nil {
		return err
	}
	del, done := pg.newLabel("del_str"), pg.newLabel("store_done")
	pg.emit(asm.LoadMem(asm.R1, regState, int16(val), asm.Half))
	pg.emit(asm.JEq.Imm(asm.R1, nullString, del))
	pg.update(v.Map, keyOff, val, done)
	// A NULL string frees the element, as the constant NULL does.
	pg.label(del)
	pg.deleteElem(v, keyOff)
	pg.label(done)
	return nil
}
