package codegen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/types"
)

// kernelAddr leaves in R0 the address of a struct member: for x->m the
// pointer x plus m's offset, for x.m the address of x plus it.
func (pg *probeGen) kernelAddr(e *ast.Member) error {
	off, _, err := pg.in.MemberOffset(e, pg.env)
	if err != nil {
		return err
	}
	if e.Arrow {
		if err := pg.expr(e.X); err != nil {
			return err
		}
		if off != 0 {
			// A NULL pointer faults at address 0, not at the member's
			// offset, as in DTrace.
			notNull := pg.newLabel("ptr_ok")
			pg.emit(asm.JNE.Imm(asm.R0, 0, notNull))
			pg.raise(FaultBadAddr, asm.R0, true)
			pg.label(notNull)
		}
	} else if err := pg.structAddr(e.X); err != nil {
		return err
	}
	if off != 0 {
		pg.emit(asm.Add.Imm(asm.R0, int32(off)))
	}
	return nil
}

// ksymAddr leaves in R0 the address of kernel symbol e, from kallsyms
// when the program was compiled.
func (pg *probeGen) ksymAddr(e *ast.KSym) error {
	s, err := pg.in.KSym(e)
	if err != nil {
		return err
	}
	pg.emit(asm.LoadImm(asm.R0, int64(s.Addr), asm.DWord))
	return nil
}

// kernelMember loads an integer or pointer member of a kernel struct,
// read safely from kernel memory: a bad address is a fault, as in DTrace.
func (pg *probeGen) kernelMember(e *ast.Member, t *types.Type) error {
	if err := pg.kernelAddr(e); err != nil {
		return err
	}
	return pg.readKernel(t)
}

// readKernel replaces the address in R0 with the value of type t there,
// read safely; a bad address is a fault.
func (pg *probeGen) readKernel(t *types.Type) error {
	size := t.Size
	if t.Kind == types.Pointer || size > 8 || size <= 0 {
		size = 8
	}
	if t.Bits > 0 {
		// A bit-field: the bytes that hold it, into the zeroed u64.
		size = bitFieldBytes(t)
	}
	tmp := pg.allocScratch(16)
	pg.emit(asm.StoreMem(regState, int16(tmp+8), asm.R0, asm.DWord))
	pg.emit(storeImm(regState, int16(tmp), 0, asm.DWord))
	pg.allocaAddr(asm.R3, asm.R0, asm.R1, size, asm.R2, "")
	pg.addrOf(asm.R1, regState, tmp)
	pg.emit(asm.Mov.Imm(asm.R2, int32(size)))
	pg.call(asm.FnProbeReadKernel)
	ok := pg.newLabel("kread_ok")
	pg.emit(asm.JEq.Imm(asm.R0, 0, ok))
	pg.emit(asm.LoadMem(asm.R1, regState, int16(tmp+8), asm.DWord))
	pg.raise(FaultBadAddr, asm.R1, true)
	pg.label(ok)
	if t.Bits > 0 {
		pg.emit(asm.LoadMem(asm.R0, regState, int16(tmp), asm.DWord))
		pg.bitFieldValue(t)
		return nil
	}
	pg.emit(asm.LoadMem(asm.R0, regState, int16(tmp), sizeOf(size)))
	if t.Kind == types.Int {
		pg.normalize(asm.R0, size, t.Signed)
	}
	return nil
}

// bitFieldBytes is how many bytes from its member's offset hold
// bit-field t: no more, since a D struct's bit-field may end its struct
// in fewer bytes than its type has (struct { long a : 35; } is 5 long).
func bitFieldBytes(t *types.Type) int { return (t.BitOff + t.Bits + 7) / 8 }

// loadBytes loads the n (1 to 8) bytes at src+0 into dst, little-endian,
// one at a time, so that n need not be a size a load has; tmp is
// clobbered.
func (pg *probeGen) loadBytes(dst, src, tmp asm.Register, n int) {
	pg.emit(asm.Mov.Imm(dst, 0))
	for i := n - 1; i >= 0; i-- {
		pg.emit(asm.LSh.Imm(dst, 8))
		pg.emit(asm.LoadMem(tmp, src, int16(i), asm.Byte))
		pg.emit(asm.Or.Reg(dst, tmp))
	}
}

// bitFieldValue replaces the bytes holding bit-field t in R0 with the
// field's value: its top bit shifted to bit 63, then down to bit 0,
// bringing its sign along for a signed field.
func (pg *probeGen) bitFieldValue(t *types.Type) {
	pg.emit(asm.LSh.Imm(asm.R0, int32(64-t.BitOff-t.Bits)))
	if t.Signed {
		pg.emit(asm.ArSh.Imm(asm.R0, int32(64-t.Bits)))
	} else {
		pg.emit(asm.RSh.Imm(asm.R0, int32(64-t.Bits)))
	}
}

// kernelString copies a char-array member of a kernel struct.
func (pg *probeGen) kernelString(e *ast.Member, base asm.Register, off, size int, t *types.Type) error {
	if err := pg.kernelAddr(e); err != nil {
		return err
	}
	pg.allocaAddr(asm.R3, asm.R0, asm.R1, 1, asm.R2, "")
	pg.readStr(base, off, min(size, t.Size), asm.FnProbeReadKernelStr)
	return nil
}

// pointerElemAddr leaves in R0 the address of p[i]: p plus i elements.
func (pg *probeGen) pointerElemAddr(e *ast.Index) error {
	et := pg.in.PointerIndex(e, pg.env)
	if err := pg.expr(e.X); err != nil {
		return err
	}
	return pg.plusIndex(e, et.Size)
}

// plusIndex adds e's index times size to the address in R0.
func (pg *probeGen) plusIndex(e *ast.Index, size int) error {
	if _, err := pg.push(); err != nil {
		return pg.errorf(e.Pos, "%v", err)
	}
	if err := pg.expr(e.Keys[0]); err != nil {
		return err
	}
	pg.emit(asm.Mul.Imm(asm.R0, int32(size)))
	pg.pop(asm.R1)
	pg.emit(asm.Add.Reg(asm.R0, asm.R1))
	return nil
}

// memberElemAddr leaves in R0 the address of x->m[i]: m's address plus i
// elements. Reads of it are safe; stores are checked against alloca
// memory.
func (pg *probeGen) memberElemAddr(e *ast.Index) error {
	_, at, err := pg.in.MemberArray(e, pg.env)
	if err != nil {
		return err
	}
	if err := pg.kernelAddr(e.X.(*ast.Member)); err != nil {
		return err
	}
	return pg.plusIndex(e, at.Elem.Size)
}
