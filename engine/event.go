package engine

import (
	"github.com/dstar-trace/dstar/dcompiler/printf"
	"github.com/dstar-trace/dstar/providers"
)

// EventKind says what an Event reports.
type EventKind string

// The kinds of event.
const (
	KindPrintf EventKind = "printf"
	KindTrace  EventKind = "trace"
	KindProbe  EventKind = "probe" // a clause with no actions fired
	KindExit   EventKind = "exit"
	KindError  EventKind = "error"
	KindDrop   EventKind = "drop"
	KindPrinta EventKind = "printa"
)

// Event is one piece of output: one recording action of a probe firing, a
// fault, or a report of drops.
type Event struct {
	Kind      EventKind
	Probe     *providers.Probe // nil for drops
	EPID      uint32
	CPU       int
	PID       int
	Timestamp uint64
	Values    []printf.Value
	Status    int    // exit status, for KindExit
	Count     uint64 // records lost, for KindDrop
	Text      string // exactly what the command line prints
	Stderr    bool   // Text belongs on standard error
}
