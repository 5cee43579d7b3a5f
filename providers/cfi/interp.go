package cfi

import (
	"bytes"
	"math"
)

// DWARF register numbers on x86-64.
const (
	regRBP = 6
	regRSP = 7
	regRIP = 16
)

// regKind is how a register's caller value is found (DWARF's register
// rules).
type regKind uint8

const (
	regUnset regKind = iota // no rule given: same value for callee-saved registers
	regUndefined
	regSame
	regOffset    // saved at CFA + off
	regValOffset // is CFA + off
	regRegister  // in another register
	regExpr      // saved at the address expr computes
	regValExpr   // is the value expr computes
)

type regRule struct {
	kind regKind
	off  int64
	expr []byte
}

// state is the unwind state at one address: the CFA and the two
// registers the table keeps.
type state struct {
	cfaReg  uint64
	cfaOff  int64
	cfaExpr []byte // non-nil: the CFA is computed by this expression
	fp, ra  regRule
}

// Call-frame instructions (DW_CFA_*).
const (
	cfaAdvanceLoc       = 0x40 // high two bits
	cfaOffset           = 0x80
	cfaRestore          = 0xc0
	cfaNop              = 0x00
	cfaSetLoc           = 0x01
	cfaAdvanceLoc1      = 0x02
	cfaAdvanceLoc2      = 0x03
	cfaAdvanceLoc4      = 0x04
	cfaOffsetExtended   = 0x05
	cfaRestoreExtended  = 0x06
	cfaUndefined        = 0x07
	cfaSameValue        = 0x08
	cfaRegister         = 0x09
	cfaRememberState    = 0x0a
	cfaRestoreState     = 0x0b
	cfaDefCFA           = 0x0c
	cfaDefCFARegister   = 0x0d
	cfaDefCFAOffset     = 0x0e
	cfaDefCFAExpression = 0x0f
	cfaExpression       = 0x10
	cfaOffsetExtendedSF = 0x11
	cfaDefCFASF         = 0x12
	cfaDefCFAOffsetSF   = 0x13
	cfaValOffset        = 0x14
	cfaValOffsetSF      = 0x15
	cfaValExpression    = 0x16
	cfaGNUWindowSave    = 0x2d // arm64: DW_CFA_AARCH64_negate_ra_state
	cfaGNUArgsSize      = 0x2e
	cfaGNUNegOffsetExt  = 0x2f
)

// run interprets the instructions insns of an FDE (or, with init nil, a
// CIE's initial instructions) from state st at address loc, calling emit
// with each address range's state. init is the state after the CIE's
// initial instructions, which DW_CFA_restore returns to. It reports
// whether the instructions were all understood, and if not the address
// where it stopped: the rows emitted before stand.
func (c *cie) run(insns []byte, st state, init *state, loc, end uint64, emit func(lo, hi uint64, st state)) (state, uint64, bool) {
	r := &reader{b: insns}
	var stack []state
	advance := func(to uint64) {
		if to > end {
			to = end
		}
		if to > loc {
			emit(loc, to, st)
			loc = to
		}
	}
	set := func(reg uint64, rule regRule) {
		switch reg {
		case regRBP:
			st.fp = rule
		case c.raReg:
			st.ra = rule
		}
	}
	restore := func(reg uint64) {
		if init == nil {
			set(reg, regRule{})
			return
		}
		switch reg {
		case regRBP:
			st.fp = init.fp
		case c.raReg:
			st.ra = init.ra
		}
	}
	daf := c.dataAlign
	for r.off < len(r.b) && r.err == nil {
		op := r.u8()
		switch op & 0xc0 {
		case cfaAdvanceLoc:
			advance(loc + uint64(op&0x3f)*c.codeAlign)
			continue
		case cfaOffset:
			set(uint64(op&0x3f), regRule{kind: regOffset, off: int64(r.uleb()) * daf})
			continue
		case cfaRestore:
			restore(uint64(op & 0x3f))
			continue
		}
		switch op {
		case cfaNop:
		case cfaSetLoc:
			// The FDE's encoding (absolute in .debug_frame); a
			// pc-relative set_loc does not occur in practice.
			advance(r.pointer(c.fdeEnc&^pePCRel, 0))
		case cfaAdvanceLoc1:
			advance(loc + uint64(r.u8())*c.codeAlign)
		case cfaAdvanceLoc2:
			advance(loc + uint64(r.u16())*c.codeAlign)
		case cfaAdvanceLoc4:
			advance(loc + uint64(r.u32())*c.codeAlign)
		case cfaOffsetExtended:
			reg := r.uleb()
			set(reg, regRule{kind: regOffset, off: int64(r.uleb()) * daf})
		case cfaOffsetExtendedSF:
			reg := r.uleb()
			set(reg, regRule{kind: regOffset, off: r.sleb() * daf})
		case cfaGNUNegOffsetExt:
			reg := r.uleb()
			set(reg, regRule{kind: regOffset, off: -int64(r.uleb()) * daf})
		case cfaValOffset:
			reg := r.uleb()
			set(reg, regRule{kind: regValOffset, off: int64(r.uleb()) * daf})
		case cfaValOffsetSF:
			reg := r.uleb()
			set(reg, regRule{kind: regValOffset, off: r.sleb() * daf})
		case cfaRestoreExtended:
			restore(r.uleb())
		case cfaUndefined:
			set(r.uleb(), regRule{kind: regUndefined})
		case cfaSameValue:
			set(r.uleb(), regRule{kind: regSame})
		case cfaRegister:
			reg := r.uleb()
			other := r.uleb()
			set(reg, regRule{kind: regRegister, off: int64(other)})
		case cfaRememberState:
			stack = append(stack, st)
		case cfaRestoreState:
			if len(stack) == 0 {
				return st, loc, false
			}
			// The CFA and the registers come back; the location does not.
			st, stack = stack[len(stack)-1], stack[:len(stack)-1]
		case cfaDefCFA:
			st.cfaReg = r.uleb()
			st.cfaOff = int64(r.uleb())
			st.cfaExpr = nil
		case cfaDefCFASF:
			st.cfaReg = r.uleb()
			st.cfaOff = r.sleb() * daf
			st.cfaExpr = nil
		case cfaDefCFARegister:
			st.cfaReg = r.uleb()
			st.cfaExpr = nil
		case cfaDefCFAOffset:
			st.cfaOff = int64(r.uleb())
		case cfaDefCFAOffsetSF:
			st.cfaOff = r.sleb() * daf
		case cfaDefCFAExpression:
			st.cfaExpr = r.bytes(int(r.uleb()))
		case cfaExpression:
			reg := r.uleb()
			set(reg, regRule{kind: regExpr, expr: r.bytes(int(r.uleb()))})
		case cfaValExpression:
			reg := r.uleb()
			set(reg, regRule{kind: regValExpr, expr: r.bytes(int(r.uleb()))})
		case cfaGNUArgsSize:
			r.uleb() // for exception handling only
		case cfaGNUWindowSave:
			// arm64 pointer authentication: the return address is signed.
		default:
			return st, loc, false
		}
	}
	if r.err != nil {
		return st, loc, false
	}
	advance(end)
	return st, loc, true
}

// DWARF expression operations the known patterns use.
const (
	opDeref = 0x06
	opAnd   = 0x1a
	opPlus  = 0x22
	opShl   = 0x24
	opGE    = 0x2a
	opLit0  = 0x30
	opBreg0 = 0x70
)

// pltExpr is the CFA expression of a 16-byte x86-64 PLT entry after the
// offset: RSP + off + ((RIP & 15) >= 11 ? 8 : 0), with the offset between
// the breg7 and the rest.
var pltTail = []byte{opBreg0 + regRIP, 0, opLit0 + 15, opAnd, opLit0 + 11, opGE, opLit0 + 3, opShl, opPlus}

// bregRSP decodes an expression that is exactly "DW_OP_breg7 off" followed
// by tail, returning off.
func bregRSP(expr, tail []byte) (int64, bool) {
	if len(expr) < 2 || expr[0] != opBreg0+regRSP {
		return 0, false
	}
	r := &reader{b: expr, off: 1}
	off := r.sleb()
	if r.err != nil || !bytes.Equal(expr[r.off:], tail) {
		return 0, false
	}
	return off, true
}

// rule turns an unwind state into a table rule for x86-64.
func (c *cie) rule(st state) Rule {
	if st.ra.kind == regUndefined {
		return Rule{CFA: CFAEnd}
	}
	if c.signal {
		return signalRule(st)
	}
	var r Rule
	switch {
	case st.cfaExpr != nil:
		off, ok := bregRSP(st.cfaExpr, pltTail)
		if !ok {
			return Rule{}
		}
		r.CFA, r.CFAOff = CFAPLT, int32(off)
	case st.cfaReg == regRSP:
		r.CFA = CFAFromSP
	case st.cfaReg == regRBP:
		r.CFA = CFAFromFP
	default:
		return Rule{}
	}
	if st.cfaExpr == nil {
		if !fits32(st.cfaOff) {
			return Rule{}
		}
		r.CFAOff = int32(st.cfaOff)
	}
	if st.ra.kind != regOffset || st.ra.off != -8 {
		return Rule{}
	}
	switch st.fp.kind {
	case regUnset, regSame:
		r.FP = FPSame
	case regOffset:
		if !fits32(st.fp.off) {
			return Rule{}
		}
		r.FP, r.FPOff = FPAtCFA, int32(st.fp.off)
	default:
		r.FP = FPLost
	}
	return r
}

// signalRule reads a signal trampoline's state: the CFA is the
// interrupted RSP, loaded from the ucontext at RSP ("breg7 off; deref"),
// the return address the interrupted RIP, next to it, and RBP is saved in
// the ucontext too. For CFASignal, CFAOff is the offset of the saved RSP
// from the current RSP and FPOff that of the saved RBP.
func signalRule(st state) Rule {
	sp, ok := bregRSP(st.cfaExpr, []byte{opDeref})
	if !ok || st.ra.kind != regExpr {
		return Rule{}
	}
	ip, ok := bregRSP(st.ra.expr, nil)
	if !ok || ip != sp+8 {
		return Rule{}
	}
	if st.fp.kind != regExpr {
		return Rule{}
	}
	fp, ok := bregRSP(st.fp.expr, nil)
	if !ok || !fits32(sp) || !fits32(fp) {
		return Rule{}
	}
	return Rule{CFA: CFASignal, FP: FPAtCFA, CFAOff: int32(sp), FPOff: int32(fp)}
}

func fits32(v int64) bool { return v >= math.MinInt32 && v <= math.MaxInt32 }
