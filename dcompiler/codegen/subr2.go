package codegen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/types"
)

// substr(s, i[, n]) as DTrace defines it: a negative i counts from the
// end; a negative n leaves that many characters off the end; out-of-range
// parts are cut off.
func (pg *probeGen) substr(e *ast.Call, base asm.Register, off, size int) error {
	S := pg.in.Opts.StrSize
	s, err := pg.strTemp(e.Args[0], S)
	if err != nil {
		return err
	}
	if err := pg.expr(e.Args[1]); err != nil {
		return err
	}
	iSlot, err := pg.push()
	if err != nil {
		return pg.errorf(e.Pos, "%v", err)
	}
	defer func() { pg.depth-- }()
	nSlot := int16(0)
	if len(e.Args) == 3 {
		if err := pg.expr(e.Args[2]); err != nil {
			return err
		}
		nSlot, err = pg.push()
		if err != nil {
			return pg.errorf(e.Pos, "%v", err)
		}
		defer func() { pg.depth-- }()
	}
	pg.strLen(s, S) // R0 = len
	// DTrace's rules: n defaults to strsize; a negative i counts from
	// the end, and where it still falls before the start, the part
	// before the start is taken from n; then a negative n leaves -n off
	// the end, and the copy stops at the end of the string.
	i, n := asm.R4, asm.R5
	pg.emit(asm.LoadMem(i, asm.RFP, iSlot, asm.DWord))
	if nSlot != 0 {
		pg.emit(asm.LoadMem(n, asm.RFP, nSlot, asm.DWord))
	} else {
		pg.emit(asm.Mov.Imm(n, int32(S)))
	}
	empty, copyIt := pg.newLabel("substr_empty"), pg.newLabel("substr_copy")
	iok, nfit := pg.newLabel("substr_i"), pg.newLabel("substr_fit")
	pg.emit(asm.JSGE.Imm(i, 0, iok))
	pg.emit(asm.Add.Reg(i, asm.R0)) // from the end
	pg.emit(asm.JSGE.Imm(i, 0, iok))
	pg.emit(asm.Mov.Reg(asm.R3, i), asm.Add.Reg(asm.R3, n))
	pg.emit(asm.JSLE.Imm(asm.R3, 0, empty))
	pg.emit(asm.Mov.Reg(n, asm.R3), asm.Mov.Imm(i, 0))
	pg.label(iok)
	pg.emit(asm.JSGE.Reg(i, asm.R0, empty))
	pg.emit(asm.Mov.Reg(asm.R3, asm.R0), asm.Sub.Reg(asm.R3, i)) // what remains after i
	pg.emit(asm.JSGE.Imm(n, 0, pg.labelNext("substr_npos")))
	pg.emit(asm.Add.Reg(n, asm.R3)) // leave -n off the end
	pg.label(pg.lastLabel)
	pg.emit(asm.JSLE.Reg(n, asm.R3, nfit))
	pg.emit(asm.Mov.Reg(n, asm.R3))
	pg.label(nfit)
	pg.emit(asm.JSLE.Imm(n, 0, empty))
	pg.emit(asm.Ja.Label(copyIt))
	pg.label(empty)
	pg.emit(storeImm(base, int16(off), 0, asm.Byte))
	done := pg.newLabel("substr_done")
	pg.emit(asm.Ja.Label(done))
	pg.label(copyIt)
	// Copy n characters and a NUL: size n+1, at most the buffer.
	pg.emit(asm.Add.Imm(n, 1))
	pg.emit(asm.JLE.Imm(n, int32(size), pg.labelNext("substr_size")))
	pg.emit(asm.Mov.Imm(n, int32(size)))
	pg.label(pg.lastLabel)
	pg.addrOf(asm.R3, regState, s)
	pg.emit(asm.Add.Reg(asm.R3, i))
	pg.addrOf(asm.R1, base, off)
	pg.emit(asm.Mov.Reg(asm.R2, n))
	pg.call(asm.FnProbeReadKernelStr)
	pg.label(done)
	return nil
}

// pathPart generates basename() and dirname(), as DTrace does: trailing
// slashes do not count; no slash gives "." for dirname and the string for
// basename; only slashes give "/".
func (pg *probeGen) pathPart(e *ast.Call, base asm.Register, off, size int) error {
	S := pg.in.Opts.StrSize
	s, err := pg.strTemp(e.Args[0], S)
	if err != nil {
		return err
	}
	pg.strLen(s, S)
	// R2 = end: one past the last character that is not a trailing '/'.
	end, slash, p := asm.R2, asm.R5, asm.R1
	pg.addrOf(p, regState, s)
	pg.emit(asm.Mov.Reg(end, asm.R0))
	pg.emit(asm.JLE.Imm(end, int32(S-1), pg.labelNext("path_len")))
	pg.emit(asm.Mov.Imm(end, int32(S-1)))
	pg.label(pg.lastLabel)
	strip, stripped := pg.newLabel("strip"), pg.newLabel("stripped")
	pg.label(strip)
	pg.emit(asm.JLE.Imm(end, 1, stripped))
	pg.emit(asm.Mov.Reg(asm.R3, p), asm.Add.Reg(asm.R3, end))
	pg.emit(asm.LoadMem(asm.R4, asm.R3, -1, asm.Byte))
	pg.emit(asm.JNE.Imm(asm.R4, '/', stripped))
	pg.emit(asm.Sub.Imm(end, 1), asm.Ja.Label(strip))
	pg.label(stripped)
	// slash = the last '/' before end, or -1, kept in memory. end goes
	// through memory too, so that every way out of the strip loop reaches
	// the next loop as one state, not one per iteration.
	slashSlot := pg.allocScratch(16)
	pg.emit(storeImm(regState, int16(slashSlot), -1, asm.DWord))
	pg.emit(asm.StoreMem(regState, int16(slashSlot+8), end, asm.DWord))
	pg.emit(asm.LoadMem(end, regState, int16(slashSlot+8), asm.DWord))
	pg.loop(asm.R0, 0, int32(S), func(brk string) {
		pg.emit(asm.JGE.Reg(asm.R0, end, brk))
		pg.emit(asm.Mov.Reg(asm.R3, p), asm.Add.Reg(asm.R3, asm.R0))
		pg.emit(asm.LoadMem(asm.R4, asm.R3, 0, asm.Byte))
		pg.emit(asm.JNE.Imm(asm.R4, '/', pg.labelNext("not_slash")))
		pg.emit(asm.StoreMem(regState, int16(slashSlot), asm.R0, asm.DWord))
		pg.label(pg.lastLabel)
	})
	// Back from memory, with the bounds the verifier must see again.
	pg.emit(asm.LoadMem(slash, regState, int16(slashSlot), asm.DWord))
	pg.emit(asm.LoadMem(end, regState, int16(slashSlot+8), asm.DWord))
	pg.emit(asm.JLE.Imm(end, int32(S-1), pg.labelNext("end_ok")))
	pg.emit(asm.Mov.Imm(end, int32(S-1)))
	pg.label(pg.lastLabel)
	noSlashYet, slashOK := pg.newLabel("slash_none"), pg.newLabel("slash_ok")
	pg.emit(asm.JSLT.Imm(slash, 0, noSlashYet))
	pg.emit(asm.JSLT.Reg(slash, end, slashOK))
	pg.label(noSlashYet)
	pg.emit(asm.Mov.Imm(slash, -1))
	pg.label(slashOK)
	pg.addrOf(p, regState, s)
	done := pg.newLabel("path_done")
	if e.Fn == "basename" {
		// The part after slash, up to end.
		pg.emit(asm.Mov.Reg(asm.R3, slash), asm.Add.Imm(asm.R3, 1)) // start
		pg.emit(asm.JSGT.Imm(slash, -2, pg.labelNext("bn_start")))
		pg.label(pg.lastLabel)
		pg.emit(asm.Mov.Reg(asm.R4, end), asm.Sub.Reg(asm.R4, asm.R3)) // length
		nonEmpty := pg.newLabel("bn_nonempty")
		pg.emit(asm.JSGT.Imm(asm.R4, 0, nonEmpty))
		// Nothing after the slash: the string was "/" (or empty).
		pg.literal("/", base, off, size)
		pg.emit(asm.JNE.Imm(end, 0, done))
		pg.literal(".", base, off, size)
		pg.emit(asm.Ja.Label(done))
		pg.label(nonEmpty)
		pg.copyRange(base, off, size, s, asm.R3, asm.R4)
	} else {
		noSlash, root := pg.newLabel("dn_noslash"), pg.newLabel("dn_root")
		pg.emit(asm.JSLT.Imm(slash, 0, noSlash))
		// Slashes before the last one's run do not count either.
		trim := pg.newLabel("dn_trim")
		pg.label(trim)
		pg.emit(asm.JSLE.Imm(slash, 0, root))
		pg.emit(asm.Mov.Reg(asm.R3, p), asm.Add.Reg(asm.R3, slash))
		pg.emit(asm.LoadMem(asm.R4, asm.R3, -1, asm.Byte))
		pg.emit(asm.JNE.Imm(asm.R4, '/', pg.labelNext("dn_body")))
		pg.emit(asm.Sub.Imm(slash, 1), asm.Ja.Label(trim))
		pg.label(pg.lastLabel)
		pg.emit(asm.Mov.Imm(asm.R3, 0))
		pg.copyRange(base, off, size, s, asm.R3, slash)
		pg.emit(asm.Ja.Label(done))
		pg.label(root)
		pg.literal("/", base, off, size)
		pg.emit(asm.Ja.Label(done))
		pg.label(noSlash)
		pg.literal(".", base, off, size)
	}
	pg.label(done)
	return nil
}

// copyRange copies length (register) characters of the string at
// state+s from position start (register) to base+off, NUL-terminated.
func (pg *probeGen) copyRange(base asm.Register, off, size, s int, start, length asm.Register) {
	pg.emit(asm.Mov.Reg(asm.R0, start))
	pg.emit(asm.Mov.Reg(asm.R2, length), asm.Add.Imm(asm.R2, 1))
	pg.emit(asm.JLE.Imm(asm.R2, int32(size), pg.labelNext("range_size")))
	pg.emit(asm.Mov.Imm(asm.R2, int32(size)))
	pg.label(pg.lastLabel)
	pg.emit(asm.JSGE.Imm(asm.R2, 1, pg.labelNext("range_pos")))
	pg.emit(asm.Mov.Imm(asm.R2, 1))
	pg.label(pg.lastLabel)
	pg.addrOf(asm.R3, regState, s)
	pg.emit(asm.Add.Reg(asm.R3, asm.R0))
	pg.addrOf(asm.R1, base, off)
	pg.call(asm.FnProbeReadKernelStr)
}

// lltostr writes an integer in base 10 (or the base given, 2 to 36).
func (pg *probeGen) lltostr(e *ast.Call, base asm.Register, off, size int) error {
	const width = 66 // 64 binary digits, a sign and a NUL
	if err := pg.expr(e.Args[0]); err != nil {
		return err
	}
	radix := int64(10)
	if len(e.Args) == 2 {
		r, ok := pg.in.ConstInt(e.Args[1])
		if !ok || r < 2 || r > 36 {
			return pg.errorf(e.Args[1].Start(), "lltostr( ) argument #2 must be a constant base from 2 to 36")
		}
		radix = r
	}
	buf := pg.allocScratch(width)
	// Digits backwards from the end of buf; R1 = position, R2 = magnitude.
	v, pos, neg := asm.R0, asm.R1, asm.R5
	pg.emit(asm.Mov.Imm(neg, 0))
	if radix == 10 {
		pg.emit(asm.JSGE.Imm(v, 0, pg.labelNext("ll_pos")))
		pg.emit(asm.Neg.Imm(v, 0), asm.Mov.Imm(neg, 1))
		pg.label(pg.lastLabel)
	}
	pg.addrOf(pos, regState, buf+width-1)
	pg.emit(storeImm(pos, 0, 0, asm.Byte))
	digits := pg.newLabel("ll_digits")
	for i := 0; i < width-2; i++ {
		pg.emit(asm.Sub.Imm(pos, 1))
		pg.emit(asm.Mov.Reg(asm.R3, v), asm.Mod.Imm(asm.R3, int32(radix)))
		pg.emit(asm.Add.Imm(asm.R3, '0'))
		if radix > 10 {
			pg.emit(asm.JLE.Imm(asm.R3, '9', pg.labelNext("ll_digit")))
			pg.emit(asm.Add.Imm(asm.R3, 'a'-'0'-10))
			pg.label(pg.lastLabel)
		}
		pg.emit(asm.StoreMem(pos, 0, asm.R3, asm.Byte))
		pg.emit(asm.Div.Imm(v, int32(radix)))
		pg.emit(asm.JEq.Imm(v, 0, digits))
	}
	pg.label(digits)
	pg.emit(asm.JEq.Imm(neg, 0, pg.labelNext("ll_sign")))
	pg.emit(asm.Sub.Imm(pos, 1), storeImm(pos, 0, '-', asm.Byte))
	pg.label(pg.lastLabel)
	pg.emit(asm.Mov.Reg(asm.R3, pos))
	pg.copyFrom(base, off, size)
	return nil
}

// strtoll parses an integer in base 10 (or the base given, 2 to 36) after
// optional blanks and a sign; it stops at the first character that is not
// a digit of the base.
func (pg *probeGen) strtoll(e *ast.Call) error {
	S := pg.in.Opts.StrSize
	radix := int64(10)
	if len(e.Args) == 2 {
		r, ok := pg.in.ConstInt(e.Args[1])
		if !ok || r < 2 || r > 36 {
			return pg.errorf(e.Args[1].Start(), "strtoll( ) argument #2 must be a constant base from 2 to 36")
		}
		radix = r
	}
	s, err := pg.strTemp(e.Args[0], S)
	if err != nil {
		return err
	}
	// The accumulator, the sign and whether the number has started live
	// in memory (see loop); R1 points at the string, R4 is the position.
	vars := pg.allocScratch(24)
	acc, neg, started := int16(vars), int16(vars+8), int16(vars+16)
	for _, v := range []int16{acc, neg, started} {
		pg.emit(storeImm(regState, v, 0, asm.DWord))
	}
	pg.addrOf(asm.R1, regState, s)
	pg.loop(asm.R4, 0, int32(S), func(brk string) {
		digit, next := pg.newLabel("stoll_digit"), pg.newLabel("stoll_next")
		pg.emit(asm.Mov.Reg(asm.R3, asm.R1), asm.Add.Reg(asm.R3, asm.R4))
		pg.emit(asm.LoadMem(asm.R3, asm.R3, 0, asm.Byte))
		pg.emit(asm.LoadMem(asm.R2, regState, started, asm.DWord))
		pg.emit(asm.JNE.Imm(asm.R2, 0, digit))
		pg.emit(asm.JEq.Imm(asm.R3, ' ', next), asm.JEq.Imm(asm.R3, '\t', next))
		pg.emit(storeImm(regState, started, 1, asm.DWord))
		pg.emit(asm.JEq.Imm(asm.R3, '+', next))
		pg.emit(asm.JNE.Imm(asm.R3, '-', digit))
		pg.emit(storeImm(regState, neg, 1, asm.DWord), asm.Ja.Label(next))
		pg.label(digit)
		pg.emit(storeImm(regState, started, 1, asm.DWord))
		// R3 = the digit's value, or leave.
		lower, upper, have := pg.newLabel("stoll_lower"), pg.newLabel("stoll_upper"), pg.newLabel("stoll_have")
		pg.emit(asm.JGE.Imm(asm.R3, 'a', lower), asm.JGE.Imm(asm.R3, 'A', upper))
		pg.emit(asm.JLT.Imm(asm.R3, '0', brk), asm.Sub.Imm(asm.R3, '0'), asm.Ja.Label(have))
		pg.label(lower)
		pg.emit(asm.Sub.Imm(asm.R3, 'a'-10), asm.Ja.Label(have))
		pg.label(upper)
		pg.emit(asm.Sub.Imm(asm.R3, 'A'-10))
		pg.label(have)
		pg.emit(asm.JGE.Imm(asm.R3, int32(radix), brk))
		pg.emit(asm.LoadMem(asm.R0, regState, acc, asm.DWord))
		pg.emit(asm.Mul.Imm(asm.R0, int32(radix)), asm.Add.Reg(asm.R0, asm.R3))
		pg.emit(asm.StoreMem(regState, acc, asm.R0, asm.DWord))
		pg.label(next)
	})
	pg.emit(asm.LoadMem(asm.R0, regState, acc, asm.DWord))
	pg.emit(asm.LoadMem(asm.R5, regState, neg, asm.DWord))
	pg.emit(asm.JEq.Imm(asm.R5, 0, pg.labelNext("stoll_pos")))
	pg.emit(asm.Neg.Imm(asm.R0, 0))
	pg.label(pg.lastLabel)
	return nil
}

// progenyof(pid) is 1 when the current process is pid or descends from
// it: up the real_parent chain, at most 64 generations.
func (pg *probeGen) progenyof(e *ast.Call) error {
	parent, _, err := taskOffsets([]string{"real_parent"})
	if err != nil {
		return pg.errorf(e.Pos, "progenyof( ) needs kernel BTF: %v", err)
	}
	tgid, tsize, err := taskOffsets([]string{"tgid"})
	if err != nil || tsize != 4 {
		return pg.errorf(e.Pos, "progenyof( ) needs kernel BTF: %v", err)
	}
	if err := pg.expr(e.Args[0]); err != nil {
		return err
	}
	want, err := pg.push()
	if err != nil {
		return pg.errorf(e.Pos, "%v", err)
	}
	defer func() { pg.depth-- }()
	task := pg.allocScratch(16) // the task, then a read buffer
	pg.call(asm.FnGetCurrentTask)
	pg.emit(asm.StoreMem(regState, int16(task), asm.R0, asm.DWord))
	yes, no, done := pg.newLabel("progeny_yes"), pg.newLabel("progeny_no"), pg.newLabel("progeny_done")
	read := func(off int, size int) {
		pg.emit(storeImm(regState, int16(task+8), 0, asm.DWord))
		pg.addrOf(asm.R1, regState, task+8)
		pg.emit(asm.Mov.Imm(asm.R2, int32(size)))
		pg.emit(asm.LoadMem(asm.R3, regState, int16(task), asm.DWord), asm.Add.Imm(asm.R3, int32(off)))
		pg.call(asm.FnProbeReadKernel)
		pg.emit(asm.LoadMem(asm.R0, regState, int16(task+8), sizeOf(size)))
	}
	for i := 0; i < 64; i++ {
		read(tgid[0], 4)
		pg.emit(asm.JEq.Imm(asm.R0, 0, no)) // reached the idle task
		pg.emit(asm.LoadMem(asm.R1, asm.RFP, want, asm.DWord))
		pg.emit(asm.JEq.Reg(asm.R0, asm.R1, yes))
		read(parent[0], 8)
		pg.emit(asm.StoreMem(regState, int16(task), asm.R0, asm.DWord))
	}
	pg.label(no)
	pg.emit(asm.Mov.Imm(asm.R0, 0), asm.Ja.Label(done))
	pg.label(yes)
	pg.emit(asm.Mov.Imm(asm.R0, 1))
	pg.label(done)
	return nil
}

// stringIndex loads s[i], character i of string s: an index outside the
// string's buffer is an out-of-bounds fault, and one past its end reads 0
// (not what the buffer held before).
func (pg *probeGen) stringIndex(e *ast.Index) error {
	S := pg.in.Opts.StrSize
	s := pg.allocScratch(S)
	if err := pg.strIntoOrNull(e.X, regState, s, S); err != nil {
		return err
	}
	if err := pg.expr(e.Keys[0]); err != nil {
		return err
	}
	// s[i] of a NULL string reads address i, as *(s + i) does.
	notNull := pg.newLabel("strindex_notnull")
	pg.emit(asm.LoadMem(asm.R1, regState, int16(s), asm.Half))
	pg.emit(asm.JNE.Imm(asm.R1, nullString, notNull))
	pg.raise(FaultBadAddr, asm.R0, true)
	pg.label(notNull)
	ok := pg.newLabel("strindex_ok")
	// Unsigned, so that a negative index is out of bounds too.
	pg.emit(asm.JLT.Imm(asm.R0, int32(S), ok))
	pg.emit(asm.Mov.Reg(asm.R1, asm.R0))
	pg.raise(FaultBadIndex, asm.R1, true)
	pg.label(ok)
	iSlot, err := pg.push()
	if err != nil {
		return pg.errorf(e.Pos, "%v", err)
	}
	pg.strLen(s, S) // R0 = len
	pg.pop(asm.R1)
	_ = iSlot
	past, done := pg.newLabel("strindex_past"), pg.newLabel("strindex_done")
	pg.emit(asm.JGT.Reg(asm.R1, asm.R0, past))
	pg.emit(asm.JGE.Imm(asm.R1, int32(S), past)) // for the verifier
	pg.addrOf(asm.R2, regState, s)
	pg.emit(asm.Add.Reg(asm.R2, asm.R1))
	pg.emit(asm.LoadMem(asm.R0, asm.R2, 0, asm.Byte))
	pg.normalize(asm.R0, 1, true)
	pg.emit(asm.Ja.Label(done))
	pg.label(past)
	pg.emit(asm.Mov.Imm(asm.R0, 0))
	pg.label(done)
	return nil
}

// mutexSubr generates mutex_owned( ), mutex_owner( ) and
// mutex_type_adaptive( )/mutex_type_spin( ). A kernel mutex's owner word
// is the owning task with flags in its low 3 bits; every Linux mutex is
// adaptive.
func (pg *probeGen) mutexSubr(e *ast.Call) error {
	if err := pg.expr(e.Args[0]); err != nil {
		return err
	}
	switch e.Fn {
	case "mutex_type_adaptive", "mutex_type_spin":
		pg.emit(asm.Mov.Imm(asm.R0, map[bool]int32{true: 1}[e.Fn == "mutex_type_adaptive"]))
		return nil
	}
	offs, _, err := structOffsets("mutex", []string{"owner"})
	if err != nil {
		return pg.errorf(e.Pos, "%s( ) needs kernel BTF: %v", e.Fn, err)
	}
	if offs[0] != 0 {
		pg.emit(asm.Add.Imm(asm.R0, int32(offs[0])))
	}
	if err := pg.readKernel(types.Uint64T); err != nil {
		return err
	}
	pg.emit(asm.And.Imm(asm.R0, ^7))
	if e.Fn == "mutex_owned" {
		owned := pg.newLabel("mutex_owned")
		pg.emit(asm.JEq.Imm(asm.R0, 0, owned), asm.Mov.Imm(asm.R0, 1))
		pg.label(owned)
	}
	return nil
}

// cleanpath(s) is path s without "." elements, with each ".." taking
// away the element before it (at the root, nothing), and without
// repeated or trailing slashes; "" stays "", and what leaves nothing of a
// relative path is ".", as in DTrace. One pass over s: each element is
// written as it is read, then taken back if it was "." or a ".." that
// undoes the element whose start is on top of a stack. The loop's state
// is in memory, so that its iterations' paths merge for the verifier.
func (pg *probeGen) cleanpath(e *ast.Call, base asm.Register, off, size int) error {
	S := pg.in.Opts.StrSize
	s, err := pg.strTemp(e.Args[0], S)
	if err != nil {
		return err
	}
	// The output never outgrows the input by more than its root; at
	// most every other character starts an element. Masks bound the
	// indexes for the verifier (no branches: they would multiply the
	// paths it follows), so the buffers are powers of two.
	pow2 := func(x int) int {
		n := 1
		for n < x {
			n <<= 1
		}
		return n
	}
	outLen, stackLen := pow2(S+2), pow2(S/2+2)
	out := pg.allocScratch(outLen)
	stack := pg.allocScratch(2 * stackLen) // u16 starts of the kept elements
	st := pg.allocScratch(48)
	w, sep, elemLen, notDots, depth, rooted := int16(st), int16(st+8), int16(st+16), int16(st+24), int16(st+32), int16(st+40)
	for i := 0; i < 6; i++ {
		pg.emit(storeImm(regState, int16(st+8*i), 0, asm.DWord))
	}
	pg.emit(asm.LoadMem(asm.R1, regState, int16(s), asm.Byte))
	relative := pg.newLabel("clean_relative")
	pg.emit(asm.JNE.Imm(asm.R1, '/', relative))
	pg.emit(storeImm(regState, int16(out), '/', asm.Byte), storeImm(regState, w, 1, asm.DWord), storeImm(regState, rooted, 1, asm.DWord))
	pg.label(relative)
	// putOut writes the byte in r at out[w] (R3 = w, R4 clobbered).
	putOut := func(r asm.Register) {
		pg.emit(asm.LoadMem(asm.R3, regState, w, asm.DWord), asm.Mov.Reg(asm.R4, asm.R3), asm.And.Imm(asm.R4, int32(outLen-1)))
		pg.emit(asm.Add.Reg(asm.R4, regState), asm.StoreMem(asm.R4, int16(out), r, asm.Byte))
		pg.emit(asm.Add.Imm(asm.R3, 1), asm.StoreMem(regState, w, asm.R3, asm.DWord))
	}
	// stackAt leaves in R3 the address of stack[R4].
	stackAt := func() {
		pg.emit(asm.Mov.Reg(asm.R3, asm.R4), asm.And.Imm(asm.R3, int32(stackLen-1)), asm.LSh.Imm(asm.R3, 1))
		pg.emit(asm.Add.Reg(asm.R3, regState), asm.Add.Imm(asm.R3, int32(stack)))
	}
	pg.loop(asm.R0, 0, int32(S), func(brk string) {
		pg.addrOf(asm.R2, regState, s)
		pg.emit(asm.Add.Reg(asm.R2, asm.R0), asm.LoadMem(asm.R1, asm.R2, 0, asm.Byte))
		endElem, next := pg.newLabel("clean_end_elem"), pg.newLabel("clean_next")
		pg.emit(asm.JEq.Imm(asm.R1, '/', endElem), asm.JEq.Imm(asm.R1, 0, endElem))
		// A character of an element; before its first, a separator
		// unless the output is empty (or just the root).
		started := pg.newLabel("clean_started")
		pg.emit(asm.LoadMem(asm.R2, regState, elemLen, asm.DWord), asm.JNE.Imm(asm.R2, 0, started))
		pg.emit(asm.LoadMem(asm.R3, regState, w, asm.DWord), asm.StoreMem(regState, sep, asm.R3, asm.DWord))
		pg.emit(asm.LoadMem(asm.R4, regState, rooted, asm.DWord), asm.JEq.Reg(asm.R3, asm.R4, started))
		pg.emit(asm.Mov.Imm(asm.R5, '/'))
		putOut(asm.R5)
		pg.label(started)
		putOut(asm.R1)
		pg.emit(asm.LoadMem(asm.R2, regState, elemLen, asm.DWord), asm.Add.Imm(asm.R2, 1), asm.StoreMem(regState, elemLen, asm.R2, asm.DWord))
		pg.emit(asm.JEq.Imm(asm.R1, '.', next), storeImm(regState, notDots, 1, asm.DWord), asm.Ja.Label(next))
		// The element ends: "." goes, ".." takes the kept element
		// before it along (or at the root, goes; or stays, leading a
		// relative path), anything else is kept.
		pg.label(endElem)
		reset, keep, dot, dotdot, noPop := pg.newLabel("clean_reset"), pg.newLabel("clean_keep"), pg.newLabel("clean_dot"), pg.newLabel("clean_dotdot"), pg.newLabel("clean_nopop")
		pg.emit(asm.LoadMem(asm.R2, regState, elemLen, asm.DWord), asm.JEq.Imm(asm.R2, 0, reset))
		pg.emit(asm.LoadMem(asm.R3, regState, notDots, asm.DWord), asm.JNE.Imm(asm.R3, 0, keep))
		pg.emit(asm.JEq.Imm(asm.R2, 1, dot), asm.JEq.Imm(asm.R2, 2, dotdot))
		pg.label(keep)
		pg.emit(asm.LoadMem(asm.R4, regState, depth, asm.DWord))
		stackAt()
		pg.emit(asm.LoadMem(asm.R5, regState, sep, asm.DWord), asm.StoreMem(asm.R3, 0, asm.R5, asm.Half))
		pg.emit(asm.Add.Imm(asm.R4, 1), asm.StoreMem(regState, depth, asm.R4, asm.DWord), asm.Ja.Label(reset))
		pg.label(dot)
		pg.emit(asm.LoadMem(asm.R5, regState, sep, asm.DWord), asm.StoreMem(regState, w, asm.R5, asm.DWord), asm.Ja.Label(reset))
		pg.label(dotdot)
		pg.emit(asm.LoadMem(asm.R4, regState, depth, asm.DWord), asm.JEq.Imm(asm.R4, 0, noPop))
		pg.emit(asm.Sub.Imm(asm.R4, 1), asm.StoreMem(regState, depth, asm.R4, asm.DWord))
		stackAt()
		pg.emit(asm.LoadMem(asm.R5, asm.R3, 0, asm.Half), asm.StoreMem(regState, w, asm.R5, asm.DWord), asm.Ja.Label(reset))
		pg.label(noPop)
		pg.emit(asm.LoadMem(asm.R3, regState, rooted, asm.DWord), asm.JEq.Imm(asm.R3, 0, reset))
		pg.emit(asm.LoadMem(asm.R5, regState, sep, asm.DWord), asm.StoreMem(regState, w, asm.R5, asm.DWord))
		pg.label(reset)
		pg.emit(storeImm(regState, elemLen, 0, asm.DWord), storeImm(regState, notDots, 0, asm.DWord))
		pg.emit(asm.JEq.Imm(asm.R1, 0, brk))
		pg.label(next)
	})
	empty, nothingLeft, done := pg.newLabel("clean_empty"), pg.newLabel("clean_dot_only"), pg.newLabel("clean_done")
	pg.emit(asm.LoadMem(asm.R1, regState, int16(s), asm.Byte), asm.JEq.Imm(asm.R1, 0, empty))
	pg.emit(asm.LoadMem(asm.R3, regState, w, asm.DWord), asm.JEq.Imm(asm.R3, 0, nothingLeft))
	pg.emit(asm.Mov.Imm(asm.R5, 0))
	putOut(asm.R5)
	pg.addrOf(asm.R3, regState, out)
	pg.copyFrom(base, off, size)
	pg.emit(asm.Ja.Label(done))
	pg.label(nothingLeft)
	pg.literal(".", base, off, size)
	pg.emit(asm.Ja.Label(done))
	pg.label(empty)
	pg.literal("", base, off, size)
	pg.label(done)
	return nil
}
