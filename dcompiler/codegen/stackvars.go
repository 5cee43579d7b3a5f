package codegen

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/providers"
)

// maxDepth is the deepest stack stackdepth and ustackdepth count: the
// kernel's walker gives no more (kernel.perf_event_max_stack's default).
const maxDepth = 127

// bpfSkipMask is BPF_F_SKIP_FIELD_MASK: the low bits of bpf_get_stack's
// flags say how many frames to leave out at the top.
const bpfSkipMask = 0xff

// tracingFrames is how many kernel frames bpf_get_stack gives, at the top
// of the walk, for the tracing code that ran a program of type t rather
// than for the code where the probe fired. A raw tracepoint's program
// (tp_btf's too) runs from __bpf_trace_<event> through bpf_trace_run<N>,
// and the walk starts in the program itself: three frames. A perf event's
// program walks from the interrupted registers, and a tracepoint's from
// the registers its perf handler saved: none. stack( ) leaves the same
// frames out when it prints (engine/stacks.go), by their symbols; this
// count is what the kernel-side built-ins can know without symbols.
func tracingFrames(t ebpf.ProgramType) int32 {
	switch t {
	case ebpf.RawTracepoint, ebpf.Tracing:
		return 3
	}
	return 0
}

// stackVar sets R0 to caller, ucaller, stackdepth or ustackdepth, from a
// walk of the stack with bpf_get_stack into scratch:
//
//   - stackdepth, ustackdepth: how many frames the walk gives (up to
//     maxDepth), a kernel walk without the tracing frames;
//   - caller: the kernel PC where the probe fired, the first frame
//     stack( ) prints;
//   - ucaller: as DTrace defines it, the user PC the current function
//     will return to: at a pid entry probe the return address the call
//     just pushed (the frame-pointer walk would miss that caller, whose
//     frame is not yet linked), elsewhere the second frame of the user
//     stack.
//
// BEGIN, END and ERROR run inside dstar: their stacks mean nothing to the
// user, so all four are 0 there.
func (pg *probeGen) stackVar(name string) {
	if pg.isDTrace() {
		pg.emit(asm.Mov.Imm(asm.R0, 0))
		return
	}
	user := name == "ucaller" || name == "ustackdepth"
	if name == "ucaller" && pg.atUserEntry() {
		pg.returnAddress()
		return
	}
	frames, skip := maxDepth, int32(0)
	switch name {
	case "caller":
		frames = 1
	case "ucaller":
		frames, skip = 1, 1
	}
	flags := skip
	if user {
		flags |= bpfUserStack
	} else {
		flags += tracingFrames(pg.probe.ProgType)
	}
	buf := pg.allocScratch(8 * frames)
	pg.emit(asm.Mov.Reg(asm.R1, regCtx))
	pg.addrOf(asm.R2, regState, buf)
	pg.emit(asm.Mov.Imm(asm.R3, int32(8*frames)))
	pg.emit(asm.Mov.Imm(asm.R4, flags))
	pg.call(asm.FnGetStack)
	if frames == 1 {
		// The helper zero-fills what it does not write, and all of the
		// buffer when it fails: no frame is PC 0.
		pg.emit(asm.LoadMem(asm.R0, regState, int16(buf), asm.DWord))
		return
	}
	// Bytes written, or an error: no frames.
	pg.emit(asm.JSGE.Imm(asm.R0, 0, pg.labelNext("depth_ok")))
	pg.emit(asm.Mov.Imm(asm.R0, 0))
	pg.label(pg.lastLabel)
	pg.emit(asm.RSh.Imm(asm.R0, 3))
	if user {
		pg.untilZero(buf)
	}
}

// untilZero cuts the count of frames in R0 at the first zero PC in the
// walk at state+buf: a user walk can end in one (a frame pointer chain
// that ends in a zero return address), and ustack( ) ends there too.
func (pg *probeGen) untilZero(buf int) {
	loop, done := pg.newLabel("depth_loop"), pg.newLabel("depth_done")
	pg.addrOf(asm.R1, regState, buf)
	pg.emit(asm.Mov.Imm(asm.R2, 0))
	pg.label(loop)
	pg.emit(asm.JGE.Reg(asm.R2, asm.R0, done))
	pg.emit(asm.JGE.Imm(asm.R2, maxDepth, done))
	pg.emit(asm.LoadMem(asm.R3, asm.R1, 0, asm.DWord))
	pg.emit(asm.JEq.Imm(asm.R3, 0, done))
	pg.emit(asm.Add.Imm(asm.R1, 8), asm.Add.Imm(asm.R2, 1))
	pg.emit(asm.Ja.Label(loop))
	pg.label(done)
	pg.emit(asm.Mov.Reg(asm.R0, asm.R2))
}

// atUserEntry reports whether the probe fires at the first instruction of
// a user function (pid's entry probes), where the return address is the
// word at the stack pointer.
func (pg *probeGen) atUserEntry() bool {
	_, x86 := providers.UserRegNames()["R_RSP"]
	return x86 && providers.AtUserEntry(pg.probe)
}

// returnAddress sets R0 to the user word at the stack pointer (x86-64: the
// return address at a function's entry), or 0 when it cannot be read.
func (pg *probeGen) returnAddress() {
	buf := pg.allocScratch(8)
	pg.addrOf(asm.R1, regState, buf)
	pg.emit(asm.Mov.Imm(asm.R2, 8))
	pg.emit(asm.LoadMem(asm.R3, regCtx, int16(8*providers.UserRegNames()["R_SP"]), asm.DWord))
	pg.call(asm.FnProbeReadUser) // zero-fills on failure
	pg.emit(asm.LoadMem(asm.R0, regState, int16(buf), asm.DWord))
}
