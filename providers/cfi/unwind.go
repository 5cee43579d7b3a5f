package cfi

// Stop says why a walk ended.
type Stop uint8

const (
	// StopEnd: the walk reached the outermost frame (an undefined return
	// address, or a zero one): the stack is whole.
	StopEnd Stop = iota
	// StopNoMapping: a PC outside every mapping of code the walker knows.
	StopNoMapping
	// StopNoRule: the code has no unwind rule the walker follows.
	StopNoRule
	// StopUnreadable: a word of the stack could not be read (not
	// resident, or not mapped).
	StopUnreadable
	// StopDepth: the depth limit.
	StopDepth
)

func (s Stop) String() string {
	return [...]string{"end", "no mapping", "no rule", "unreadable", "depth"}[s]
}

// Marker is the frame a cut stack ends with: a value no user code can be
// at (above the user address space), which names the cause.
func Marker(s Stop) uint64 { return MarkerBase | uint64(s) }

// MarkerBase is the base of the marker frames; IsMarker tells them.
const MarkerBase = 0xffff_ffff_ffff_ff00

// IsMarker reports whether pc is a marker frame, and for which stop.
func IsMarker(pc uint64) (Stop, bool) {
	if pc&^0xff != MarkerBase || pc&0xff == 0 || pc&0xff > uint64(StopDepth) {
		return 0, false
	}
	return Stop(pc & 0xff), true
}

// Regs are the registers a walk starts from.
type Regs struct {
	PC, SP, FP uint64
}

// Code finds the code at a run-time address: the unwind table of the
// file mapped there (nil for a file without call-frame information, whose
// frames are walked by frame pointer) and the load bias (run-time address
// minus the file's address); ok is false outside every mapping of code.
type Code func(pc uint64) (t *Table, bias uint64, ok bool)

// Memory reads the 8-byte word at a user address.
type Memory func(addr uint64) (uint64, bool)

// Unwind walks the stack from regs, as the BPF walker does: the PCs,
// innermost first, at most depth of them, and why the walk stopped. A
// stack cut short (any stop but StopEnd) should be shown ending in
// Marker(stop).
func Unwind(regs Regs, code Code, mem Memory, depth int) ([]uint64, Stop) {
	pcs := []uint64{}
	pc, sp, fp := regs.PC, regs.SP, regs.FP
	// The innermost frame, and one a signal interrupted, are at the PC
	// itself; a caller's PC is a return address, just past its call,
	// which may be the first byte of another function: look up PC-1.
	exact := true
	for {
		if pc == 0 {
			return pcs, StopEnd
		}
		if len(pcs) == depth {
			return pcs, StopDepth
		}
		pcs = append(pcs, pc)
		t, bias, ok := code(pc)
		if !ok {
			return pcs, StopNoMapping
		}
		var r Rule
		if t == nil {
			r = Rule{CFA: CFAFromFP, CFAOff: 16, FP: FPAtCFA, FPOff: -16}
		} else {
			at := pc - bias
			if !exact {
				at--
			}
			r = t.Lookup(at)
		}
		exact = false
		var cfa uint64
		switch r.CFA {
		case CFAEnd:
			return pcs, StopEnd
		case CFANone:
			return pcs, StopNoRule
		case CFAFromSP:
			cfa = sp + uint64(int64(r.CFAOff))
		case CFAFromFP:
			if fp == 0 {
				return pcs, StopNoRule
			}
			cfa = fp + uint64(int64(r.CFAOff))
		case CFAPLT:
			cfa = sp + uint64(int64(r.CFAOff))
			if pc&15 >= 11 {
				cfa += 8
			}
		case CFASignal:
			var ok1, ok2, ok3 bool
			nsp, ok1 := mem(sp + uint64(int64(r.CFAOff)))
			npc, ok2 := mem(sp + uint64(int64(r.CFAOff)) + 8)
			nfp, ok3 := mem(sp + uint64(int64(r.FPOff)))
			if !ok1 || !ok2 || !ok3 {
				return pcs, StopUnreadable
			}
			pc, sp, fp, exact = npc, nsp, nfp, true
			continue
		}
		ra, ok := mem(cfa - 8)
		if !ok {
			return pcs, StopUnreadable
		}
		switch r.FP {
		case FPAtCFA:
			if fp, ok = mem(cfa + uint64(int64(r.FPOff))); !ok {
				return pcs, StopUnreadable
			}
		case FPLost:
			fp = 0
		}
		pc, sp = ra, cfa
	}
}
