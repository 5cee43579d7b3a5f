package codegen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/check"
	"github.com/dstar-trace/dstar/dcompiler/quant"
	"github.com/dstar-trace/dstar/dcompiler/types"
)

// aggregate generates "@name[keys] = func(args)". The value is updated in
// place through the looked-up pointer (cheaper than lookup-copy-update);
// a key's first update on a CPU inserts a zero value first. A full map
// counts an aggregation drop.
func (pg *probeGen) aggregate(a *ast.Assign, av *ast.AggVar) error {
	l := pg.aggs[av.Name]
	rhs := a.RHS
	for p, ok := rhs.(*ast.Paren); ok; p, ok = rhs.(*ast.Paren) {
		rhs = p.X
	}
	call := rhs.(*ast.Call) // checked: an aggregating function
	// The function's value (and increment) first: they may call helpers.
	var argTmp, incrTmp int16
	evalArg := func(e ast.Expr) (int16, error) {
		if err := pg.expr(e); err != nil {
			return 0, err
		}
		t, err := pg.push()
		if err != nil {
			return 0, pg.errorf(call.Pos, "%v", err)
		}
		return t, nil
	}
	if len(call.Args) > 0 {
		t, err := evalArg(call.Args[0])
		if err != nil {
			return err
		}
		argTmp = t
		defer func() { pg.depth-- }()
	}
	if incr := incrArg(call); incr != nil {
		t, err := evalArg(incr)
		if err != nil {
			return err
		}
		incrTmp = t
		defer func() { pg.depth-- }()
	}
	keyOff := pg.scratchBase
	valOff := pg.scratchBase + pg.keyMax
	found, done := pg.newLabel("agg_found"), pg.newLabel("agg_done")
	if l.Array {
		pg.mapPtr(asm.R1, l.Map)
		pg.addrOf(asm.R2, asm.RFP, stackKey)
		pg.call(asm.FnMapLookupElem)
		pg.emit(asm.JNE.Imm(asm.R0, 0, found))
		pg.emit(asm.Ja.Label(done))
	} else {
		if err := pg.aggKey(l, check.AggKeys(a.LHS), keyOff); err != nil {
			return err
		}
		pg.lookupKey(l.Map, keyOff)
		pg.emit(asm.JNE.Imm(asm.R0, 0, found))
		pg.zero(regState, valOff, l.ValueSize)
		pg.mapPtr(asm.R1, l.Map)
		pg.addrOf(asm.R2, regState, keyOff)
		pg.addrOf(asm.R3, regState, valOff)
		pg.emit(asm.Mov.Imm(asm.R4, 1)) // BPF_NOEXIST
		pg.call(asm.FnMapUpdateElem)
		// Inserted, or another CPU inserted the key first (the key's
		// entry holds every CPU's value): look it up again. Only a key
		// that is still missing means the map is full.
		pg.lookupKey(l.Map, keyOff)
		pg.emit(asm.JNE.Imm(asm.R0, 0, found))
		pg.count(StAggDrops)
		pg.emit(asm.Ja.Label(done))
	}
	pg.label(found)
	// value[0] counts updates; it is count()'s result and tells whether
	// an aggregation has data at all. R0 points at the value throughout.
	pg.emit(asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord))
	pg.emit(asm.Mov.Reg(asm.R4, asm.R1)) // updates before this one
	pg.emit(asm.Add.Imm(asm.R1, 1))
	pg.emit(asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord))
	if len(call.Args) > 0 {
		pg.emit(asm.LoadMem(asm.R2, asm.RFP, argTmp, asm.DWord))
	}
	switch l.Func {
	case "sum", "avg":
		pg.addTo(asm.R0, 8, asm.R2)
	case "min", "max":
		// The first update sets the value; later ones keep the least
		// (greatest).
		op := asm.JSLT
		if l.Func == "max" {
			op = asm.JSGT
		}
		set := pg.newLabel("agg_set")
		pg.emit(asm.JEq.Imm(asm.R4, 0, set))
		pg.emit(asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord))
		pg.emit(op.Reg(asm.R2, asm.R1, set))
		pg.emit(asm.Ja.Label(done))
		pg.label(set)
		pg.emit(asm.StoreMem(asm.R0, 8, asm.R2, asm.DWord))
	case "stddev":
		// sum, and the sum of squares as 128 bits (low word, high word).
		pg.addTo(asm.R0, 8, asm.R2)
		pg.square128(asm.R2)
		// R1:R4 is the square; add it to the stored sum with carry.
		noCarry := pg.newLabel("sq_nocarry")
		pg.emit(asm.LoadMem(asm.R5, asm.R0, 16, asm.DWord))
		pg.emit(asm.Add.Reg(asm.R5, asm.R4))
		pg.emit(asm.StoreMem(asm.R0, 16, asm.R5, asm.DWord))
		pg.emit(asm.JGE.Reg(asm.R5, asm.R4, noCarry))
		pg.emit(asm.Add.Imm(asm.R1, 1))
		pg.label(noCarry)
		pg.emit(asm.LoadMem(asm.R5, asm.R0, 24, asm.DWord))
		pg.emit(asm.Add.Reg(asm.R5, asm.R1))
		pg.emit(asm.StoreMem(asm.R0, 24, asm.R5, asm.DWord))
	case "quantize", "lquantize", "llquantize":
		incr := func() {
			if incrTmp != 0 {
				pg.emit(asm.LoadMem(asm.R3, asm.RFP, incrTmp, asm.DWord))
			} else {
				pg.emit(asm.Mov.Imm(asm.R3, 1))
			}
		}
		// The weighted sum of the values after the buckets: what a
		// histogram's _sum exports (D prints only the buckets).
		incr()
		pg.emit(asm.Mul.Reg(asm.R3, asm.R2))
		pg.addTo(asm.R0, int16(8+8*l.Buckets), asm.R3)
		pg.bucket(l, asm.R2, asm.R1)
		// R1 is the bucket; bound it for the verifier, then count.
		pg.emit(asm.JGT.Imm(asm.R1, int32(l.Buckets-1), done))
		pg.emit(asm.LSh.Imm(asm.R1, 3), asm.Add.Reg(asm.R0, asm.R1))
		incr()
		pg.addTo(asm.R0, 8, asm.R3)
	}
	pg.label(done)
	return nil
}

// square128 sets R1 (high word) and R4 (low word) to the 128-bit square of
// |v|: a 64-bit multiply overflows from |v| = 2^32 on. With |v| = h*2^32 + l,
// the square is h²*2^64 + 2hl*2^32 + l². It uses R1, R3-R5; v and R0 are
// kept.
func (pg *probeGen) square128(v asm.Register) {
	abs := pg.newLabel("sq_abs")
	noCarry := pg.newLabel("sq_lo")
	pg.emit(asm.Mov.Reg(asm.R3, v))
	pg.emit(asm.JSGE.Imm(asm.R3, 0, abs))
	pg.emit(asm.Neg.Imm(asm.R3, 0))
	pg.label(abs)
	pg.emit(asm.Mov.Reg(asm.R1, asm.R3), asm.RSh.Imm(asm.R1, 32))     // h
	pg.emit(asm.LSh.Imm(asm.R3, 32), asm.RSh.Imm(asm.R3, 32))         // l
	pg.emit(asm.Mov.Reg(asm.R4, asm.R3), asm.Mul.Reg(asm.R4, asm.R3)) // l²
	pg.emit(asm.Mul.Reg(asm.R3, asm.R1))                              // hl
	pg.emit(asm.Mul.Reg(asm.R1, asm.R1))                              // h²
	// 2hl*2^32 is hl<<33 in the low word and hl>>31 in the high one.
	pg.emit(asm.Mov.Reg(asm.R5, asm.R3), asm.RSh.Imm(asm.R5, 31), asm.Add.Reg(asm.R1, asm.R5))
	pg.emit(asm.LSh.Imm(asm.R3, 33), asm.Add.Reg(asm.R4, asm.R3))
	pg.emit(asm.JGE.Reg(asm.R4, asm.R3, noCarry))
	pg.emit(asm.Add.Imm(asm.R1, 1))
	pg.label(noCarry)
}

// incrArg is the optional increment of quantize, lquantize, llquantize.
func incrArg(call *ast.Call) ast.Expr {
	n := map[string]int{"quantize": 1, "lquantize": 4, "llquantize": 5}[call.Fn]
	if n > 0 && len(call.Args) > n {
		return call.Args[n]
	}
	return nil
}

// addTo adds register v to the u64 at base+off.
func (pg *probeGen) addTo(base asm.Register, off int16, v asm.Register) {
	pg.emit(asm.LoadMem(asm.R5, base, off, asm.DWord))
	pg.emit(asm.Add.Reg(asm.R5, v))
	pg.emit(asm.StoreMem(base, off, asm.R5, asm.DWord))
}

// bucket computes into dst the bucket of the value in v, as package quant
// lays buckets out. It uses R1-R5 except v; R0 is kept.
func (pg *probeGen) bucket(l *AggLayout, v, dst asm.Register) {
	done := pg.newLabel("bucket_done")
	switch l.Func {
	case "quantize":
		// 0 is bucket 63; v > 0 is 64 + log2(v); v < 0 is 62 - log2(-v).
		neg, pos := pg.newLabel("q_neg"), pg.newLabel("q_pos")
		pg.emit(asm.Mov.Imm(dst, quant.QuantizeZero))
		pg.emit(asm.JSGT.Imm(v, 0, pos))
		pg.emit(asm.JSLT.Imm(v, 0, neg))
		pg.emit(asm.Ja.Label(done))
		pg.label(pos)
		pg.emit(asm.Mov.Reg(asm.R3, v))
		pg.log2(asm.R3, asm.R4)
		pg.emit(asm.Mov.Reg(dst, asm.R4), asm.Add.Imm(dst, quant.QuantizeZero+1))
		pg.emit(asm.Ja.Label(done))
		pg.label(neg)
		pg.emit(asm.Mov.Reg(asm.R3, v), asm.Neg.Imm(asm.R3, 0))
		pg.log2(asm.R3, asm.R4)
		pg.emit(asm.Mov.Imm(dst, quant.QuantizeZero-1), asm.Sub.Reg(dst, asm.R4))
		// -2^63 has no bucket of its own: it joins the last negative one.
		pg.emit(asm.JSGE.Imm(dst, 0, done))
		pg.emit(asm.Mov.Imm(dst, 0))
	case "lquantize":
		p := l.Lquantize()
		top := int64(p.Base) + int64(p.Levels)*int64(p.Step)
		in := pg.newLabel("lq_in")
		pg.emit(asm.Mov.Imm(dst, 0))
		pg.emit(asm.JSLT.Imm(v, p.Base, done))
		pg.emit(asm.LoadImm(asm.R3, top, asm.DWord))
		pg.emit(asm.JSLT.Reg(v, asm.R3, in))
		pg.emit(asm.Mov.Imm(dst, int32(p.Levels)+1))
		pg.emit(asm.Ja.Label(done))
		pg.label(in)
		pg.emit(asm.Mov.Reg(dst, v), asm.Sub.Imm(dst, p.Base))
		pg.emit(asm.Div.Imm(dst, int32(p.Step)), asm.Add.Imm(dst, 1))
	case "llquantize":
		// k: the last positive bin whose lower bound |v| reaches; then
		// zero+k, or zero-k for negative values.
		p := l.Llquantize()
		zero := int32(p.Zero())
		mag, k, sign := asm.R3, asm.R4, asm.R5
		abs, counted := pg.newLabel("llq_abs"), pg.newLabel("llq_k")
		pg.emit(asm.Mov.Reg(mag, v), asm.Mov.Imm(sign, 1))
		pg.emit(asm.JSGE.Imm(v, 0, abs))
		pg.emit(asm.Neg.Imm(mag, 0), asm.Mov.Imm(sign, -1))
		pg.label(abs)
		pg.emit(asm.Mov.Imm(k, 0))
		p.Bounds(func(off int, lower uint64) {
			pg.emit(asm.LoadImm(dst, int64(lower), asm.DWord))
			pg.emit(asm.JLT.Reg(mag, dst, counted))
			pg.emit(asm.Mov.Imm(k, int32(off)))
		})
		pg.emit(asm.LoadImm(dst, int64(quant.Pow(uint64(p.Factor), int(p.Hmag)+1)), asm.DWord))
		pg.emit(asm.JLT.Reg(mag, dst, counted))
		pg.emit(asm.Mov.Imm(k, zero))
		pg.label(counted)
		pg.emit(asm.Mul.Reg(k, sign))
		pg.emit(asm.Mov.Imm(dst, zero), asm.Add.Reg(dst, k))
	}
	pg.label(done)
}

// log2 sets dst to floor(log2(x)) for x > 0, by halving; x is clobbered.
func (pg *probeGen) log2(x, dst asm.Register) {
	pg.emit(asm.Mov.Imm(dst, 0))
	for _, sh := range []int32{32, 16, 8, 4, 2, 1} {
		next := pg.newLabel("log2")
		pg.emit(asm.Mov.Reg(asm.R2, x), asm.RSh.Imm(asm.R2, sh))
		pg.emit(asm.JEq.Imm(asm.R2, 0, next))
		pg.emit(asm.Mov.Reg(x, asm.R2), asm.Add.Imm(dst, sh))
		pg.label(next)
	}
}

// lookupKey looks up the key at state+off in map m into R0.
func (pg *probeGen) lookupKey(m string, off int) {
	pg.mapPtr(asm.R1, m)
	pg.addrOf(asm.R2, regState, off)
	pg.call(asm.FnMapLookupElem)
}

// aggKey builds an aggregation key at state+off: integers as u64, strings
// zero-padded to their slot so that equal strings make equal keys.
func (pg *probeGen) aggKey(l *AggLayout, keys []ast.Expr, off int) error {
	for i, k := range keys {
		d := l.Keys[i]
		if d.Type.Kind == types.Stack {
			// The type the key was laid out with: the deepest of its uses.
			if err := pg.stackInto(d.Type, regState, off+d.Off); err != nil {
				return err
			}
			continue
		}
		if d.Type.Kind == types.Sym {
			if err := pg.symInto(d.Type, k, regState, off+d.Off); err != nil {
				return err
			}
			continue
		}
		if d.Type.IsString() {
			pg.zero(regState, off+d.Off, d.Size)
			if err := pg.strInto(k, regState, off+d.Off, d.Type.Size); err != nil {
				return err
			}
			continue
		}
		if err := pg.expr(k); err != nil {
			return err
		}
		pg.emit(asm.StoreMem(regState, int16(off+d.Off), asm.R0, asm.DWord))
	}
	return nil
}
