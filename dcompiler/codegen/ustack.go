package codegen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/providers"
	"github.com/dstar-trace/dstar/providers/cfi"
	"github.com/dstar-trace/dstar/providers/unwind"
)

// User stacks are walked by the unwind package's walker (call-frame
// information, frame pointers where a file has none) on x86-64, and by
// bpf_get_stack's frame-pointer walk elsewhere.

// UnwindEPID marks a notice that a walk met a process whose mappings are
// not loaded, or an address in none of them: user space (re)reads the
// process's mappings. The header's PID names it; there is no body.
const UnwindEPID = 0xfffffffe

// noticeHold is how long (ns) after a notice its process is not noticed
// again, unless user space, having read its mappings, says otherwise.
const noticeHold = 50_000_000

// unwinds reports whether user stacks are walked by the unwind walker.
func unwinds() bool {
	_, x86 := providers.UserRegNames()["R_RSP"]
	return x86
}

// userWalk walks the current thread's user stack, at most limit frames,
// into a Walk record (unwind.Walk*) in scratch, whose offset it returns.
// Only R0-R5 are used.
func (pg *probeGen) userWalk(limit int) (int, error) {
	limit = min(limit, unwind.MaxDepth)
	// The record, and after it room for a notice's header.
	w := pg.allocScratch(unwind.WalkSize + HdrSize)
	cb := pg.unwindCallback()
	// The registers: the context's at a uprobe, else those the thread
	// saved entering the kernel (the same at a sample taken in user mode).
	regs := providers.UserRegNames()
	words := [3]struct {
		reg string
		off int16
	}{{"R_PC", unwind.WalkPC}, {"R_SP", unwind.WalkSP}, {"R_FP", unwind.WalkFP}}
	if pg.probe.UserRegs {
		for _, r := range words {
			pg.emit(asm.LoadMem(asm.R1, regCtx, int16(8*regs[r.reg]), asm.DWord))
			pg.emit(asm.StoreMem(regState, int16(w)+r.off, asm.R1, asm.DWord))
		}
	} else {
		pg.call(asm.FnGetCurrentTaskBtf)
		pg.emit(asm.Mov.Reg(asm.R1, asm.R0))
		pg.call(asm.FnTaskPtRegs)
		pg.emit(asm.Mov.Reg(asm.R3, asm.R0))
		pg.addrOf(asm.R1, regState, w+unwind.WalkFrames)
		pg.emit(asm.Mov.Imm(asm.R2, int32(8*providers.NumUserRegs())))
		pg.call(asm.FnProbeReadKernel)
		for _, r := range words {
			pg.emit(asm.LoadMem(asm.R1, regState, int16(w+unwind.WalkFrames+8*regs[r.reg]), asm.DWord))
			pg.emit(asm.StoreMem(regState, int16(w)+r.off, asm.R1, asm.DWord))
		}
	}
	pg.call(asm.FnGetCurrentPidTgid)
	pg.emit(asm.RSh.Imm(asm.R0, 32))
	pg.emit(asm.StoreMem(regState, int16(w+unwind.WalkPid), asm.R0, asm.DWord))
	pg.emit(storeImm(regState, int16(w+unwind.WalkLimit), int64(limit), asm.DWord))
	for _, off := range []int{unwind.WalkFlags, unwind.WalkN, unwind.WalkStop} {
		pg.emit(storeImm(regState, int16(w+off), 0, asm.DWord))
	}
	pg.addrOf(asm.R0, regState, w)
	slot, err := pg.push()
	if err != nil {
		return 0, err
	}
	pg.depth--
	pg.emit(asm.Mov.Imm(asm.R1, int32(limit+1)))
	pg.emit(asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc, Constant: -1}.WithReference(cb))
	pg.emit(asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, int32(slot)))
	pg.emit(asm.Mov.Imm(asm.R4, 0))
	pg.call(asm.FnLoop)
	pg.notice(w)
	return w, nil
}

// notice asks user space for the walking process's mappings when it has
// not yet (the process is not in unwind.PidsMap) or when the walk stopped
// at an address in none of them (a library loaded since) and the time
// the process's entry holds has come: user space sets it after each read,
// soon while a process is still mapping new code, later and later while
// it is not (see engine's unwinder).
func (pg *probeGen) notice(w int) {
	send, done := pg.newLabel("notice_send"), pg.newLabel("notice_done")
	key, buf := w+unwind.WalkKey, w+unwind.WalkBuf
	pg.emit(asm.LoadMem(asm.R1, regState, int16(w+unwind.WalkPid), asm.DWord))
	pg.emit(asm.StoreMem(regState, int16(key), asm.R1, asm.Word))
	pg.mapPtr(asm.R1, unwind.PidsMap)
	pg.addrOf(asm.R2, regState, key)
	pg.call(asm.FnMapLookupElem)
	pg.emit(asm.JEq.Imm(asm.R0, 0, send))
	pg.emit(asm.LoadMem(asm.R1, regState, int16(w+unwind.WalkStop), asm.DWord))
	pg.emit(asm.JNE.Imm(asm.R1, int32(cfi.StopNoMapping), done))
	pg.emit(asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord))
	pg.emit(asm.StoreMem(regState, int16(buf), asm.R1, asm.DWord))
	pg.call(asm.FnKtimeGetNs)
	pg.emit(asm.LoadMem(asm.R1, regState, int16(buf), asm.DWord))
	pg.emit(asm.JLT.Reg(asm.R0, asm.R1, done))
	pg.label(send)
	pg.call(asm.FnKtimeGetNs)
	pg.emit(asm.Add.Imm(asm.R0, noticeHold))
	pg.emit(asm.StoreMem(regState, int16(buf), asm.R0, asm.DWord))
	pg.mapPtr(asm.R1, unwind.PidsMap)
	pg.addrOf(asm.R2, regState, key)
	pg.addrOf(asm.R3, regState, buf)
	pg.emit(asm.Mov.Imm(asm.R4, 0))
	pg.call(asm.FnMapUpdateElem)
	// The notice: a bare header.
	hdr := w + unwind.WalkSize
	pg.emit(storeImm(regState, int16(hdr+HdrEPID), UnwindEPID, asm.Word))
	pg.emit(asm.LoadMem(asm.R1, regState, int16(key), asm.Word))
	pg.emit(asm.StoreMem(regState, int16(hdr+HdrPID), asm.R1, asm.Word))
	pg.emit(storeImm(regState, int16(hdr+HdrSpec), 0, asm.Word))
	pg.mapPtr(asm.R1, EventsMap)
	pg.addrOf(asm.R2, regState, hdr)
	// BPF_RB_FORCE_WAKEUP: notices are few (one a process, held
	// noticeHold), and a program that only aggregates is polled seldom.
	pg.emit(asm.Mov.Imm(asm.R3, HdrSize), asm.Mov.Imm(asm.R4, 2))
	pg.call(asm.FnRingbufOutput)
	pg.label(done)
	pg.emit(asm.Mov.Imm(asm.R0, 0))
}

// unwindCallback adds the walker's callback to the program, once, and
// its maps to the output; it returns the callback's name.
func (pg *probeGen) unwindCallback() string {
	if name, ok := pg.callbacks["ustack"]; ok {
		return name
	}
	name := pg.newLabel("ustack_walk")
	if pg.callbacks == nil {
		pg.callbacks = map[string]string{}
	}
	pg.callbacks["ustack"] = name
	pg.subprogs = append(pg.subprogs, unwind.Callback(name)...)
	for k, spec := range unwind.MapSpecs() {
		pg.out.Maps[k] = spec
	}
	return name
}

// userStackInto writes the user stack of type t at base+off (types.StackT's
// layout: pid<<32 | frames, then the PCs, zero-filled).
func (pg *probeGen) userStackInto(t *types.Type, base asm.Register, off int) error {
	w, err := pg.userWalk(t.Len)
	if err != nil {
		return err
	}
	pg.zero(base, off+8, t.Size-8)
	limit := min(t.Len, unwind.MaxDepth)
	pg.emit(asm.LoadMem(asm.R2, regState, int16(w+unwind.WalkN), asm.DWord))
	pg.emit(asm.JLE.Imm(asm.R2, int32(limit), pg.labelNext("ustack_n")))
	pg.emit(asm.Mov.Imm(asm.R2, int32(limit)))
	pg.label(pg.lastLabel)
	pg.emit(asm.LSh.Imm(asm.R2, 3))
	pg.addrOf(asm.R1, base, off+8)
	pg.addrOf(asm.R3, regState, w+unwind.WalkFrames)
	pg.call(asm.FnProbeReadKernel)
	pg.emit(asm.LoadMem(asm.R1, regState, int16(w+unwind.WalkN), asm.DWord))
	pg.emit(asm.LoadMem(asm.R0, regState, int16(w+unwind.WalkPid), asm.DWord))
	pg.emit(asm.LSh.Imm(asm.R0, 32), asm.Or.Reg(asm.R0, asm.R1))
	pg.emit(asm.StoreMem(base, int16(off), asm.R0, asm.DWord))
	return nil
}

// userStackVar sets R0 to ustackdepth (frames, the marker of a cut walk
// not counted) or, with caller, to ucaller (the second frame, 0 when
// there is none).
func (pg *probeGen) userStackVar(caller bool) error {
	limit := unwind.MaxDepth
	if caller {
		limit = 2
	}
	w, err := pg.userWalk(limit)
	if err != nil {
		return err
	}
	done := pg.newLabel("ustackvar_done")
	pg.emit(asm.LoadMem(asm.R1, regState, int16(w+unwind.WalkN), asm.DWord))
	if caller {
		pg.emit(asm.Mov.Imm(asm.R0, 0))
		pg.emit(asm.JLT.Imm(asm.R1, 2, done))
		pg.emit(asm.LoadMem(asm.R0, regState, int16(w+unwind.WalkFrames+8), asm.DWord))
		pg.emit(asm.Mov.Reg(asm.R1, asm.R0))
	} else {
		pg.emit(asm.Mov.Reg(asm.R0, asm.R1))
		pg.emit(asm.JEq.Imm(asm.R1, 0, done))
		pg.emit(asm.JGT.Imm(asm.R1, int32(limit), done))
		pg.emit(asm.Sub.Imm(asm.R1, 1), asm.LSh.Imm(asm.R1, 3))
		pg.emit(asm.Add.Reg(asm.R1, regState))
		pg.emit(asm.LoadMem(asm.R1, asm.R1, int16(w+unwind.WalkFrames), asm.DWord))
	}
	// A marker is no frame.
	pg.emit(asm.LoadImm(asm.R2, -int64(^uint64(cfi.MarkerBase)+1), asm.DWord))
	pg.emit(asm.JLT.Reg(asm.R1, asm.R2, done))
	if caller {
		pg.emit(asm.Mov.Imm(asm.R0, 0))
	} else {
		pg.emit(asm.Sub.Imm(asm.R0, 1))
	}
	pg.label(done)
	pg.emit(asm.Mov.Reg(asm.R0, asm.R0))
	return nil
}
