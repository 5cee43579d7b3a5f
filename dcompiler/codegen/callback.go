package codegen

import (
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// Loops that the verifier cannot follow iteration by iteration (a
// search whose every position needs a loop of its own) run under the
// bpf_loop helper: the verifier checks its callback once, not once per
// iteration. A callback is a static subprogram after the program's exit,
// and the kernel wants BTF for every subprogram of a program that takes
// a function's address, so each carries a BTF function.

var (
	btfLong = &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed}
	btfU32  = &btf.Int{Name: "unsigned int", Size: 4}
	btfPtr  = &btf.Pointer{Target: &btf.Void{}}
)

// mainFunc is the BTF function of a program's main body.
func mainFunc(name string) *btf.Func {
	return &btf.Func{Name: name, Linkage: btf.GlobalFunc, Type: &btf.FuncProto{
		Return: btfLong, Params: []btf.FuncParam{{Name: "ctx", Type: btfPtr}},
	}}
}

// callback returns the bpf_loop callback named by key, long cb(u32 i,
// void *ctx), generating it on first use; one callback serves every call
// with the same key, as a program may have at most 256 subprograms. The
// body finds i in R1, the state in regState, and in R6, R7, ... the state's
// address plus each of the nargs scratch offsets bpfLoop passed (see
// bpfLoop); it returns with "R0 = 0 (go on) or 1 (stop); exit", and must
// not jump out of itself.
func (pg *probeGen) callback(key string, nargs int, body func()) string {
	if name, ok := pg.callbacks[key]; ok {
		return name
	}
	name := pg.newLabel("cb")
	if pg.callbacks == nil {
		pg.callbacks = map[string]string{}
	}
	pg.callbacks[key] = name
	outer, pending := pg.insns, pg.pending
	pg.insns, pg.pending = nil, ""
	pg.label(name)
	pg.emit(asm.LoadMem(regState, asm.R2, int16(8*nargs), asm.DWord))
	for k := 0; k < nargs; k++ {
		r := asm.R6 + asm.Register(k)
		pg.emit(asm.LoadMem(r, asm.R2, int16(8*(nargs-1-k)), asm.DWord), asm.Add.Reg(r, regState))
	}
	body()
	pg.insns[0] = btf.WithFuncMetadata(pg.insns[0], &btf.Func{Name: name, Linkage: btf.StaticFunc, Type: &btf.FuncProto{
		Return: btfLong, Params: []btf.FuncParam{{Name: "i", Type: btfU32}, {Name: "ctx", Type: btfPtr}},
	}})
	pg.subprogs = append(pg.subprogs, pg.insns...)
	pg.insns, pg.pending = outer, pending
	return name
}

// bpfLoop calls callback cb for i = 0 .. n-1 until it returns 1, passing
// it the scratch offsets args (at most three). Its context is the stack
// slots holding the state's address and then args; the verifier lets a
// callback read its caller's stack through such a pointer.
func (pg *probeGen) bpfLoop(n int32, cb string, args ...int) error {
	pg.emit(asm.Mov.Reg(asm.R0, regState))
	slot, err := pg.push()
	if err != nil {
		return err
	}
	for _, a := range args {
		pg.emit(asm.Mov.Imm(asm.R0, int32(a)))
		if slot, err = pg.push(); err != nil {
			pg.depth -= 1
			return err
		}
	}
	pg.depth -= 1 + len(args)
	pg.emit(asm.Mov.Imm(asm.R1, n))
	pg.emit(asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc, Constant: -1}.WithReference(cb))
	pg.emit(asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, int32(slot)))
	pg.emit(asm.Mov.Imm(asm.R4, 0))
	pg.call(asm.FnLoop)
	return nil
}

// withSubprogs ends a program's instructions with its callbacks, giving
// the main body a BTF function when there are any.
func (pg *probeGen) withSubprogs(name string) asm.Instructions {
	if len(pg.subprogs) == 0 {
		return pg.insns
	}
	insns := append(pg.insns, pg.subprogs...)
	insns[0] = btf.WithFuncMetadata(insns[0], mainFunc(name))
	return insns
}
