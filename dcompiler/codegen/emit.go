package codegen

import (
	"fmt"
	"math"

	"github.com/cilium/ebpf/asm"
)

// emitter accumulates instructions and places labels on the next one.
type emitter struct {
	insns   asm.Instructions
	pending string // label waiting for the next instruction
	nlabel  int
}

// newLabel returns a fresh label name.
func (e *emitter) newLabel(hint string) string {
	e.nlabel++
	return fmt.Sprintf("%s_%d", hint, e.nlabel)
}

// emit appends instructions, attaching a pending label to the first.
func (e *emitter) emit(list ...asm.Instruction) {
	for _, ins := range list {
		if e.pending != "" {
			ins = ins.WithSymbol(e.pending)
			e.pending = ""
		}
		e.insns = append(e.insns, ins)
	}
}

// label marks the next instruction. Two labels in a row are joined by a
// no-op jump so that each has an instruction of its own.
func (e *emitter) label(name string) {
	if e.pending != "" {
		e.emit(asm.Instruction{OpCode: asm.Ja.Op(asm.ImmSource), Offset: 0})
	}
	e.pending = name
}

// call emits a helper call.
func (e *emitter) call(fn asm.BuiltinFunc) { e.emit(fn.Call()) }

// mapPtr loads the address of map name into dst.
func (e *emitter) mapPtr(dst asm.Register, name string) {
	e.emit(asm.LoadMapPtr(dst, 0).WithReference(name))
}

// addrOf sets dst = base + off.
func (e *emitter) addrOf(dst, base asm.Register, off int) {
	e.emit(asm.Mov.Reg(dst, base))
	if off != 0 {
		e.emit(asm.Add.Imm(dst, int32(off)))
	}
}

// zero clears n bytes at base+off (n a multiple of 8 or not).
func (e *emitter) zero(base asm.Register, off, n int) {
	i := 0
	for ; i+8 <= n; i += 8 {
		e.emit(storeImm(base, int16(off+i), 0, asm.DWord))
	}
	for ; i < n; i++ {
		e.emit(storeImm(base, int16(off+i), 0, asm.Byte))
	}
}

// bytes stores b at base+off with immediate stores.
func (e *emitter) bytes(base asm.Register, off int, b []byte) {
	i := 0
	for ; i+4 <= len(b); i += 4 {
		v := int64(int32(uint32(b[i]) | uint32(b[i+1])<<8 | uint32(b[i+2])<<16 | uint32(b[i+3])<<24))
		e.emit(storeImm(base, int16(off+i), v, asm.Word))
	}
	for ; i < len(b); i++ {
		e.emit(storeImm(base, int16(off+i), int64(int8(b[i])), asm.Byte))
	}
}

// normalize truncates R-register r to size bytes, sign- or zero-extending,
// so that values always hold what C would hold.
func (e *emitter) normalize(r asm.Register, size int, signed bool) {
	if size >= 8 || size <= 0 {
		return
	}
	shift := int32(64 - 8*size)
	e.emit(asm.LSh.Imm(r, shift))
	if signed {
		e.emit(asm.ArSh.Imm(r, shift))
	} else {
		e.emit(asm.RSh.Imm(r, shift))
	}
}

// sizeOf is the asm.Size of an n-byte load or store.
func sizeOf(n int) asm.Size {
	switch n {
	case 1:
		return asm.Byte
	case 2:
		return asm.Half
	case 4:
		return asm.Word
	}
	return asm.DWord
}

func align8(n int) int { return (n + 7) &^ 7 }

// storeImm emits *(size *)(dst + off) = value. cilium/ebpf's StoreImm
// refuses 64-bit stores, which the kernel takes (the immediate is
// sign-extended), so the instruction is built here.
func storeImm(dst asm.Register, off int16, value int64, size asm.Size) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(size), Dst: dst, Offset: off, Constant: value}
}

// xchg emits an atomic exchange of the u64 at dst+off with src, src
// receiving the old value. cilium/ebpf v0.22 encodes asm.Xchg's immediate
// from the constant as it was before it derives it from the opcode, and so
// emits an atomic add: the immediate (BPF_XCHG|BPF_FETCH) is set here.
func xchg(dst, src asm.Register, off int16) asm.Instruction {
	return asm.Instruction{
		OpCode: asm.AddAtomic.OpCode(asm.DWord), Dst: dst, Src: src, Offset: off,
		Constant: 0xe1,
	}
}

// longJumps returns insns with every jump to a label further than a jump's
// 16-bit offset reaches made long (BPF's 32-bit "gotol", Linux 6.4+): an
// unconditional one becomes one, and a conditional one jumps over a short
// jump to one. Only a clause of tens of thousands of instructions needs
// it; without it the offset would wrap and jump into the wrong code.
func longJumps(insns asm.Instructions) asm.Instructions {
	slots := 0
	for _, ins := range insns {
		slots += int(ins.Size() / asm.InstructionSize)
	}
	if slots <= math.MaxInt16 {
		return insns // no jump can be too long
	}
	for {
		at := map[string]int{} // each label's position, in 8-byte slots
		pos := make([]int, len(insns))
		n := 0
		for i, ins := range insns {
			pos[i] = n
			if s := ins.Symbol(); s != "" {
				at[s] = n
			}
			n += int(ins.Size() / asm.InstructionSize)
		}
		// Room for a few made long, so the copy is not regrown as it
		// fills (a clause of a million instructions).
		out := make(asm.Instructions, 0, len(insns)+len(insns)/16)
		for i, ins := range insns {
			op := ins.OpCode
			t, ok := at[ins.Reference()]
			short := !op.Class().IsJump() || op.JumpOp() == asm.Call || op.JumpOp() == asm.Exit ||
				op == asm.LongJump("").OpCode || !ok
			if d := t - pos[i] - 1; short || d >= math.MinInt16 && d <= math.MaxInt16 {
				out = append(out, ins)
				continue
			}
			long := asm.LongJump(ins.Reference())
			if op.JumpOp() == asm.Ja {
				out = append(out, long.WithSymbol(ins.Symbol()))
				continue
			}
			// if cond goto +1 (the long jump); goto +1 (past it); gotol target
			ins.Offset = 1
			out = append(out, ins.WithReference(""),
				asm.Instruction{OpCode: asm.Ja.Op(asm.ImmSource), Offset: 1}, long)
		}
		if len(out) == len(insns) {
			return out
		}
		insns = out
	}
}
