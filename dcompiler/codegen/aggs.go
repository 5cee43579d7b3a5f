package codegen

import (
	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/check"
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
	// The function's argument first: it may call helpers.
	var argTmp int16
	if len(call.Args) > 0 {
		if err := pg.expr(call.Args[0]); err != nil {
			return err
		}
		t, err := pg.push()
		if err != nil {
			return pg.errorf(call.Pos, "%v", err)
		}
		argTmp = t
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
		inserted := pg.newLabel("agg_inserted")
		pg.emit(asm.JEq.Imm(asm.R0, 0, inserted))
		pg.count(StAggDrops)
		pg.emit(asm.Ja.Label(done))
		pg.label(inserted)
		pg.lookupKey(l.Map, keyOff)
		pg.emit(asm.JEq.Imm(asm.R0, 0, done))
	}
	pg.label(found)
	// value[0] counts updates; it is count()'s result and tells whether
	// an aggregation has data at all.
	pg.emit(asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord))
	pg.emit(asm.Add.Imm(asm.R1, 1))
	pg.emit(asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord))
	switch l.Func {
	case "sum":
		pg.emit(asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord))
		pg.emit(asm.LoadMem(asm.R2, asm.RFP, argTmp, asm.DWord))
		pg.emit(asm.Add.Reg(asm.R1, asm.R2))
		pg.emit(asm.StoreMem(asm.R0, 8, asm.R1, asm.DWord))
	}
	pg.label(done)
	return nil
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
