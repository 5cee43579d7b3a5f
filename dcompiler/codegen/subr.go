package codegen

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/check"
	"github.com/dstar-trace/dstar/dcompiler/types"
)

// This file generates D's subroutines. Strings are NUL-terminated buffers
// in the state's scratch space. Searches are BPF loops bounded by the
// buffer's size, which the verifier can follow; copies use the probe-read
// string helper, whose source the verifier does not bound (so copying
// from the middle of a buffer needs no proof), only its destination.

// strTemp evaluates string e into fresh scratch of n bytes.
func (pg *probeGen) strTemp(e ast.Expr, n int) (int, error) {
	off := pg.allocScratch(n)
	return off, pg.strInto(e, regState, off, n)
}

// strLen leaves in R0 the length of the string at state+off (capacity n):
// the string helper returns what it copied, NUL included, and copying a
// string onto itself changes nothing.
func (pg *probeGen) strLen(off, n int) {
	pg.addrOf(asm.R1, regState, off)
	pg.emit(asm.Mov.Imm(asm.R2, int32(n)))
	pg.emit(asm.Mov.Reg(asm.R3, asm.R1))
	pg.call(asm.FnProbeReadKernelStr)
	pg.emit(asm.Sub.Imm(asm.R0, 1))
	ok := pg.newLabel("len_ok")
	pg.emit(asm.JSGE.Imm(asm.R0, 0, ok))
	pg.emit(asm.Mov.Imm(asm.R0, 0))
	pg.label(ok)
}

// copyFrom copies the string at R3 to base+off: size bytes at most, or the
// count in register sizeReg when it is not R0.
func (pg *probeGen) copyFrom(base asm.Register, off, size int) {
	pg.addrOf(asm.R1, base, off)
	pg.emit(asm.Mov.Imm(asm.R2, int32(size)))
	pg.call(asm.FnProbeReadKernelStr)
}

// loop emits "for r = from; r < limit; r++ { body }"; body may jump to
// brk to leave. r must not be clobbered by body (no helper calls there).
// Anything else the loop carries from one iteration to the next, or out
// of the loop, must go through memory (see varSlot): the verifier follows
// every iteration, and only values it does not know let the iterations'
// paths merge.
func (pg *probeGen) loop(r asm.Register, from int32, limit int32, body func(brk string)) {
	// The verifier explores a branch's fall-through first and keeps its
	// taken side on a stack of at most 8192 for later. A loop written the
	// plain way makes every way out a taken branch, and in a long loop
	// these pile up (one or more per iteration, for every loop in the
	// clause) until the stack overflows. So the ways out become
	// fall-throughs: the loop test is at the bottom, going round again is
	// its taken branch, and the body's jumps to brk are inverted to jump
	// round a plain jump to brk. Each iteration's way out is then explored
	// (and usually pruned) before the next iteration.
	head, test, brk := pg.newLabel("loop"), pg.newLabel("loop_test"), pg.newLabel("loop_end")
	pg.emit(asm.Mov.Imm(r, from), asm.Ja.Label(test))
	pg.label(head)
	start := len(pg.insns)
	body(brk)
	pg.emit(asm.Add.Imm(r, 1))
	pg.exitsFallThrough(start, brk)
	pg.label(test)
	pg.emit(asm.JSLT.Imm(r, limit, head))
	pg.label(brk)
}

// inverse pairs the conditional jumps whose negation is a jump too.
var inverse = map[asm.JumpOp]asm.JumpOp{
	asm.JEq: asm.JNE, asm.JNE: asm.JEq,
	asm.JGT: asm.JLE, asm.JLE: asm.JGT, asm.JGE: asm.JLT, asm.JLT: asm.JGE,
	asm.JSGT: asm.JSLE, asm.JSLE: asm.JSGT, asm.JSGE: asm.JSLT, asm.JSLT: asm.JSGE,
}

// exitsFallThrough rewrites each "if c goto brk" from instruction start
// on as "if !c goto next; goto brk; next:" (see loop). The instruction
// after it exists: loop emits one after the body.
func (pg *probeGen) exitsFallThrough(start int, brk string) {
	var out asm.Instructions
	insns := pg.insns[start:]
	for i, ins := range insns {
		inv, ok := inverse[ins.OpCode.JumpOp()]
		if ins.Reference() != brk || !ok {
			out = append(out, ins)
			continue
		}
		next := insns[i+1].Symbol()
		if next == "" {
			next = pg.newLabel("loop_stay")
			insns[i+1] = insns[i+1].WithSymbol(next)
		}
		ins.OpCode = ins.OpCode.SetJumpOp(inv)
		out = append(out, ins.WithReference(next), asm.Ja.Label(brk))
	}
	pg.insns = append(pg.insns[:start], out...)
}

// subrStr generates a string-valued subroutine into base+off. The
// searches return NULL where they find nothing: the NULL marker when
// nullable, a fault otherwise (see strIntoOrNull).
func (pg *probeGen) subrStr(e *ast.Call, base asm.Register, off, size int, nullable bool) error {
	S := pg.in.Opts.StrSize
	switch e.Fn {
	case "strjoin":
		// a then b into a buffer of twice the size, so that b's copy
		// at a's (variable) length stays inside it. The operands'
		// scratch comes after it, and is given back once they are
		// joined, so nested joins take 2S each, not 4S.
		joined := pg.allocScratch(2 * S)
		mark := pg.scratch
		a, err := pg.strTemp(e.Args[0], S)
		if err != nil {
			return err
		}
		b, err := pg.strTemp(e.Args[1], S)
		if err != nil {
			return err
		}
		defer func() {
			if !keepsScratch(e) {
				pg.releaseScratch(mark)
			}
		}()
		pg.addrOf(asm.R3, regState, a)
		pg.copyFrom(regState, joined, S)
		pg.strLen(joined, S)
		pg.emit(asm.JLT.Imm(asm.R0, int32(S), pg.labelNext("join_len")))
		pg.emit(asm.Mov.Imm(asm.R0, int32(S-1)))
		pg.label(pg.lastLabel)
		pg.addrOf(asm.R1, regState, joined)
		pg.emit(asm.Add.Reg(asm.R1, asm.R0))
		pg.emit(asm.Mov.Imm(asm.R2, int32(S)))
		pg.addrOf(asm.R3, regState, b)
		pg.call(asm.FnProbeReadKernelStr)
		pg.addrOf(asm.R3, regState, joined)
		pg.copyFrom(base, off, size)
	case "substr":
		return pg.substr(e, base, off, size)
	case "toupper", "tolower":
		if err := pg.strInto(e.Args[0], base, off, size); err != nil {
			return err
		}
		lo, hi, delta := int32('a'), int32('z'), int32(-32)
		if e.Fn == "tolower" {
			lo, hi, delta = 'A', 'Z', 32
		}
		pg.addrOf(asm.R1, base, off)
		pg.loop(asm.R2, 0, int32(size), func(brk string) {
			next := pg.newLabel("case_next")
			pg.emit(asm.Mov.Reg(asm.R3, asm.R1), asm.Add.Reg(asm.R3, asm.R2))
			pg.emit(asm.LoadMem(asm.R4, asm.R3, 0, asm.Byte))
			pg.emit(asm.JEq.Imm(asm.R4, 0, brk))
			pg.emit(asm.JLT.Imm(asm.R4, lo, next), asm.JGT.Imm(asm.R4, hi, next))
			pg.emit(asm.Add.Imm(asm.R4, delta), asm.StoreMem(asm.R3, 0, asm.R4, asm.Byte))
			pg.label(next)
		})
	case "strchr", "strrchr", "strstr":
		s, err := pg.strTemp(e.Args[0], S)
		if err != nil {
			return err
		}
		if err := pg.search(e, s, S); err != nil {
			return err
		}
		// R0: where it is found, or -1.
		found, done := pg.newLabel("found"), pg.newLabel("search_done")
		pg.emit(asm.JSGE.Imm(asm.R0, 0, found))
		if pg.nullStr(base, off, size, nullable) {
			pg.emit(asm.Ja.Label(done))
		}
		pg.label(found)
		pg.addrOf(asm.R3, regState, s)
		pg.emit(asm.Add.Reg(asm.R3, asm.R0))
		pg.copyFrom(base, off, size)
		pg.label(done)
	case "basename", "dirname":
		return pg.pathPart(e, base, off, size)
	case "cleanpath":
		return pg.cleanpath(e, base, off, size)
	case "lltostr":
		return pg.lltostr(e, base, off, size)
	case "inet_ntoa", "inet_ntoa6":
		return pg.inetNtoa(e, base, off, size)
	case "strtok":
		return pg.strtokInto(e, base, off, size, nullable)
	case "inet_ntop":
		return pg.inetNtop(e, base, off, size)
	case "link_ntop":
		return pg.linkNtop(e, base, off, size)
	default:
		return pg.errorf(e.Pos, "%s( ) is not supported here", e.Fn)
	}
	return nil
}

// labelNext makes a label for the next instruction the caller emits and
// remembers it.
func (pg *probeGen) labelNext(hint string) string {
	pg.lastLabel = pg.newLabel(hint)
	return pg.lastLabel
}

// subrInt generates an integer-valued subroutine into R0.
func (pg *probeGen) subrInt(e *ast.Call) error {
	S := pg.in.Opts.StrSize
	switch e.Fn {
	case "strlen":
		t, err := pg.typeOf(e.Args[0])
		if err != nil {
			return err
		}
		s, err := pg.strTemp(e.Args[0], t.Size)
		if err != nil {
			return err
		}
		pg.strLen(s, t.Size)
	case "index", "rindex":
		s, err := pg.strTemp(e.Args[0], S)
		if err != nil {
			return err
		}
		return pg.search(e, s, S)
	case "strtoll":
		return pg.strtoll(e)
	case "htons", "ntohs", "htonl", "ntohl", "htonll", "ntohll":
		if err := pg.expr(e.Args[0]); err != nil {
			return err
		}
		size := map[byte]asm.Size{'s': asm.Half, 'l': asm.Word}[e.Fn[len(e.Fn)-1]]
		if e.Fn[len(e.Fn)-2:] == "ll" {
			size = asm.DWord
		}
		pg.emit(asm.HostTo(asm.BE, asm.R0, size))
	case "rand":
		pg.call(asm.FnGetPrandomU32)
	case "getmajor", "getminor":
		// The kernel's dev_t: major in the high 12 bits, minor in the
		// low 20.
		if err := pg.expr(e.Args[0]); err != nil {
			return err
		}
		if e.Fn == "getmajor" {
			// dev_t is 32 bits: what lies above them is no part of it.
			pg.emit(asm.RSh.Imm(asm.R0, 20), asm.And.Imm(asm.R0, 0xfff))
		} else {
			pg.emit(asm.And.Imm(asm.R0, 0xfffff))
		}
	case "copyin":
		// Copy user memory into alloca( ) space, as Oracle's does: the
		// result is an alloca( ) pointer.
		S := pg.in.ScratchSize()
		if err := pg.expr(e.Args[0]); err != nil {
			return err
		}
		addr, err := pg.push()
		if err != nil {
			return pg.errorf(e.Pos, "%v", err)
		}
		defer func() { pg.depth-- }()
		if err := pg.expr(e.Args[1]); err != nil {
			return err
		}
		pg.emit(asm.Mov.Reg(asm.R2, asm.R0))
		ret := pg.allocScratch(8)
		badSize, full, ok := pg.newLabel("copyin_size"), pg.newLabel("copyin_full"), pg.newLabel("copyin_ok")
		pg.emit(asm.JGT.Imm(asm.R2, int32(S-8), badSize))
		pg.emit(asm.LoadMem(asm.R0, regState, int16(pg.allocaArea), asm.DWord))
		pg.emit(asm.JGT.Imm(asm.R0, int32(S-8), full))
		pg.emit(asm.Mov.Reg(asm.R3, asm.R0), asm.Add.Reg(asm.R3, asm.R2), asm.Add.Imm(asm.R3, 7), asm.And.Imm(asm.R3, -8))
		pg.emit(asm.JGT.Imm(asm.R3, int32(S), full))
		pg.emit(asm.StoreMem(regState, int16(pg.allocaArea), asm.R3, asm.DWord))
		pg.emit(asm.StoreMem(regState, int16(ret), asm.R0, asm.DWord))
		pg.emit(asm.Mov.Reg(asm.R1, regState), asm.Add.Reg(asm.R1, asm.R0), asm.Add.Imm(asm.R1, int32(pg.allocaArea)))
		pg.emit(asm.LoadMem(asm.R3, asm.RFP, addr, asm.DWord))
		pg.call(asm.FnProbeReadUser)
		pg.emit(asm.JEq.Imm(asm.R0, 0, ok))
		pg.emit(asm.LoadMem(asm.R1, asm.RFP, addr, asm.DWord))
		pg.raise(FaultBadAddr, asm.R1, true)
		pg.label(badSize)
		pg.raise(FaultBadSize, asm.R2, true)
		pg.label(full)
		pg.raise(FaultNoScratch, asm.R0, false)
		pg.label(ok)
		pg.emit(asm.LoadMem(asm.R0, regState, int16(ret), asm.DWord))
	case "alloca":
		// Oracle's: the space's top moves up by the size, rounded up
		// to 8; the old top is the pointer.
		S := pg.in.ScratchSize()
		if n, ok := pg.in.ConstInt(e.Args[0]); ok {
			pg.emit(asm.Mov.Imm(asm.R2, int32(n)))
		} else {
			if err := pg.expr(e.Args[0]); err != nil {
				return err
			}
			pg.emit(asm.Mov.Reg(asm.R2, asm.R0))
		}
		full, ok := pg.newLabel("alloca_full"), pg.newLabel("alloca_ok")
		pg.emit(asm.LoadMem(asm.R0, regState, int16(pg.allocaArea), asm.DWord))
		pg.emit(asm.JGT.Imm(asm.R2, int32(S-8), full))
		pg.emit(asm.Mov.Reg(asm.R3, asm.R0), asm.Add.Reg(asm.R3, asm.R2), asm.Add.Imm(asm.R3, 7), asm.And.Imm(asm.R3, -8))
		pg.emit(asm.JLE.Imm(asm.R3, int32(S), ok))
		pg.label(full)
		pg.raise(FaultNoScratch, asm.R0, false)
		pg.label(ok)
		pg.emit(asm.StoreMem(regState, int16(pg.allocaArea), asm.R3, asm.DWord))
	case "bcopy":
		return pg.copyToAlloca(e, 0, 1, 2, asm.FnProbeReadKernel)
	case "copyinto":
		return pg.copyToAlloca(e, 0, 2, 1, asm.FnProbeReadUser)
	case "copyout":
		return pg.copyout(e)
	case "raise", "stop":
		// Signals go to the current process, from the kernel.
		if e.Fn == "stop" {
			pg.emit(asm.Mov.Imm(asm.R1, 19)) // SIGSTOP
		} else {
			if err := pg.expr(e.Args[0]); err != nil {
				return err
			}
			pg.emit(asm.Mov.Reg(asm.R1, asm.R0))
		}
		pg.call(asm.FnSendSignal)
		pg.emit(asm.Mov.Imm(asm.R0, 0))
	case "chill":
		// Spin until the time has passed: at most 8192 clock reads, as
		// the verifier must see an end.
		if err := pg.expr(e.Args[0]); err != nil {
			return err
		}
		until := pg.allocScratch(8)
		pg.emit(asm.StoreMem(regState, int16(until), asm.R0, asm.DWord))
		pg.call(asm.FnKtimeGetNs)
		pg.emit(asm.LoadMem(asm.R1, regState, int16(until), asm.DWord))
		pg.emit(asm.Add.Reg(asm.R0, asm.R1))
		pg.emit(asm.StoreMem(regState, int16(until), asm.R0, asm.DWord))
		// The count of reads lives on the stack, where the verifier
		// follows its value and so sees the loop end.
		pg.emit(asm.Mov.Imm(asm.R0, 0))
		spin, err := pg.push()
		if err != nil {
			return pg.errorf(e.Pos, "%v", err)
		}
		defer func() { pg.depth-- }()
		head, done := pg.newLabel("chill"), pg.newLabel("chill_done")
		pg.label(head)
		pg.emit(asm.LoadMem(asm.R1, asm.RFP, spin, asm.DWord))
		pg.emit(asm.JGE.Imm(asm.R1, 8192, done))
		pg.emit(asm.Add.Imm(asm.R1, 1), asm.StoreMem(asm.RFP, spin, asm.R1, asm.DWord))
		pg.call(asm.FnKtimeGetNs)
		pg.emit(asm.LoadMem(asm.R1, regState, int16(until), asm.DWord))
		pg.emit(asm.JLT.Reg(asm.R0, asm.R1, head))
		pg.label(done)
		if pg.tstamp != 0 {
			// As in DTrace, timestamp moves on after chill( ).
			pg.emit(storeImm(regState, int16(pg.tstamp), 0, asm.DWord))
		}
		pg.emit(asm.Mov.Imm(asm.R0, 0))
	case "copyoutstr":
		// Write a string into the process's memory.
		t, err := pg.typeOf(e.Args[0])
		if err != nil {
			return err
		}
		src, err := pg.strTemp(e.Args[0], t.Size)
		if err != nil {
			return err
		}
		if err := pg.expr(e.Args[2]); err != nil {
			return err
		}
		n, err := pg.push()
		if err != nil {
			return pg.errorf(e.Pos, "%v", err)
		}
		defer func() { pg.depth-- }()
		if err := pg.expr(e.Args[1]); err != nil {
			return err
		}
		pg.emit(asm.Mov.Reg(asm.R1, asm.R0))
		pg.addrOf(asm.R2, regState, src)
		pg.emit(asm.LoadMem(asm.R3, asm.RFP, n, asm.DWord))
		// The length, bounded by the buffer for the verifier.
		pg.emit(asm.JLE.Imm(asm.R3, int32(t.Size), pg.labelNext("cos_len")))
		pg.emit(asm.Mov.Imm(asm.R3, int32(t.Size)))
		pg.label(pg.lastLabel)
		pg.call(asm.FnProbeWriteUser)
		pg.emit(asm.Mov.Imm(asm.R0, 0))
	case "speculation":
		// The first free buffer, taken atomically, numbered from 1; 0
		// when all are in use.
		done := pg.newLabel("spec_done")
		for i := 0; i < pg.opts.NSpec; i++ {
			pg.emit(asm.Mov.Imm(asm.R1, 1))
			pg.emit(xchg(regGlob, asm.R1, int16(GlSpecs+8*i)))
			pg.emit(asm.Mov.Imm(asm.R0, int32(i+1)))
			pg.emit(asm.JEq.Imm(asm.R1, 0, done))
		}
		// Counted for the consumer to report as a failed speculation.
		pg.emit(asm.Mov.Imm(asm.R1, 1))
		add := asm.StoreXAdd(regGlob, asm.R1, asm.DWord)
		add.Offset = GlSpecFailed
		pg.emit(add)
		pg.emit(asm.Mov.Imm(asm.R0, 0))
		pg.label(done)
	case "progenyof":
		return pg.progenyof(e)
	case "mutex_owned", "mutex_owner", "mutex_type_adaptive", "mutex_type_spin":
		return pg.mutexSubr(e)
	default:
		return pg.errorf(e.Pos, "%s( ) is not supported here", e.Fn)
	}
	return nil
}

// search finds in the string at state+s (capacity n) what index, rindex,
// strchr, strrchr and strstr look for, leaving its position or -1 in R0.
// The needle of index, rindex and strstr must be a constant string.
func (pg *probeGen) search(e *ast.Call, s, n int) error {
	var needle []byte
	switch e.Fn {
	case "strchr", "strrchr":
		c, ok := pg.in.ConstInt(e.Args[1])
		if !ok {
			// A character from an expression: compare with a register.
			if err := pg.expr(e.Args[1]); err != nil {
				return err
			}
			tmp, err := pg.push()
			if err != nil {
				return pg.errorf(e.Pos, "%v", err)
			}
			pg.depth--
			return pg.searchLoop(e.Fn == "strrchr", s, n, nil, tmp)
		}
		needle = []byte{byte(c)}
	default:
		lit, ok := literalOf(pg, e.Args[1])
		if !ok || lit == "" {
			return pg.searchVar(e, s, n)
		}
		needle = []byte(lit)
	}
	last := e.Fn == "rindex" || e.Fn == "strrchr"
	if len(e.Args) == 3 {
		// index(s, t, start): start at a position (rindex: search up to it).
		if err := pg.expr(e.Args[2]); err != nil {
			return err
		}
		start, err := pg.push()
		if err != nil {
			return pg.errorf(e.Pos, "%v", err)
		}
		pg.depth--
		return pg.searchFrom(last, s, n, needle, start)
	}
	return pg.searchLoop(last, s, n, needle, 0)
}

// searchVar is search for a needle known only at run time: every
// position needs a loop over the needle, so the positions are bpf_loop's
// iterations.
func (pg *probeGen) searchVar(e *ast.Call, s, n int) error {
	last, from := e.Fn == "rindex", len(e.Args) == 3
	t, err := pg.strTemp(e.Args[1], n)
	if err != nil {
		return err
	}
	vars := pg.allocScratch(16) // the answer, then the start
	pg.emit(storeImm(regState, int16(vars), -1, asm.DWord))
	if from {
		if err := pg.expr(e.Args[2]); err != nil {
			return err
		}
		pg.emit(asm.StoreMem(regState, int16(vars+8), asm.R0, asm.DWord))
	}
	// In the callback, R1 is the position, R6 the string, R7 the needle,
	// R8 the answer and start.
	ret := func(v int32) { pg.emit(asm.Mov.Imm(asm.R0, v), asm.Return()) }
	key := fmt.Sprintf("search:%v:%v:%d", last, from, n)
	cb := pg.callback(key, 3, func() {
		pg.emit(asm.JLT.Imm(asm.R1, int32(n), pg.labelNext("at_in")))
		ret(1)
		pg.label(pg.lastLabel)
		match, nomatch := pg.newLabel("at_match"), pg.newLabel("at_nomatch")
		if from {
			// rindex stops past the start; index skips to it, but not
			// past the string's end.
			pg.emit(asm.LoadMem(asm.R4, asm.R8, 8, asm.DWord))
			if last {
				pg.emit(asm.JSLE.Reg(asm.R1, asm.R4, pg.labelNext("at_from")))
				ret(1)
				pg.label(pg.lastLabel)
			} else {
				pg.emit(asm.JSLT.Reg(asm.R1, asm.R4, nomatch))
			}
		}
		pg.loop(asm.R2, 0, int32(n), func(brk string) {
			pg.emit(asm.Mov.Reg(asm.R3, asm.R7), asm.Add.Reg(asm.R3, asm.R2), asm.LoadMem(asm.R3, asm.R3, 0, asm.Byte))
			pg.emit(asm.JEq.Imm(asm.R3, 0, match))
			pg.emit(asm.Mov.Reg(asm.R4, asm.R1), asm.Add.Reg(asm.R4, asm.R2))
			pg.emit(asm.JGE.Imm(asm.R4, int32(n), nomatch))
			pg.emit(asm.Mov.Reg(asm.R5, asm.R6), asm.Add.Reg(asm.R5, asm.R4), asm.LoadMem(asm.R5, asm.R5, 0, asm.Byte))
			pg.emit(asm.JNE.Reg(asm.R5, asm.R3, nomatch))
		})
		pg.emit(asm.Ja.Label(nomatch))
		pg.label(match)
		pg.emit(asm.StoreMem(asm.R8, 0, asm.R1, asm.DWord))
		if !last {
			ret(1)
		}
		// The string ends: nothing further can match.
		pg.label(nomatch)
		pg.emit(asm.Mov.Reg(asm.R3, asm.R6), asm.Add.Reg(asm.R3, asm.R1), asm.LoadMem(asm.R3, asm.R3, 0, asm.Byte))
		pg.emit(asm.JNE.Imm(asm.R3, 0, pg.labelNext("at_more")))
		ret(1)
		pg.label(pg.lastLabel)
		ret(0)
	})
	done := pg.newLabel("search_done")
	if from {
		// An empty needle, from a start: that start, brought into the
		// string (0 to its length), as DTrace's index and rindex give it
		// even where a needle could not match.
		nonEmpty := pg.newLabel("search_needle")
		pg.emit(asm.LoadMem(asm.R0, regState, int16(t), asm.Byte))
		pg.emit(asm.JNE.Imm(asm.R0, 0, nonEmpty))
		pg.strLen(s, n) // R0 = len
		pg.emit(asm.LoadMem(asm.R1, regState, int16(vars+8), asm.DWord))
		pg.emit(asm.JSGE.Imm(asm.R1, 0, pg.labelNext("search_from0")))
		pg.emit(asm.Mov.Imm(asm.R1, 0))
		pg.label(pg.lastLabel)
		pg.emit(asm.JSLE.Reg(asm.R1, asm.R0, pg.labelNext("search_fromlen")))
		pg.emit(asm.Mov.Reg(asm.R1, asm.R0))
		pg.label(pg.lastLabel)
		pg.emit(asm.Mov.Reg(asm.R0, asm.R1), asm.Ja.Label(done))
		pg.label(nonEmpty)
	}
	if err := pg.bpfLoop(int32(n), cb, s, t, vars); err != nil {
		return pg.errorf(e.Pos, "%v", err)
	}
	pg.emit(asm.LoadMem(asm.R0, regState, int16(vars), asm.DWord))
	pg.emit(asm.JSLT.Imm(asm.R0, int32(n), pg.labelNext("search_in")))
	pg.emit(asm.Mov.Imm(asm.R0, -1))
	pg.label(pg.lastLabel)
	pg.label(done)
	return nil
}

// searchLoop scans every position for needle (or for the byte in the
// stack slot charSlot when needle is nil), leaving the first (or last)
// match or -1 in R0. An empty needle matches at 0 (or at the end).
func (pg *probeGen) searchLoop(last bool, s, n int, needle []byte, charSlot int16) error {
	return pg.searchBetween(last, s, n, needle, charSlot, 0)
}

// searchFrom is searchLoop starting at the position in stack slot start
// (for rindex, ending there).
func (pg *probeGen) searchFrom(last bool, s, n int, needle []byte, start int16) error {
	return pg.searchBetween(last, s, n, needle, 0, start)
}

func (pg *probeGen) searchBetween(last bool, s, n int, needle []byte, charSlot, start int16) error {
	m := len(needle)
	if needle == nil {
		m = 1
	}
	// The answer lives in memory; R1 points at the string; R2 is the
	// position.
	ans := pg.allocScratch(8)
	pg.emit(storeImm(regState, int16(ans), -1, asm.DWord))
	pg.addrOf(asm.R1, regState, s)
	if needle == nil {
		pg.emit(asm.LoadMem(asm.R0, asm.RFP, charSlot, asm.DWord), asm.And.Imm(asm.R0, 0xff))
	}
	limit := int32(n - m)
	if m == 0 {
		limit = int32(n - 1)
	}
	pg.loop(asm.R2, 0, limit+1, func(brk string) {
		next := pg.newLabel("search_next")
		pg.emit(asm.Mov.Reg(asm.R3, asm.R1), asm.Add.Reg(asm.R3, asm.R2))
		if start != 0 { // stack slots are below the frame pointer
			pg.emit(asm.LoadMem(asm.R4, asm.RFP, start, asm.DWord))
			if last {
				pg.emit(asm.JSGT.Reg(asm.R2, asm.R4, brk))
			} else {
				pg.emit(asm.JSLT.Reg(asm.R2, asm.R4, next))
			}
		}
		if needle == nil {
			pg.emit(asm.LoadMem(asm.R4, asm.R3, 0, asm.Byte))
			pg.emit(asm.JNE.Reg(asm.R4, asm.R0, pg.labelNext("nomatch")))
		} else {
			for k, c := range needle {
				pg.emit(asm.LoadMem(asm.R4, asm.R3, int16(k), asm.Byte))
				pg.emit(asm.JNE.Imm(asm.R4, int32(c), next))
			}
		}
		pg.emit(asm.StoreMem(regState, int16(ans), asm.R2, asm.DWord))
		if !last {
			pg.emit(asm.Ja.Label(brk))
		}
		if needle == nil {
			pg.label(pg.lastLabel)
		}
		pg.label(next)
		// The string ends: nothing further can match.
		pg.emit(asm.LoadMem(asm.R4, asm.R3, 0, asm.Byte))
		pg.emit(asm.JEq.Imm(asm.R4, 0, brk))
	})
	// R0: the position, known to the verifier only as -1 or 0..n-1.
	pg.emit(asm.LoadMem(asm.R0, regState, int16(ans), asm.DWord))
	pg.emit(asm.JSLT.Imm(asm.R0, int32(n), pg.labelNext("search_in")))
	pg.emit(asm.Mov.Imm(asm.R0, -1))
	pg.label(pg.lastLabel)
	return nil
}

// inetNtoa formats the address an ipaddr_t or in6_addr_t pointer points
// at: dotted decimal, or IPv6 text for inet_ntoa6.
func (pg *probeGen) inetNtoa(e *ast.Call, base asm.Register, off, size int) error {
	if err := pg.expr(e.Args[0]); err != nil {
		return err
	}
	// inet_ntoa6(a) writes an IPv4-mapped or -compatible address as a
	// plain dotted quad; inet_ntoa6(a, 1) as inet_ntop does.
	strict := false
	if len(e.Args) == 2 {
		n, _ := pg.in.ConstInt(e.Args[1])
		strict = n != 0
	}
	pg.formatAddr(e.Fn == "inet_ntoa6", strict, base, off, size)
	return nil
}

// inetNtop formats an address of family AF_INET or AF_INET6; any other
// family is an illegal operation, as in DTrace.
func (pg *probeGen) inetNtop(e *ast.Call, base asm.Register, off, size int) error {
	if err := pg.expr(e.Args[0]); err != nil {
		return err
	}
	af := pg.allocScratch(8)
	pg.emit(asm.StoreMem(regState, int16(af), asm.R0, asm.DWord))
	if err := pg.expr(e.Args[1]); err != nil {
		return err
	}
	v4, v6, done := pg.newLabel("ntop_v4"), pg.newLabel("ntop_v6"), pg.newLabel("ntop_done")
	pg.emit(asm.LoadMem(asm.R1, regState, int16(af), asm.DWord))
	pg.emit(asm.JEq.Imm(asm.R1, 2, v4), asm.JEq.Imm(asm.R1, 10, v6))
	pg.emit(asm.Mov.Imm(asm.R1, 0))
	pg.raise(FaultIllOp, asm.R1, false)
	pg.label(v4)
	pg.formatAddr(false, false, base, off, size)
	pg.emit(asm.Ja.Label(done))
	pg.label(v6)
	pg.formatAddr(true, true, base, off, size)
	pg.label(done)
	return nil
}

// linkNtop formats a link-layer address as hex bytes joined by colons:
// 6 bytes for ARPHRD_ETHER, 20 for ARPHRD_INFINIBAND; any other type is
// an illegal operation, as in DTrace.
func (pg *probeGen) linkNtop(e *ast.Call, base asm.Register, off, size int) error {
	if err := pg.expr(e.Args[0]); err != nil {
		return err
	}
	typ := pg.allocScratch(8)
	pg.emit(asm.StoreMem(regState, int16(typ), asm.R0, asm.DWord))
	known := pg.newLabel("link_type_ok")
	pg.emit(asm.JEq.Imm(asm.R0, 1, known), asm.JEq.Imm(asm.R0, 32, known))
	pg.emit(asm.Mov.Imm(asm.R1, 0))
	pg.raise(FaultIllOp, asm.R1, false)
	pg.label(known)
	addr, _ := pg.bytesAddr(e.Args[1])
	if err := pg.expr(addr); err != nil {
		return err
	}
	ib, done := pg.newLabel("link_ib"), pg.newLabel("link_done")
	pg.emit(asm.LoadMem(asm.R1, regState, int16(typ), asm.DWord), asm.JEq.Imm(asm.R1, 32, ib))
	for _, n := range []int{6, 20} {
		f := pg.newAddrFormatter(n)
		for i := 0; i < n; i++ {
			for _, shift := range []int32{4, 0} {
				digit := pg.newLabel("link_digit")
				pg.emit(asm.LoadMem(asm.R3, regState, int16(f.addr+i), asm.Byte), asm.RSh.Imm(asm.R3, shift), asm.And.Imm(asm.R3, 0xf))
				pg.emit(asm.JLT.Imm(asm.R3, 10, digit), asm.Add.Imm(asm.R3, 'a'-'0'-10))
				pg.label(digit)
				pg.emit(asm.Add.Imm(asm.R3, '0'))
				f.put(asm.R3)
			}
			if i < n-1 {
				f.putChar(':')
			}
		}
		f.finish(base, off, size)
		if n == 6 {
			pg.emit(asm.Ja.Label(done))
			pg.label(ib)
		}
	}
	pg.label(done)
	return nil
}

// formatAddr formats the IPv4 (or IPv6) address at the kernel address in
// R0 into base+off; strict, an IPv6 address that holds an IPv4 one as
// inet_ntop(3) does ("::ffff:1.2.3.4"), else as the plain IPv4 address.
func (pg *probeGen) formatAddr(v6, strict bool, base asm.Register, off, size int) {
	if v6 {
		f := pg.newAddrFormatter(16)
		f.ipv6(strict)
		f.finish(base, off, size)
		return
	}
	f := pg.newAddrFormatter(4)
	f.dotted(0)
	f.finish(base, off, size)
}

// addrFormatter writes an address's text into a scratch buffer. The
// write position lives in map memory so that the verifier sees it as a
// bounded unknown: kept in a register, every path through the digit
// branches would be a distinct state, and there are too many to verify.
type addrFormatter struct {
	pg            *probeGen
	addr, buf, at int // scratch offsets: the address bytes, the text, the position
}

// newAddrFormatter reads n address bytes from the kernel address in R0.
func (pg *probeGen) newAddrFormatter(n int) *addrFormatter {
	f := &addrFormatter{pg: pg, addr: pg.allocScratch(max(n, 16)), buf: pg.allocScratch(64), at: pg.allocScratch(8)}
	pg.allocaAddr(asm.R3, asm.R0, asm.R1, n, asm.R2, "")
	pg.addrOf(asm.R1, regState, f.addr)
	pg.emit(asm.Mov.Imm(asm.R2, int32(n)))
	pg.call(asm.FnProbeReadKernel)
	ok := pg.newLabel("ntoa_read")
	pg.emit(asm.JEq.Imm(asm.R0, 0, ok))
	pg.emit(asm.Mov.Imm(asm.R1, 0)) // the address is gone: report 0
	pg.raise(FaultBadAddr, asm.R1, true)
	pg.label(ok)
	pg.emit(storeImm(regState, int16(f.at), 0, asm.DWord))
	return f
}

// put appends the byte in r (not R0 or R1, which it uses).
func (f *addrFormatter) put(r asm.Register) {
	pg := f.pg
	pg.emit(asm.LoadMem(asm.R0, regState, int16(f.at), asm.DWord), asm.And.Imm(asm.R0, 63))
	pg.addrOf(asm.R1, regState, f.buf)
	pg.emit(asm.Add.Reg(asm.R1, asm.R0), asm.StoreMem(asm.R1, 0, r, asm.Byte))
	pg.emit(asm.Add.Imm(asm.R0, 1), asm.StoreMem(regState, int16(f.at), asm.R0, asm.DWord))
}

func (f *addrFormatter) putChar(c byte) {
	f.pg.emit(asm.Mov.Imm(asm.R4, int32(c)))
	f.put(asm.R4)
}

// dotted writes address bytes from..from+3 as a dotted quad.
func (f *addrFormatter) dotted(from int) {
	pg := f.pg
	for b := from; b < from+4; b++ {
		pg.emit(asm.LoadMem(asm.R3, regState, int16(f.addr+b), asm.Byte))
		two, one := pg.newLabel("ntoa_two"), pg.newLabel("ntoa_one")
		pg.emit(asm.JLT.Imm(asm.R3, 100, two))
		pg.emit(asm.Mov.Reg(asm.R4, asm.R3), asm.Div.Imm(asm.R4, 100), asm.Add.Imm(asm.R4, '0'))
		f.put(asm.R4)
		pg.emit(asm.Mod.Imm(asm.R3, 100))
		pg.emit(asm.Mov.Reg(asm.R4, asm.R3), asm.Div.Imm(asm.R4, 10), asm.Add.Imm(asm.R4, '0'))
		f.put(asm.R4)
		pg.emit(asm.Mod.Imm(asm.R3, 10), asm.Ja.Label(one))
		pg.label(two)
		pg.emit(asm.JLT.Imm(asm.R3, 10, one))
		pg.emit(asm.Mov.Reg(asm.R4, asm.R3), asm.Div.Imm(asm.R4, 10), asm.Add.Imm(asm.R4, '0'))
		f.put(asm.R4)
		pg.emit(asm.Mod.Imm(asm.R3, 10))
		pg.label(one)
		pg.emit(asm.Add.Imm(asm.R3, '0'))
		f.put(asm.R3)
		if b < from+3 {
			f.putChar('.')
		}
	}
}

// word loads the big-endian 16-bit group i into R3.
func (f *addrFormatter) word(i int) {
	pg := f.pg
	pg.emit(asm.LoadMem(asm.R3, regState, int16(f.addr+2*i), asm.Byte), asm.LSh.Imm(asm.R3, 8))
	pg.emit(asm.LoadMem(asm.R4, regState, int16(f.addr+2*i+1), asm.Byte), asm.Or.Reg(asm.R3, asm.R4))
}

// ipv6 writes the 16 address bytes as RFC 5952 text: groups in hex
// without leading zeros, the first longest run of two or more zero groups
// as "::", and IPv4-mapped and -compatible addresses ending in a dotted
// quad, as inet_ntop(3) writes them.
func (f *addrFormatter) ipv6(strict bool) {
	pg := f.pg
	finished := pg.newLabel("v6_finished")
	if !strict {
		// Mapped (::ffff:a.b.c.d) or compatible (::a.b.c.d, but not ::
		// or ::1): the IPv4 address alone.
		v6 := pg.newLabel("v6_plain")
		for i := 0; i < 5; i++ {
			pg.emit(asm.LoadMem(asm.R3, regState, int16(f.addr+2*i), asm.Half), asm.JNE.Imm(asm.R3, 0, v6))
		}
		f.word(5)
		quad := pg.newLabel("v6_quad4")
		pg.emit(asm.JEq.Imm(asm.R3, 0xffff, quad), asm.JNE.Imm(asm.R3, 0, v6))
		f.word(6)
		pg.emit(asm.JNE.Imm(asm.R3, 0, quad))
		f.word(7)
		pg.emit(asm.JLE.Imm(asm.R3, 1, v6))
		pg.label(quad)
		f.dotted(12)
		pg.emit(asm.Ja.Label(finished))
		pg.label(v6)
	}
	run := pg.allocScratch(16) // the run's first group, then one past its last
	// Find the run: R1 its start, R2 its length; R5 the current run's
	// start, R0 its length.
	pg.emit(asm.Mov.Imm(asm.R1, 99), asm.Mov.Imm(asm.R2, 0), asm.Mov.Imm(asm.R0, 0))
	for i := 0; i < 8; i++ {
		zero, next := pg.newLabel("v6_zero"), pg.newLabel("v6_next")
		pg.emit(asm.LoadMem(asm.R3, regState, int16(f.addr+2*i), asm.Half))
		pg.emit(asm.JEq.Imm(asm.R3, 0, zero), asm.Mov.Imm(asm.R0, 0), asm.Ja.Label(next))
		pg.label(zero)
		cont := pg.newLabel("v6_cont")
		pg.emit(asm.JNE.Imm(asm.R0, 0, cont), asm.Mov.Imm(asm.R5, int32(i)))
		pg.label(cont)
		pg.emit(asm.Add.Imm(asm.R0, 1), asm.JLE.Reg(asm.R0, asm.R2, next))
		pg.emit(asm.Mov.Reg(asm.R2, asm.R0), asm.Mov.Reg(asm.R1, asm.R5))
		pg.label(next)
	}
	long := pg.newLabel("v6_long")
	pg.emit(asm.JGE.Imm(asm.R2, 2, long), asm.Mov.Imm(asm.R1, 99), asm.Mov.Imm(asm.R2, 0))
	pg.label(long)
	pg.emit(asm.StoreMem(regState, int16(run), asm.R1, asm.DWord))
	pg.emit(asm.Add.Reg(asm.R2, asm.R1), asm.StoreMem(regState, int16(run+8), asm.R2, asm.DWord))
	for i := 0; i < 8; i++ {
		outside, next := pg.newLabel("v6_outside"), pg.newLabel("v6_group")
		pg.emit(asm.LoadMem(asm.R2, regState, int16(run), asm.DWord))
		pg.emit(asm.LoadMem(asm.R5, regState, int16(run+8), asm.DWord))
		pg.emit(asm.JGT.Imm(asm.R2, int32(i), outside), asm.JLE.Imm(asm.R5, int32(i), outside))
		pg.emit(asm.JNE.Imm(asm.R2, int32(i), next))
		f.putChar(':')
		pg.emit(asm.Ja.Label(next))
		pg.label(outside)
		if i > 0 {
			f.putChar(':')
		}
		if i == 6 {
			// ::ffff:a.b.c.d and ::a.b.c.d: the run is groups 0-4 with
			// group 5 0xffff, or groups 0-5.
			hex, quad := pg.newLabel("v6_hex"), pg.newLabel("v6_quad")
			pg.emit(asm.JNE.Imm(asm.R2, 0, hex), asm.JEq.Imm(asm.R5, 6, quad), asm.JNE.Imm(asm.R5, 5, hex))
			f.word(5)
			pg.emit(asm.JNE.Imm(asm.R3, 0xffff, hex))
			pg.label(quad)
			f.dotted(12)
			pg.emit(asm.Ja.Label(finished))
			pg.label(hex)
		}
		f.word(i)
		for k := 3; k >= 0; k-- {
			skip, digit := pg.newLabel("v6_skip"), pg.newLabel("v6_digit")
			if k > 0 {
				pg.emit(asm.JLT.Imm(asm.R3, 1<<(4*k), skip))
			}
			pg.emit(asm.Mov.Reg(asm.R4, asm.R3), asm.RSh.Imm(asm.R4, int32(4*k)), asm.And.Imm(asm.R4, 0xf))
			pg.emit(asm.JLT.Imm(asm.R4, 10, digit), asm.Add.Imm(asm.R4, 'a'-'0'-10))
			pg.label(digit)
			pg.emit(asm.Add.Imm(asm.R4, '0'))
			f.put(asm.R4)
			pg.label(skip)
		}
		pg.label(next)
	}
	pg.emit(asm.LoadMem(asm.R5, regState, int16(run+8), asm.DWord))
	pg.emit(asm.JNE.Imm(asm.R5, 8, finished))
	f.putChar(':')
	pg.label(finished)
}

// finish terminates the text and copies it to base+off.
func (f *addrFormatter) finish(base asm.Register, off, size int) {
	f.putChar(0)
	f.pg.addrOf(asm.R3, regState, f.buf)
	f.pg.copyFrom(base, off, size)
}

// copyToAlloca copies size bytes from src to dest, the arguments of e
// at those indexes, evaluated in e's order. As in DTrace, dest must lie
// in the clause's alloca( ) space (an invalid address otherwise), src too
// when it is an alloca( ) pointer, and a size that does not fit is an
// invalid size.
func (pg *probeGen) copyToAlloca(e *ast.Call, src, dest, size int, read asm.BuiltinFunc) error {
	if pg.allocaArea == 0 {
		return pg.errorf(e.Pos, "internal error: %s( ) in a clause with no alloca( ) space", e.Fn)
	}
	slots := pg.allocScratch(24) // src, dest, size
	role := map[int]int{src: 0, dest: 1, size: 2}
	for i, x := range e.Args {
		slot := slots + 8*role[i]
		if t, err := pg.typeOf(x); err == nil && t.IsString() {
			// A string is copied from its bytes.
			buf, err := pg.strTemp(x, t.Size)
			if err != nil {
				return err
			}
			pg.addrOf(asm.R0, regState, buf)
		} else if err := pg.expr(x); err != nil {
			return err
		}
		pg.emit(asm.StoreMem(regState, int16(slot), asm.R0, asm.DWord))
	}
	pg.emit(asm.LoadMem(asm.R2, regState, int16(slots+16), asm.DWord))
	pg.emit(asm.LoadMem(asm.R3, regState, int16(slots), asm.DWord))
	if read == asm.FnProbeReadKernel {
		pg.allocaAddr(asm.R3, asm.R3, asm.R4, -1, asm.R2, "")
	}
	notAlloca := pg.newLabel("copy_not_alloca")
	pg.emit(asm.LoadMem(asm.R1, regState, int16(slots+8), asm.DWord))
	pg.allocaAddr(asm.R1, asm.R1, asm.R4, -1, asm.R2, notAlloca)
	pg.call(read)
	done := pg.newLabel("copy_done")
	pg.emit(asm.JEq.Imm(asm.R0, 0, done))
	pg.emit(asm.LoadMem(asm.R1, regState, int16(slots), asm.DWord))
	pg.raise(FaultBadAddr, asm.R1, true)
	pg.label(notAlloca)
	pg.emit(asm.LoadMem(asm.R1, regState, int16(slots+8), asm.DWord))
	pg.raise(FaultBadAddr, asm.R1, true)
	pg.label(done)
	pg.emit(asm.Mov.Imm(asm.R0, 0))
	return nil
}

// copyout(buf, addr, size) writes size bytes from buf to the process's
// memory at addr, through a copy in scratch that the verifier can bound.
func (pg *probeGen) copyout(e *ast.Call) error {
	S := pg.in.ScratchSize()
	slots := pg.allocScratch(24) // buf, addr, size
	for i, x := range e.Args {
		if t, err := pg.typeOf(x); err == nil && t.IsString() {
			buf, err := pg.strTemp(x, t.Size)
			if err != nil {
				return err
			}
			pg.addrOf(asm.R0, regState, buf)
		} else if err := pg.expr(x); err != nil {
			return err
		}
		pg.emit(asm.StoreMem(regState, int16(slots+8*i), asm.R0, asm.DWord))
	}
	tmp := pg.allocScratch(S)
	pg.emit(asm.LoadMem(asm.R2, regState, int16(slots+16), asm.DWord))
	bad, ok := pg.newLabel("copyout_size"), pg.newLabel("copyout_ok")
	pg.emit(asm.JGT.Imm(asm.R2, int32(S-8), bad), asm.Ja.Label(ok))
	pg.label(bad)
	pg.raise(FaultBadSize, asm.R2, true)
	pg.label(ok)
	pg.emit(asm.LoadMem(asm.R3, regState, int16(slots), asm.DWord))
	pg.allocaAddr(asm.R3, asm.R3, asm.R4, -1, asm.R2, "")
	pg.addrOf(asm.R1, regState, tmp)
	pg.call(asm.FnProbeReadKernel)
	read := pg.newLabel("copyout_read")
	pg.emit(asm.JEq.Imm(asm.R0, 0, read))
	pg.emit(asm.LoadMem(asm.R1, regState, int16(slots), asm.DWord))
	pg.raise(FaultBadAddr, asm.R1, true)
	pg.label(read)
	pg.emit(asm.LoadMem(asm.R1, regState, int16(slots+8), asm.DWord))
	pg.addrOf(asm.R2, regState, tmp)
	pg.emit(asm.LoadMem(asm.R3, regState, int16(slots+16), asm.DWord))
	pg.emit(asm.JLE.Imm(asm.R3, int32(S-8), pg.labelNext("copyout_len")))
	pg.emit(asm.Mov.Imm(asm.R3, int32(S-8)))
	pg.label(pg.lastLabel)
	pg.call(asm.FnProbeWriteUser)
	done := pg.newLabel("copyout_done")
	pg.emit(asm.JEq.Imm(asm.R0, 0, done))
	pg.emit(asm.LoadMem(asm.R1, regState, int16(slots+8), asm.DWord))
	pg.raise(FaultBadAddr, asm.R1, true)
	pg.label(done)
	pg.emit(asm.Mov.Imm(asm.R0, 0))
	return nil
}

// strtokInto generates strtok(s, delim): the next token of s, or with a
// NULL s of the string an earlier strtok( ) of the firing started on.
// The string and the position in it live beside the clause-locals; the
// delimiters become a 256-bit set.
func (pg *probeGen) strtokInto(e *ast.Call, base asm.Register, off, size int, nullable bool) error {
	S := pg.in.Opts.StrSize
	_, isNull := pg.in.ConstInt(e.Args[0])
	str, pos := pg.strtok, pg.strtok+S
	delim, err := pg.strTemp(e.Args[1], S)
	if err != nil {
		return err
	}
	if !isNull {
		if err := pg.strInto(e.Args[0], regState, str, S); err != nil {
			return err
		}
		pg.emit(storeImm(regState, int16(pos), 0, asm.DWord))
	} else {
		// strtok(NULL, ...) with no string begun reads address 0, as in
		// DTrace.
		pg.emit(asm.LoadMem(asm.R0, regState, int16(pos), asm.DWord))
		pg.emit(asm.JLE.Imm(asm.R0, int32(S), pg.labelNext("tok_begun")))
		pg.emit(asm.Mov.Imm(asm.R1, 0))
		pg.raise(FaultBadAddr, asm.R1, true)
		pg.label(pg.lastLabel)
	}
	set := pg.allocScratch(32)
	for i := 0; i < 32; i += 8 {
		pg.emit(storeImm(regState, int16(set+i), 0, asm.DWord))
	}
	// R5 = the state's address + set + c>>3; R4 = 1 << (c&7), for c in R3.
	member := func() {
		pg.emit(asm.Mov.Reg(asm.R5, asm.R3), asm.RSh.Imm(asm.R5, 3), asm.And.Imm(asm.R5, 31))
		pg.emit(asm.Add.Reg(asm.R5, regState))
		pg.emit(asm.Mov.Reg(asm.R4, asm.R3), asm.And.Imm(asm.R4, 7))
		pg.emit(asm.Mov.Imm(asm.R1, 1), asm.LSh.Reg(asm.R1, asm.R4), asm.Mov.Reg(asm.R4, asm.R1))
	}
	pg.loop(asm.R2, 0, int32(S), func(brk string) {
		pg.addrOf(asm.R3, regState, delim)
		pg.emit(asm.Add.Reg(asm.R3, asm.R2), asm.LoadMem(asm.R3, asm.R3, 0, asm.Byte))
		pg.emit(asm.JEq.Imm(asm.R3, 0, brk))
		member()
		pg.emit(asm.LoadMem(asm.R1, asm.R5, int16(set), asm.Byte), asm.Or.Reg(asm.R1, asm.R4))
		pg.emit(asm.StoreMem(asm.R5, int16(set), asm.R1, asm.Byte))
	})
	// char leaves the next character in R3 (0 past the end) and whether
	// it is a delimiter in R1.
	char := func() {
		end, got := pg.newLabel("tok_end"), pg.newLabel("tok_char")
		pg.emit(asm.Mov.Imm(asm.R3, 0), asm.Mov.Imm(asm.R1, 0))
		pg.emit(asm.LoadMem(asm.R0, regState, int16(pos), asm.DWord))
		pg.emit(asm.JGE.Imm(asm.R0, int32(S), end))
		pg.addrOf(asm.R3, regState, str)
		pg.emit(asm.Add.Reg(asm.R3, asm.R0), asm.LoadMem(asm.R3, asm.R3, 0, asm.Byte))
		pg.emit(asm.JEq.Imm(asm.R3, 0, end))
		member()
		pg.emit(asm.LoadMem(asm.R1, asm.R5, int16(set), asm.Byte), asm.And.Reg(asm.R1, asm.R4))
		pg.emit(asm.Ja.Label(got))
		pg.label(end)
		pg.label(got)
	}
	advance := func() {
		pg.emit(asm.LoadMem(asm.R0, regState, int16(pos), asm.DWord), asm.Add.Imm(asm.R0, 1))
		pg.emit(asm.StoreMem(regState, int16(pos), asm.R0, asm.DWord))
	}
	// Skip the delimiters before the token.
	pg.loop(asm.R2, 0, int32(S), func(brk string) {
		char()
		pg.emit(asm.JEq.Imm(asm.R1, 0, brk))
		advance()
	})
	// Copy the token.
	tok := pg.allocScratch(S)
	pg.emit(storeImm(regState, int16(tok), 0, asm.Byte))
	pg.loop(asm.R2, 0, int32(S-1), func(brk string) {
		char()
		pg.emit(asm.JEq.Imm(asm.R3, 0, brk), asm.JNE.Imm(asm.R1, 0, brk))
		pg.addrOf(asm.R1, regState, tok)
		pg.emit(asm.Add.Reg(asm.R1, asm.R2), asm.StoreMem(asm.R1, 0, asm.R3, asm.Byte))
		pg.emit(storeImm(asm.R1, 1, 0, asm.Byte))
		advance()
	})
	// No token left: NULL.
	got, done := pg.newLabel("tok_got"), pg.newLabel("tok_done")
	pg.emit(asm.LoadMem(asm.R1, regState, int16(tok), asm.Byte))
	pg.emit(asm.JNE.Imm(asm.R1, 0, got))
	if pg.nullStr(base, off, size, nullable) {
		pg.emit(asm.Ja.Label(done))
	}
	pg.label(got)
	pg.addrOf(asm.R3, regState, tok)
	pg.copyFrom(base, off, size)
	pg.label(done)
	return nil
}

// usesAlloca says whether clause cl needs alloca( ) space: it calls
// alloca( ) or copyin( ), or bcopy( ) or copyinto( ), which copy into it.
func usesAlloca(cl *check.Clause) bool {
	uses := false
	find := func(x ast.Expr) {
		if c, ok := x.(*ast.Call); ok && (c.Fn == "alloca" || c.Fn == "bcopy" || c.Fn == "copyinto" || c.Fn == "copyin") {
			uses = true
		}
	}
	if cl.Pred != nil {
		ast.Inspect(cl.Pred, find)
	}
	ast.InspectStmts(cl.Body, find)
	return uses
}

// allocaSpace gives the clause its alloca( ) space, as DTrace's scratch
// memory: ScratchSize bytes, zeroed, whose first 8 hold the top (the
// offset the next alloca( ) returns, from 8). An alloca( ) pointer is an
// offset into the space, as in DTrace, so that 0 stays NULL; what reads
// or writes through it turns it into an address (allocaAddr). Another
// ScratchSize bytes after it let the verifier bound an access of a size
// known only at run time.
func (pg *probeGen) allocaSpace() {
	S := pg.in.ScratchSize()
	pg.allocaArea = pg.allocScratch(2 * S)
	pg.addrOf(asm.R1, regState, pg.allocaArea)
	pg.emit(asm.Mov.Imm(asm.R2, int32(2*S)), asm.Mov.Imm(asm.R3, 0))
	pg.call(asm.FnProbeReadKernel) // reading address 0 fails, and zero-fills
	pg.emit(storeImm(regState, int16(pg.allocaArea), 8, asm.DWord))
}

// allocaAddr leaves in dst the address through which to access n bytes
// at the D pointer in src. An alloca( ) pointer (below ScratchSize) must
// lie, with its n bytes, below the top of the clause's alloca( ) space,
// or the clause faults as DTrace's does (invalid address, or invalid
// size when the bytes cross the top); the address is then the state's,
// plus the offset, as the verifier allows. When n < 0 the size is in
// register size, which must be at most the space's. Any other value goes
// to label other, or when other is "", into dst as it is. tmp is
// clobbered. A clause with no alloca( ) space leaves src as it is: a
// small value there is a bad address to whatever reads it.
func (pg *probeGen) allocaAddr(dst, src, tmp asm.Register, n int, size asm.Register, other string) {
	if pg.allocaArea == 0 {
		if dst != src {
			pg.emit(asm.Mov.Reg(dst, src))
		}
		return
	}
	S := pg.in.ScratchSize()
	notOffset, done := pg.newLabel("alloca_other"), pg.newLabel("alloca_addr")
	bad, badSize := pg.newLabel("alloca_badaddr"), pg.newLabel("alloca_badsize")
	if other == "" {
		other = notOffset
	}
	if n < 0 {
		pg.emit(asm.JGT.Imm(size, int32(S-8), badSize))
	}
	pg.emit(asm.JGE.Imm(src, int32(S), other))
	pg.emit(asm.JLT.Imm(src, 8, bad))
	pg.emit(asm.LoadMem(tmp, regState, int16(pg.allocaArea), asm.DWord))
	pg.emit(asm.JGE.Reg(src, tmp, bad))
	if n >= 0 {
		pg.emit(asm.Sub.Imm(tmp, int32(n)))
	} else {
		pg.emit(asm.Sub.Reg(tmp, size))
	}
	pg.emit(asm.JSGT.Reg(src, tmp, badSize))
	pg.emit(asm.Mov.Reg(tmp, src), asm.Mov.Reg(dst, regState), asm.Add.Reg(dst, tmp), asm.Add.Imm(dst, int32(pg.allocaArea)))
	pg.emit(asm.Ja.Label(done))
	pg.label(bad)
	pg.raise(FaultBadAddr, src, true)
	pg.label(badSize)
	if n >= 0 {
		pg.emit(asm.Mov.Imm(tmp, int32(n)))
		pg.raise(FaultBadSize, tmp, true)
	} else {
		pg.raise(FaultBadSize, size, true)
	}
	if other == notOffset {
		pg.label(notOffset)
		if dst != src {
			pg.emit(asm.Mov.Reg(dst, src))
		}
	}
	pg.label(done)
}

// storeMemory generates p->m = v, s.m = v and *p = v, into memory the
// clause has from alloca( ); R0 is the value stored.
func (pg *probeGen) storeMemory(e *ast.Assign) error {
	t, _, err := pg.in.MemoryLvalue(e.LHS, pg.env)
	if err != nil {
		return err
	}
	root, _, inVar := pg.in.StructRoot(e.LHS)
	if !inVar && pg.allocaArea == 0 && pg.arraysOff == pg.glSize {
		return pg.errorf(e.LHS.Start(), "operator = can write only memory from alloca( ) in the same clause or a global array")
	}
	size := t.Size
	if t.Kind == types.Pointer {
		size = 8
	}
	if t.Bits > 0 {
		// A bit-field: the bytes that hold it, read and written one
		// by one.
		size = bitFieldBytes(t)
	}
	slots := pg.allocScratch(16) // the value, then the address
	// A member of a struct variable is written in place, checked to be
	// inside the variable; anything else is memory from alloca( ) or
	// the global arrays.
	var skips []string // where a thread-local's missing element skips to
	ptr := func() error {
		if !inVar {
			pg.memoryPtr(slots+8, size)
			return nil
		}
		skip, err := pg.varMemPtr(root, slots+8, size)
		if skip != "" {
			skips = append(skips, skip)
		}
		return err
	}
	if err := pg.expr(e.RHS); err != nil {
		return err
	}
	pg.emit(asm.StoreMem(regState, int16(slots), asm.R0, asm.DWord))
	if inVar {
		if err := pg.ensureElem(root); err != nil {
			return err
		}
	}
	switch x := check.Unparen(e.LHS).(type) {
	case *ast.Member:
		err = pg.kernelAddr(x)
	case *ast.Unary:
		err = pg.expr(x.X)
	case *ast.Index:
		if pg.in.PointerIndex(x, pg.env) != nil {
			err = pg.pointerElemAddr(x)
		} else {
			err = pg.memberElemAddr(x)
		}
	}
	if err != nil {
		return err
	}
	pg.emit(asm.StoreMem(regState, int16(slots+8), asm.R0, asm.DWord))
	if err := ptr(); err != nil {
		return err
	}
	if e.Op != "=" {
		// v op= x: the old value, then the operation, kept in the slot.
		if t.Bits > 0 {
			pg.loadBytes(asm.R0, asm.R1, asm.R2, size)
			pg.bitFieldValue(t)
		} else {
			pg.emit(asm.LoadMem(asm.R0, asm.R1, 0, sizeOf(size)))
			if t.Kind == types.Int {
				pg.normalize(asm.R0, size, t.Signed)
			}
		}
		pg.emit(asm.LoadMem(asm.R1, regState, int16(slots), asm.DWord))
		rt, err := pg.typeOf(e.RHS)
		if err != nil {
			return err
		}
		pg.pointerScale(e.Op[:len(e.Op)-1], t, rt)
		if err := pg.arith(e.Op[:len(e.Op)-1], types.Arith(t, rt), e); err != nil {
			return err
		}
		pg.emit(asm.StoreMem(regState, int16(slots), asm.R0, asm.DWord))
		if err := ptr(); err != nil {
			return err
		}
	}
	pg.emit(asm.LoadMem(asm.R0, regState, int16(slots), asm.DWord))
	if t.Bits > 0 {
		// Only the field's bits change: the value, truncated to its
		// width, replaces them in the bytes that hold it.
		mask := int64(uint64(1)<<t.Bits-1) << t.BitOff
		pg.emit(asm.LSh.Imm(asm.R0, int32(t.BitOff)))
		pg.emit(asm.LoadImm(asm.R2, mask, asm.DWord))
		pg.emit(asm.And.Reg(asm.R0, asm.R2))
		pg.loadBytes(asm.R3, asm.R1, asm.R4, size)
		pg.emit(asm.LoadImm(asm.R2, ^mask, asm.DWord))
		pg.emit(asm.And.Reg(asm.R3, asm.R2))
		pg.emit(asm.Or.Reg(asm.R0, asm.R3))
		for i := 0; i < size; i++ {
			pg.emit(asm.StoreMem(asm.R1, int16(i), asm.R0, asm.Byte))
			pg.emit(asm.RSh.Imm(asm.R0, 8))
		}
		// The assignment's value is the field's.
		pg.emit(asm.LoadMem(asm.R0, regState, int16(slots), asm.DWord))
		pg.bitFieldValue(&types.Type{Bits: t.Bits, Signed: t.Signed})
	} else {
		pg.emit(asm.StoreMem(asm.R1, 0, asm.R0, sizeOf(size)))
	}
	if len(skips) > 0 {
		done := pg.newLabel("store_done")
		pg.emit(asm.Ja.Label(done))
		for _, l := range skips {
			pg.label(l)
		}
		pg.label(done)
	}
	return nil
}
