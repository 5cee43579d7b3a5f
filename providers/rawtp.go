package providers

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/dstar-trace/dstar/providers/tracefs"
)

// RawTP is the rawtp provider: the kernel's tracepoints as the functions
// that fire them see them, rawtp:GROUP::EVENT. Where the kernel has BTF the
// program is a BTF tracepoint (tp_btf) and args[0..n] are typed from the
// event's btf_trace_<event> prototype, so args[1]->pid reads a struct
// task_struct; without BTF it is a plain raw tracepoint with untyped
// arguments. Unlike sdt, nothing is copied into a record first: these
// programs cost about half as much per event.
type RawTP struct {
	first func() (int, error)
}

// rawtpProbe is what a rawtp probe keeps for its prologue and Attach.
type rawtpProbe struct {
	event string
	nargs int  // arguments the event passes; -1 when unknown (no BTF)
	btf   bool // a tp_btf program, else a raw tracepoint
}

// NewRawTP returns the rawtp provider; its probes' IDs start at what firstID
// returns, in the order of tracefs.Events.
func NewRawTP(firstID func() (int, error)) *RawTP { return &RawTP{first: firstID} }

// Name returns "rawtp".
func (*RawTP) Name() string { return "rawtp" }

// notRawGroups are tracefs groups whose events are not tracepoints in the
// kernel's sense and so cannot take a raw tracepoint program: the syscalls
// group is made by the kernel from raw_syscalls:sys_enter/sys_exit (trace
// those), ftrace's are ftrace's own records, and the rest are dynamic
// events.
var notRawGroups = map[string]bool{
	"syscalls": true, "ftrace": true, "kprobes": true, "uprobes": true,
	"eprobes": true, "synthetic": true, "fprobes": true, "tracepoints": true,
}

// Probes returns the matching events, with their arguments typed from BTF.
func (r *RawTP) Probes(d Desc) ([]*Probe, error) { return r.probes(d, true) }

// List is Probes without argument types: listing reads no BTF.
func (r *RawTP) List(d Desc) ([]*Probe, error) { return r.probes(d, false) }

func (r *RawTP) probes(d Desc, typed bool) ([]*Probe, error) {
	if !fieldMatch(d.Provider, "rawtp") || !fieldMatch(d.Function, "") ||
		!maybeIdent(d.Module) || !maybeIdent(d.Name) {
		return nil, nil
	}
	evs, err := tracefs.Events()
	if err != nil {
		return nil, fmt.Errorf("rawtp provider: %w", err)
	}
	first, err := r.first()
	if err != nil {
		return nil, err
	}
	var out []*Probe
	id := first
	for _, e := range evs {
		if notRawGroups[e.Group] {
			continue
		}
		id++
		if !fieldMatch(d.Module, e.Group) || !fieldMatch(d.Name, e.Name) {
			continue
		}
		out = append(out, &Probe{
			ID: id - 1, Provider: "rawtp", Module: e.Group, Name: e.Name,
			ProgType: ebpf.RawTracepoint,
			Private:  rawtpProbe{event: e.Name, nargs: -1},
		})
	}
	if !typed || len(out) == 0 {
		return out, nil
	}
	spec, err := kernelBTF()
	if err != nil {
		// No BTF: plain raw tracepoints with untyped arguments.
		return out, nil
	}
	for _, pr := range out {
		args, err := rawtpArgs(spec, pr.Name)
		if err != nil {
			// An event without a prototype (its tracepoint has another
			// name, or it was built without BTF): untyped, as without BTF.
			continue
		}
		pr.Args = args
		pr.ProgType, pr.AttachType, pr.AttachTo = ebpf.Tracing, ebpf.AttachTraceRawTp, pr.Name
		pr.Private = rawtpProbe{event: pr.Name, nargs: len(args), btf: true}
	}
	return out, nil
}

// NumProbes is how many probes the provider lists, for the IDs of the
// providers after it.
func (r *RawTP) NumProbes() (int, error) {
	evs, err := tracefs.Events()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range evs {
		if !notRawGroups[e.Group] {
			n++
		}
	}
	return n, nil
}

// KernelBTF returns the kernel's BTF, read once per process and only when
// something needs kernel types (it takes tens of milliseconds): rawtp and
// fbt arguments, and the compiler's kernel types, share it.
func KernelBTF() (*btf.Spec, error) { return kernelBTF() }

var kernelBTF = sync.OnceValues(func() (*btf.Spec, error) {
	btfLoaded.Store(true)
	return btf.LoadKernelSpec()
})

// btfLoaded says whether kernelBTF ran, for tests of what listing reads.
var btfLoaded atomic.Bool

// rawtpArgs types an event's arguments from its btf_trace_<event> typedef:
// a pointer to the prototype of the functions the tracepoint calls, whose
// first parameter (void *__data) is not the event's.
func rawtpArgs(spec *btf.Spec, event string) ([]Arg, error) {
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_"+event, &td); err != nil {
		return nil, err
	}
	ptr, ok := td.Type.(*btf.Pointer)
	if !ok {
		return nil, fmt.Errorf("btf_trace_%s is not a function pointer", event)
	}
	fp, ok := ptr.Target.(*btf.FuncProto)
	if !ok || len(fp.Params) == 0 {
		return nil, fmt.Errorf("btf_trace_%s is not a function pointer", event)
	}
	args := []Arg{}
	for _, p := range fp.Params[1:] {
		args = append(args, btfArg(p.Type))
	}
	return args, nil
}

// btfArg is a positional argument of BTF type t, passed in a u64 slot.
func btfArg(t btf.Type) Arg {
	a := Arg{Type: CTypeName(t), Kind: ArgInt, Size: 8, BTF: t}
	switch u := btf.UnderlyingType(t).(type) {
	case *btf.Pointer:
		a.Kind = ArgPointer
	case *btf.Int:
		a.Size, a.Signed = int(u.Size), u.Encoding&btf.Signed != 0
	case *btf.Enum:
		a.Size, a.Signed = int(u.Size), u.Signed
	}
	if !isIntSize(a.Size) {
		a.Size = 8
	}
	return a
}

// CTypeName spells a BTF type as C declares it: "struct task_struct *",
// "const char *", "unsigned int", "u64".
func CTypeName(t btf.Type) string { return cTypeName(t, true) }

// BareTypeName is CTypeName without const and volatile, as D names the
// types of values (the compiler's messages, print()).
func BareTypeName(t btf.Type) string { return cTypeName(t, false) }

func cTypeName(t btf.Type, qualified bool) string {
	switch t := t.(type) {
	case *btf.Pointer:
		if _, ok := t.Target.(*btf.FuncProto); ok {
			return "void (*)()"
		}
		s := cTypeName(t.Target, qualified)
		if strings.HasSuffix(s, "*") {
			return s + "*"
		}
		return s + " *"
	case *btf.Const:
		if qualified {
			return "const " + cTypeName(t.Type, qualified)
		}
		return cTypeName(t.Type, qualified)
	case *btf.Volatile:
		if qualified {
			return "volatile " + cTypeName(t.Type, qualified)
		}
		return cTypeName(t.Type, qualified)
	case *btf.Restrict:
		return cTypeName(t.Type, qualified)
	case *btf.Struct:
		return "struct " + t.Name
	case *btf.Union:
		return "union " + t.Name
	case *btf.Enum:
		return "enum " + t.Name
	case *btf.Array:
		return fmt.Sprintf("%s [%d]", cTypeName(t.Type, qualified), t.Nelems)
	case *btf.Void:
		return "void"
	}
	if n := t.TypeName(); n != "" {
		return n
	}
	return "void"
}

// Prologue copies the event's arguments — u64 slots at the start of the
// context for both kinds of program — into arg0..arg9, narrowed to their
// types. A program may not read past the event's arguments (the kernel
// refuses to load or attach it), so without BTF only the slots clauses use
// are read.
func (*RawTP) Prologue(pr *Probe, p *Prologue) error {
	if err := checkPrologue(p); err != nil {
		return err
	}
	setup(p)
	rp, ok := pr.Private.(rawtpProbe)
	if !ok {
		return fmt.Errorf("%s: not a rawtp probe", pr)
	}
	n := NumArgs
	if rp.nargs >= 0 {
		n = min(n, rp.nargs)
	}
	for i := 0; i < n; i++ {
		if p.Unused&(1<<i) != 0 {
			continue
		}
		p.Insns = append(p.Insns, asm.LoadMem(asm.R0, p.Ctx, int16(8*i), asm.DWord))
		if i < len(pr.Args) && pr.Args[i].Kind == ArgInt {
			p.Insns = append(p.Insns, narrow(asm.R0, pr.Args[i].Size, pr.Args[i].Signed)...)
		}
		storeArg(p, i, asm.R0)
	}
	zeroArgs(p, n)
	zeroErrno(p)
	return nil
}

// narrow sign- or zero-extends the low size bytes of r to 64 bits.
func narrow(r asm.Register, size int, signed bool) asm.Instructions {
	if signed {
		return signExtend(r, size)
	}
	if size >= 8 {
		return nil
	}
	sh := int32(64 - 8*size)
	return asm.Instructions{asm.LSh.Imm(r, sh), asm.RSh.Imm(r, sh)}
}

// Attach links prog to the event's tracepoint.
func (*RawTP) Attach(pr *Probe, prog *ebpf.Program) (io.Closer, error) {
	rp, ok := pr.Private.(rawtpProbe)
	if !ok {
		return nil, fmt.Errorf("%s: not a rawtp probe", pr)
	}
	var l link.Link
	var err error
	if rp.btf {
		l, err = link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceRawTp})
	} else {
		l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: rp.event, Program: prog})
	}
	if err != nil {
		hint := ""
		if errors.Is(err, ebpf.ErrNotSupported) {
			hint = " (the kernel lacks raw tracepoint programs: Linux 4.17+, BTF tracepoints 5.5+)"
		}
		return nil, fmt.Errorf("%s: attaching to raw tracepoint %s: %w%s", pr, rp.event, err, hint)
	}
	return l, nil
}
