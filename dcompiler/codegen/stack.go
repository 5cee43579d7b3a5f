package codegen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/types"
)

// bpfUserStack is BPF_F_USER_STACK: the helpers walk the user stack.
const bpfUserStack = 1 << 8

// stackInto writes a stack of type t at base+off: the kernel's (or the
// process's) program counters after a u64 header holding their count,
// and for a user stack the process id above it (see types.StackT). The
// helper zero-fills what the stack does not, so equal stacks make equal
// aggregation keys.
func (pg *probeGen) stackInto(t *types.Type, base asm.Register, off int) error {
	if pg.isDTrace() {
		// BEGIN, END and ERROR run inside dstar: their stacks would be
		// dstar's own, which mean nothing to the user.
		pg.zero(base, off, t.Size)
		return nil
	}
	if t.User && unwinds() {
		return pg.userStackInto(t, base, off)
	}
	pg.emit(asm.Mov.Reg(asm.R1, regCtx))
	pg.addrOf(asm.R2, base, off+8)
	pg.emit(asm.Mov.Imm(asm.R3, int32(t.Size-8)))
	flags := int32(0)
	if t.User {
		flags = bpfUserStack
	}
	pg.emit(asm.Mov.Imm(asm.R4, flags))
	pg.call(asm.FnGetStack)
	// Bytes written, or an error: no frames.
	pg.emit(asm.JSGE.Imm(asm.R0, 0, pg.labelNext("stack_ok")))
	pg.emit(asm.Mov.Imm(asm.R0, 0))
	pg.label(pg.lastLabel)
	pg.emit(asm.RSh.Imm(asm.R0, 3))
	if t.User {
		pg.emit(asm.StoreMem(base, int16(off), asm.R0, asm.DWord))
		pg.call(asm.FnGetCurrentPidTgid)
		pg.emit(asm.RSh.Imm(asm.R0, 32), asm.LSh.Imm(asm.R0, 32))
		pg.emit(asm.LoadMem(asm.R1, base, int16(off), asm.DWord))
		pg.emit(asm.Or.Reg(asm.R0, asm.R1))
	}
	pg.emit(asm.StoreMem(base, int16(off), asm.R0, asm.DWord))
	return nil
}

// symInto writes at base+off what sym( ) and its kin record (see
// types.SymT): the address the argument of call (sym(addr) or its kin)
// evaluates to, and for a user address the process id before it.
func (pg *probeGen) symInto(t *types.Type, call ast.Expr, base asm.Register, off int) error {
	x := call.(*ast.Call).Args[0]
	if t.User {
		pg.call(asm.FnGetCurrentPidTgid)
		pg.emit(asm.RSh.Imm(asm.R0, 32))
		pg.emit(asm.StoreMem(base, int16(off), asm.R0, asm.DWord))
		off += 8
	}
	if err := pg.expr(x); err != nil {
		return err
	}
	pg.emit(asm.StoreMem(base, int16(off), asm.R0, asm.DWord))
	return nil
}
