package codegen

import (
	"sort"
	"sync"

	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/providers"
	"github.com/dstar-trace/dstar/providers/ksym"
)

// maxDepth is the deepest stack stackdepth and ustackdepth count: the
// kernel's walker gives no more (kernel.perf_event_max_stack's default).
const maxDepth = 127

// tracingSlack bounds how many frames of tracing code, after the
// program's own, a kernel walk is searched for (see providers.TracingFrames).
const tracingSlack = 8

// tracingCode holds where the kernel's tracing functions lie (those
// whose names providers.TracingFrames may give), read from kallsyms once.
var tracingCode struct {
	once sync.Once
	ext  map[string]ksym.Extent
}

// rangesOf returns where the kernel functions funcs lie, sorted and
// merged: none that kallsyms does not show.
func rangesOf(funcs []string) []ksym.Extent {
	tracingCode.once.Do(func() {
		// Without kallsyms no frame is passed over: the counts then
		// include the tracing functions' frames.
		tracingCode.ext, _ = ksym.Extents(providers.MayRunPrograms)
	})
	var rs []ksym.Extent
	for _, f := range funcs {
		if e, ok := tracingCode.ext[f]; ok {
			rs = append(rs, e)
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Lo < rs[j].Lo })
	var merged []ksym.Extent
	for _, r := range rs {
		if n := len(merged); n > 0 && r.Lo <= merged[n-1].Hi {
			merged[n-1].Hi = max(merged[n-1].Hi, r.Hi)
			continue
		}
		merged = append(merged, r)
	}
	return merged
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
func (pg *probeGen) stackVar(name string) error {
	if pg.isDTrace() {
		pg.emit(asm.Mov.Imm(asm.R0, 0))
		return nil
	}
	user := name == "ucaller" || name == "ustackdepth"
	if name == "ucaller" && pg.atUserEntry() {
		pg.returnAddress()
		return nil
	}
	if m := pg.opts.MaxFrames; m > 0 && (name == "stackdepth" || name == "ustackdepth") {
		// -x maxframes: no walk goes deeper.
		defer func() {
			pg.emit(asm.JLE.Imm(asm.R0, int32(m), pg.labelNext("depth_max")))
			pg.emit(asm.Mov.Imm(asm.R0, int32(m)))
			pg.label(pg.lastLabel)
		}()
	}
	if !user {
		pg.kernelStackVar(name == "caller")
		return nil
	}
	if unwinds() {
		return pg.userStackVar(name == "ucaller")
	}
	// ucaller: the second frame; ustackdepth: all of them.
	frames, skip := 1, int32(1)
	if name == "ustackdepth" {
		frames, skip = maxDepth, 0
	}
	buf := pg.allocScratch(8 * frames)
	pg.emit(asm.Mov.Reg(asm.R1, regCtx))
	pg.addrOf(asm.R2, regState, buf)
	pg.emit(asm.Mov.Imm(asm.R3, int32(8*frames)))
	pg.emit(asm.Mov.Imm(asm.R4, skip|bpfUserStack))
	pg.call(asm.FnGetStack)
	if frames == 1 {
		// The helper zero-fills what it does not write, and all of the
		// buffer when it fails: no frame is PC 0.
		pg.emit(asm.LoadMem(asm.R0, regState, int16(buf), asm.DWord))
		return nil
	}
	pg.framesWritten()
	pg.untilZero(buf)
	return nil
}

// framesWritten turns bpf_get_stack's result in R0 (bytes written, or an
// error) into a count of frames.
func (pg *probeGen) framesWritten() {
	pg.emit(asm.JSGE.Imm(asm.R0, 0, pg.labelNext("depth_ok")))
	pg.emit(asm.Mov.Imm(asm.R0, 0))
	pg.label(pg.lastLabel)
	pg.emit(asm.RSh.Imm(asm.R0, 3))
}

// kernelStackVar sets R0 to caller (or, when caller is false, to
// stackdepth): it walks the kernel stack without the program's own
// frames, then passes over the first frames that lie in the tracing code
// (providers.TracingFrames), found by address.
func (pg *probeGen) kernelStackVar(caller bool) {
	program, funcs := providers.TracingFrames(pg.probe)
	ranges := rangesOf(funcs)
	frames := tracingSlack + 1
	if !caller {
		frames = maxDepth + tracingSlack
	}
	buf := pg.allocScratch(8 * (frames + 1))
	count := buf + 8*frames
	pg.emit(asm.Mov.Reg(asm.R1, regCtx))
	pg.addrOf(asm.R2, regState, buf)
	pg.emit(asm.Mov.Imm(asm.R3, int32(8*frames)))
	pg.emit(asm.Mov.Imm(asm.R4, int32(program)))
	pg.call(asm.FnGetStack)
	pg.framesWritten()
	pg.emit(asm.StoreMem(regState, int16(count), asm.R0, asm.DWord))
	done := pg.newLabel("stackvar_done")
	// Frame i is the first of the probe's own when it is in none of the
	// ranges (a zero PC, the end of the walk, is in none).
	last := tracingSlack
	if len(ranges) == 0 {
		last = 0
	}
	for i := 0; i <= last; i++ {
		next := pg.newLabel("stackvar_next")
		pg.emit(asm.LoadMem(asm.R3, regState, int16(buf+8*i), asm.DWord))
		if i < last {
			for _, r := range ranges {
				outside := pg.newLabel("stackvar_out")
				pg.emit(asm.LoadImm(asm.R4, int64(r.Lo), asm.DWord))
				pg.emit(asm.JLT.Reg(asm.R3, asm.R4, outside))
				pg.emit(asm.LoadImm(asm.R4, int64(r.Hi), asm.DWord))
				pg.emit(asm.JLT.Reg(asm.R3, asm.R4, next))
				pg.label(outside)
			}
		}
		if caller {
			pg.emit(asm.Mov.Reg(asm.R0, asm.R3))
		} else {
			pg.emit(asm.LoadMem(asm.R0, regState, int16(count), asm.DWord))
			pg.emit(asm.Sub.Imm(asm.R0, int32(i)))
			pg.emit(asm.JSGE.Imm(asm.R0, 0, done))
			pg.emit(asm.Mov.Imm(asm.R0, 0))
		}
		if i == last {
			break // no jump to next: a label there would be unreachable code
		}
		pg.emit(asm.Ja.Label(done))
		pg.label(next)
	}
	pg.label(done)
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
// a user function (pid's entry probes), where the return address is not
// yet in a frame the walk can find, on an architecture where we know
// where it is instead.
func (pg *probeGen) atUserEntry() bool {
	regs := providers.UserRegNames()
	_, x86 := regs["R_RSP"]
	_, arm64 := regs["R_X30"]
	return (x86 || arm64) && providers.AtUserEntry(pg.probe)
}

// returnAddress sets R0 to the return address at a function's entry: on
// arm64 the link register (x30); on x86-64 the user word at the stack
// pointer, or 0 when it cannot be read.
func (pg *probeGen) returnAddress() {
	regs := providers.UserRegNames()
	if lr, ok := regs["R_X30"]; ok {
		pg.emit(asm.LoadMem(asm.R0, regCtx, int16(8*lr), asm.DWord))
		return
	}
	buf := pg.allocScratch(8)
	pg.addrOf(asm.R1, regState, buf)
	pg.emit(asm.Mov.Imm(asm.R2, 8))
	pg.emit(asm.LoadMem(asm.R3, regCtx, int16(8*regs["R_SP"]), asm.DWord))
	pg.call(asm.FnProbeReadUser) // zero-fills on failure
	pg.emit(asm.LoadMem(asm.R0, regState, int16(buf), asm.DWord))
}
