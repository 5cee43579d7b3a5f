package providers

import (
	"fmt"

	"github.com/cilium/ebpf/asm"
)

// Helpers shared by the prologues. Every prologue defines all of
// arg0..arg9 and errno, so that nothing from an earlier event on the same CPU
// leaks into this one through the per-CPU state.

// checkPrologue rejects register assignments a prologue cannot work with:
// prologues clobber R0-R5 and call helpers, so Ctx and State must live in
// the callee-saved registers R6-R9.
func checkPrologue(p *Prologue) error {
	ok := func(r asm.Register) bool { return r >= asm.R6 && r <= asm.R9 }
	if !ok(p.Ctx) || !ok(p.State) || p.Ctx == p.State {
		return fmt.Errorf("prologue: Ctx (%v) and State (%v) must be distinct registers among R6-R9", p.Ctx, p.State)
	}
	if p.ArgOffset == nil {
		return fmt.Errorf("prologue: ArgOffset is nil")
	}
	if p.Skip == "" {
		return fmt.Errorf("prologue: Skip label is empty")
	}
	return nil
}

// setup appends the compiler's setup, which loads State.
func setup(p *Prologue) {
	p.Insns = append(p.Insns, p.Setup...)
}

// label makes a jump label private to one probe's prologue.
func label(pr *Probe, what string) string {
	return fmt.Sprintf("__dstar_%s_%d_%s", pr.Provider, pr.ID, what)
}

// storeArg stores register r into argi, unless no clause reads it.
func storeArg(p *Prologue, i int, r asm.Register) {
	if p.Unused&(1<<i) != 0 {
		return
	}
	p.Insns = append(p.Insns, asm.StoreMem(p.State, p.ArgOffset(i), r, asm.DWord))
}

// zeroArgs sets arg[from..NumArgs-1] to 0, those that clauses read.
func zeroArgs(p *Prologue, from int) {
	for i := from; i < NumArgs; i++ {
		if p.Unused&(1<<i) == 0 {
			p.Insns = append(p.Insns, storeZero64(p.State, p.ArgOffset(i)))
		}
	}
}

// argsUnused reports whether no clause reads any of arg[from..to).
func argsUnused(p *Prologue, from, to int) bool {
	for i := from; i < to; i++ {
		if p.Unused&(1<<i) == 0 {
			return false
		}
	}
	return true
}

// storeZero64 is *(u64 *)(dst + off) = 0 (BPF_ST|BPF_MEM|BPF_DW, which
// cilium's asm.StoreImm declines to build, though the kernel takes it).
func storeZero64(dst asm.Register, off int16) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: dst, Offset: off}
}

// zeroErrno sets errno to 0: only syscall returns have one.
func zeroErrno(p *Prologue) {
	if p.Unused&UnusedErrno != 0 {
		return
	}
	p.Insns = append(p.Insns, storeZero64(p.State, p.ErrnoOffset))
}

// signExtend sign-extends the low size bytes of r to 64 bits.
func signExtend(r asm.Register, size int) asm.Instructions {
	if size >= 8 {
		return nil
	}
	sh := int32(64 - 8*size)
	return asm.Instructions{asm.LSh.Imm(r, sh), asm.ArSh.Imm(r, sh)}
}

// loadCtx loads the integer of size bytes at off in the context into dst
// (zero- or sign-extended), using tmp as scratch. Context loads must be
// naturally aligned, so an unaligned field is assembled byte by byte
// (little-endian, as on every architecture dstar supports).
func loadCtx(ctx, dst, tmp asm.Register, off, size int, signed bool) asm.Instructions {
	var out asm.Instructions
	if sz, ok := sizes[size]; ok && off%size == 0 {
		out = append(out, asm.LoadMem(dst, ctx, int16(off), sz))
	} else {
		out = append(out, asm.Mov.Imm(dst, 0))
		for b := 0; b < size; b++ {
			out = append(out, asm.LoadMem(tmp, ctx, int16(off+b), asm.Byte))
			if b > 0 {
				out = append(out, asm.LSh.Imm(tmp, int32(8*b)))
			}
			out = append(out, asm.Or.Reg(dst, tmp))
		}
	}
	if signed {
		out = append(out, signExtend(dst, size)...)
	}
	return out
}

var sizes = map[int]asm.Size{1: asm.Byte, 2: asm.Half, 4: asm.Word, 8: asm.DWord}
