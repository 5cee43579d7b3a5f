package cfi

import (
	"fmt"
	"sort"
)

// CFAKind says how a row finds the canonical frame address.
type CFAKind uint8

const (
	// CFANone: the frame cannot be unwound here (no FDE covers the
	// address, or its rule is one we do not follow).
	CFANone CFAKind = iota
	// CFAFromSP: CFA = RSP + Off.
	CFAFromSP
	// CFAFromFP: CFA = RBP + Off.
	CFAFromFP
	// CFAPLT: a 16-byte PLT entry: CFA = RSP + Off, plus 8 once the
	// entry's push has run ((RIP & 15) >= 11).
	CFAPLT
	// CFASignal: a signal trampoline: RSP points at the ucontext the
	// kernel pushed, which holds the interrupted RIP, RSP and RBP.
	CFASignal
	// CFAEnd: the return address is undefined: the outermost frame
	// (_start, a thread's start).
	CFAEnd
)

func (k CFAKind) String() string {
	return [...]string{"none", "rsp", "rbp", "plt", "signal", "end"}[k]
}

// FPKind says where the caller's frame pointer (RBP) is.
type FPKind uint8

const (
	// FPSame: the caller's RBP is the current one.
	FPSame FPKind = iota
	// FPAtCFA: the caller's RBP was saved at CFA + FPOff.
	FPAtCFA
	// FPLost: the caller's RBP cannot be known (kept in another register,
	// or declared undefined); a frame whose CFA needs it cannot be
	// unwound.
	FPLost
)

// Row is the rule for the addresses from PC up to the next row's PC.
type Row struct {
	PC     uint64 // the file's virtual address
	CFA    CFAKind
	FP     FPKind
	CFAOff int32
	FPOff  int32
}

// Rule is a row without its address: how one frame is unwound.
type Rule struct {
	CFA    CFAKind
	FP     FPKind
	CFAOff int32
	FPOff  int32
}

// Rule returns r's rule.
func (r Row) Rule() Rule { return Rule{r.CFA, r.FP, r.CFAOff, r.FPOff} }

func (r Rule) String() string {
	var cfa string
	switch r.CFA {
	case CFAFromSP, CFAFromFP, CFAPLT:
		cfa = fmt.Sprintf("%s%+d", r.CFA, r.CFAOff)
	default:
		cfa = r.CFA.String()
	}
	switch r.FP {
	case FPAtCFA:
		return fmt.Sprintf("cfa=%s rbp=c%+d", cfa, r.FPOff)
	case FPLost:
		return fmt.Sprintf("cfa=%s rbp=?", cfa)
	}
	return "cfa=" + cfa
}

// Table is a file's unwind rows, sorted by PC, adjacent equal rules
// merged.
type Table struct {
	Rows []Row
}

// Lookup returns the rule for address pc of the file: NoRule before the
// first row.
func (t *Table) Lookup(pc uint64) Rule {
	i := sort.Search(len(t.Rows), func(i int) bool { return t.Rows[i].PC > pc })
	if i == 0 {
		return Rule{}
	}
	return t.Rows[i-1].Rule()
}
