// Package providers discovers probes and attaches compiled BPF programs to
// them.
//
// A provider answers three questions, and keeps them apart as the DTrace
// profile-provider discussion concluded:
//
//   - which probes match a description (Probes) — this reads tracefs, BTF or
//     ELF files and never creates anything in the kernel;
//   - how a probe's program begins (Prologue) — the instructions that copy
//     what the probe's context holds into the compiler's machine state;
//   - how to attach a loaded program (Attach) — this makes the kernel objects
//     (perf events, links) and returns them as one Closer.
//
// A Probe is immutable once discovered; whatever a provider needs at attach
// time it keeps in Probe.Private.
package providers

import (
	"io"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// Provider is one source of probes.
type Provider interface {
	// Name is the provider field of its probes ("syscall", "profile", ...).
	Name() string
	// Probes returns the probes that match d, in listing order. It creates
	// nothing in the kernel. Providers that create probes on demand (profile-N)
	// return a new probe when the description names one exactly.
	Probes(d Desc) ([]*Probe, error)
	// Prologue appends to p.Insns the code that fills the machine state for
	// probe pr (arguments, errno) and filters out events that are not pr's.
	Prologue(pr *Probe, p *Prologue) error
	// Attach makes the kernel objects that fire prog on pr. Closing the
	// result releases every one of them.
	Attach(pr *Probe, prog *ebpf.Program) (io.Closer, error)
}

// Lister is implemented by providers that can list probes more cheaply than
// Probes when argument types are not wanted (dtrace -l without -v): List
// returns the same probes with the same IDs, but with Args left nil.
type Lister interface {
	List(d Desc) ([]*Probe, error)
}

// NumArgs is the number of positional arguments (arg0..arg9) a prologue
// fills in the machine state.
const NumArgs = 10

// Probe describes one probe. Everything in it is fixed at discovery.
type Probe struct {
	ID       int
	Provider string
	Module   string
	Function string
	Name     string

	// Args are the typed arguments: for sdt the fields of the tracepoint's
	// format (reachable as args->field), for others args[0..n]. Positional
	// args (Name empty) live in the machine state's argi, where the
	// prologue put them; their Offset is unused.
	Args []Arg

	// ProgType and AttachType say which kind of BPF program fires here;
	// Ctx says how that program's context is laid out for args-> access.
	ProgType   ebpf.ProgramType
	AttachType ebpf.AttachType
	// AttachTo names the kernel function or event a program of type
	// Tracing is verified against (tp_btf, fentry); empty for others.
	AttachTo string
	// UserRegs says the program's context is the traced thread's user
	// registers, a struct pt_regs (uprobes): uregs[i] reads word i of it.
	UserRegs bool

	// Private is the provider's own data (tracepoint group and event,
	// syscall number, timer period, ...). Only the provider reads it.
	Private any
}

// String renders the probe as provider:module:function:name.
func (p *Probe) String() string {
	return p.Provider + ":" + p.Module + ":" + p.Function + ":" + p.Name
}

// ArgKind says how an argument is stored in the probe's context.
type ArgKind int

const (
	ArgInt     ArgKind = iota // an integer of Size bytes at Offset
	ArgPointer                // a pointer (8 bytes) at Offset
	ArgArray                  // an inline array (char comm[16]) of Size bytes at Offset
	ArgDataLoc                // a __data_loc: a u32 at Offset, (len<<16)|offset of the data
	ArgRelLoc                 // a __rel_loc: like ArgDataLoc, but the offset is from the end of the u32
	ArgConst                  // a value fixed when the probe was found (Value), read from nowhere
)

// Arg is one argument of a probe.
type Arg struct {
	Name   string // field name (args->Name); empty for positional args
	Type   string // C type as the kernel spells it: "int", "const char *", "char[16]"
	Kind   ArgKind
	Offset int // byte offset in the program context (tracepoint programs)
	Size   int // bytes
	Signed bool
	Len    int // elements of an inline array (ArgArray); Size/Len bytes each
	// BTF is the argument's kernel type when the provider knows it (rawtp
	// and fbt arguments), so that args[1]->pid can follow a pointer.
	BTF btf.Type
	// Expr, when set, is the D expression args[i] stands for, over the
	// native values the prologue left in arg0..arg9: a translated argument
	// such as "xlate <psinfo_t *> ((struct task_struct *)arg1)", typed Type.
	Expr string
	// Slot, when not 0, says the probe's context is not the record the
	// field belongs to: its prologue leaves the field's value in
	// arg(Slot-1) instead (sdt syscalls probes on the raw sys_enter and
	// sys_exit tracepoints). Offset is then unused.
	Slot int
	// Value is an ArgConst field's value.
	Value int64
}

// Dispatcher is implemented by providers whose probes can share one kernel
// attach point: one program then serves all of them, finding the probe by a
// key read from its context (every system call reaches sys_enter; one
// program there dispatching on the call's number costs far less than one
// program per system call).
type Dispatcher interface {
	// Group names the attach point pr can share, or "" if it shares none.
	Group(pr *Probe) string
	// Key is pr's key within its group.
	Key(pr *Probe) int64
	// LoadKey appends code leaving the event's key in R0. Only Ctx, R0-R5
	// and the stack bytes at Scratch are set up.
	LoadKey(group string, p *Prologue) error
}

// UnusedErrno is the bit of Prologue.Unused that stands for errno.
const UnusedErrno = 1 << 10

// Prologue is what the compiler hands a provider to emit a probe's prologue.
// When the provider's instructions run, Ctx holds the program's context and
// State points at the per-CPU machine state. The provider may use R0-R5 freely
// and call helpers, so Ctx and State must be distinct registers among R6-R9
// (Prologue returns an error otherwise). Every prologue sets all of
// arg0..arg9 and errno.
type Prologue struct {
	Ctx   asm.Register
	State asm.Register
	// ArgOffset(i) is the offset from State of argi (0..9), a u64.
	ArgOffset func(i int) int16
	// ErrnoOffset is the offset from State of errno, a u64.
	ErrnoOffset int16
	// Skip is the label to jump to when the event is not this probe's.
	Skip string
	// Setup loads State (and whatever else the compiler needs); it may
	// jump to Skip. It must appear exactly once.
	Setup asm.Instructions
	// Scratch is a frame-pointer offset of 8 bytes the provider may use
	// before Setup.
	Scratch int16
	// Filtered says the event is known to be this probe's (a dispatcher
	// found it): the prologue need not filter.
	Filtered bool
	// Unused has bit i set when no clause reads argi, and bit UnusedErrno
	// when none reads errno: the prologue may leave those undefined and
	// save the work of filling them. The zero value asks for everything.
	Unused uint32

	Insns asm.Instructions
}
