package providers

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"

	"github.com/dstar-trace/dstar/providers/ksym"
)

// FBT is the function-boundary provider: fbt:MODULE:FUNCTION:entry|return
// on the kernel's functions (MODULE is vmlinux or a loadable module). It
// fires through whichever mechanism the kernel has, in order of cost:
// fentry/fexit programs (arguments typed from BTF), kprobe-multi links,
// then kprobes. Which one works is learnt by trying each once, the first
// time fbt is named; on a kernel with none, naming fbt fails with a message
// saying what each attempt found missing.
type FBT struct {
	first func() (int, error)
}

// NewFBT returns the fbt provider; its probes' IDs start at what firstID
// returns, two per function (entry, return), in /proc/kallsyms order.
func NewFBT(firstID func() (int, error)) *FBT { return &FBT{first: firstID} }

// Name is "fbt".
func (*FBT) Name() string { return "fbt" }

// fbtMethod is how an fbt probe fires.
type fbtMethod int

const (
	fbtKprobe      fbtMethod = iota // a kprobe or kretprobe (perf event)
	fbtKprobeMulti                  // a kprobe-multi link on one symbol
	fbtFentry                       // an fentry or fexit program
)

// fbtProbe is what an fbt probe keeps for its prologue and Attach.
type fbtProbe struct {
	fn     string
	ret    bool
	method fbtMethod
	nargs  int // arguments (fentry/fexit), from BTF
}

// ErrFBTUnavailable is wrapped by the error naming fbt on a kernel that
// can trace none of its functions.
var ErrFBTUnavailable = errors.New("fbt provider unavailable")

// FBTFeatures is what the kernel allows for tracing its functions: nil
// where a mechanism works, else why it does not.
type FBTFeatures struct {
	Kprobe, KprobeMulti, Fentry error
}

// FBTAvailable reports, probing the kernel the first time, whether any
// mechanism can trace kernel functions; its error says what each lacks.
func FBTAvailable() error {
	f := probeFBT()
	if f.Kprobe == nil || f.KprobeMulti == nil || f.Fentry == nil {
		return nil
	}
	return fmt.Errorf("%w: this kernel lacks kprobes (%v), kprobe-multi links (%v) and fentry/fexit programs (%v)",
		ErrFBTUnavailable, f.Kprobe, f.KprobeMulti, f.Fentry)
}

// probeFBT tries each mechanism once on a function every kernel has:
// vfs_read, exported since Linux's first versions and on no blacklist.
// (Checking /proc/kallsyms for it first would cost a third of a second.)
var probeFBT = sync.OnceValue(func() FBTFeatures {
	const sym = "vfs_read"
	var f FBTFeatures
	f.Kprobe = tryKprobe(sym)
	if err := features.HaveBPFLinkKprobeMulti(); errors.Is(err, ebpf.ErrNotSupported) {
		f.KprobeMulti = errors.New("the kernel refuses BPF_TRACE_KPROBE_MULTI links: they need CONFIG_FPROBE, Linux 5.18+")
	} else if err != nil {
		f.KprobeMulti = fmt.Errorf("probing for them failed: %w", trimMemlock(err))
	}
	f.Fentry = tryFentry(sym)
	return f
})

// trivial is a program that does nothing.
var trivial = asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}

// tryKprobe makes (and removes) a kprobe on sym.
func tryKprobe(sym string) error {
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Kprobe, Instructions: trivial, License: "GPL"})
	if err != nil {
		return fmt.Errorf("loading a kprobe program failed: %w", trimMemlock(err))
	}
	defer p.Close()
	l, err := link.Kprobe(sym, p, nil)
	if err != nil {
		// Without the kprobe PMU cilium/ebpf falls back to tracefs, and
		// reports that fallback's failure: say what it means.
		_, pmu := os.Stat("/sys/bus/event_source/devices/kprobe")
		if pmu != nil && errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("a kprobe on %s failed: no kprobe PMU in /sys/bus/event_source/devices and no kprobe_events in tracefs; the kernel was built without CONFIG_KPROBES", sym)
		}
		return fmt.Errorf("a kprobe on %s failed: %w", sym, err)
	}
	return l.Close()
}

// tryFentry loads and attaches (and drops) an fentry program on sym.
func tryFentry(sym string) error {
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFEntry, AttachTo: sym,
		Instructions: trivial, License: "GPL",
	})
	if err != nil {
		return fmt.Errorf("the kernel refuses to load one on %s: %w", sym, trimMemlock(err))
	}
	defer p.Close()
	l, err := link.AttachTracing(link.TracingOptions{Program: p})
	if err != nil {
		return fmt.Errorf("attaching one to %s failed: %w", sym, err)
	}
	return l.Close()
}

// trimMemlock drops cilium/ebpf's hint about RLIMIT_MEMLOCK, which does not
// apply to root.
func trimMemlock(err error) error {
	msg, _, cut := strings.Cut(err.Error(), " (MEMLOCK")
	if !cut {
		return err
	}
	return errors.New(msg)
}

// kernelFunctions returns the kernel functions one can trace by name,
// each once per module (a kprobe on a name takes its first definition), in
// /proc/kallsyms order.
var kernelFunctions = sync.OnceValues(func() ([]ksym.Func, error) {
	t, err := ksym.Kernel()
	if err != nil {
		return nil, fmt.Errorf("reading kernel functions: %w", err)
	}
	return traceable(t.Functions()), nil
})

// traceable drops what one cannot name in C or trace by name reliably:
// compiler-made clones (foo.isra.0, foo.cold), BPF programs and ftrace
// trampolines.
func traceable(all []ksym.Func) []ksym.Func {
	var out []ksym.Func
	seen := map[ksym.Func]bool{}
	for _, s := range all {
		if strings.ContainsRune(s.Name, '.') || seen[s] || s.Module == "bpf" || strings.HasPrefix(s.Module, "__builtin") {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

// Probes returns the kernel functions d matches, two probes each. Naming
// fbt on a kernel that cannot trace functions is an error; listing every
// provider skips fbt quietly there, and does not try the mechanisms at all
// unless the kernel has a kprobe event source (so that listing creates
// nothing in the kernel on kernels without one).
func (f *FBT) Probes(d Desc) ([]*Probe, error) { return f.probes(d, true) }

// List is Probes without argument types.
func (f *FBT) List(d Desc) ([]*Probe, error) { return f.probes(d, false) }

func (f *FBT) probes(d Desc, typed bool) ([]*Probe, error) {
	if !fieldMatch(d.Provider, "fbt") || !fieldMatch(d.Name, "entry") && !fieldMatch(d.Name, "return") {
		return nil, nil
	}
	if d.Provider != "fbt" {
		if _, err := os.Stat("/sys/bus/event_source/devices/kprobe"); err != nil {
			return nil, nil
		}
		if FBTAvailable() != nil {
			return nil, nil
		}
	}
	if err := FBTAvailable(); err != nil {
		return nil, err
	}
	syms, err := kernelFunctions()
	if err != nil {
		return nil, fmt.Errorf("fbt provider: %w", err)
	}
	first, err := f.first()
	if err != nil {
		return nil, err
	}
	feat := probeFBT()
	var spec *btf.Spec
	if typed && feat.Fentry == nil {
		spec, _ = kernelBTF()
	}
	var out []*Probe
	for i, s := range syms {
		if !fieldMatch(d.Module, s.Module) || !fieldMatch(d.Function, s.Name) {
			continue
		}
		for j, name := range []string{"entry", "return"} {
			if !fieldMatch(d.Name, name) {
				continue
			}
			pr := &Probe{ID: first + 2*i + j, Provider: "fbt", Module: s.Module, Function: s.Name, Name: name}
			if typed && !f.setMethod(pr, spec, feat) {
				continue // no mechanism reaches this function
			}
			out = append(out, pr)
		}
	}
	return out, nil
}

// setMethod picks how pr fires: fentry/fexit where the function has a BTF
// prototype, else kprobe-multi or a kprobe. It reports false when none
// can reach the function.
func (*FBT) setMethod(pr *Probe, spec *btf.Spec, feat FBTFeatures) bool {
	ret := pr.Name == "return"
	if spec != nil && pr.Module == "vmlinux" {
		var fn *btf.Func
		if err := spec.TypeByName(pr.Function, &fn); err == nil {
			if fp, ok := fn.Type.(*btf.FuncProto); ok && len(fp.Params) <= maxFireArgs && oneSlotEach(fp) {
				pr.ProgType, pr.AttachType, pr.AttachTo = ebpf.Tracing, ebpf.AttachTraceFEntry, pr.Function
				if ret {
					pr.AttachType = ebpf.AttachTraceFExit
				}
				pr.Args = fentryArgs(fp, ret)
				pr.Private = fbtProbe{fn: pr.Function, ret: ret, method: fbtFentry, nargs: len(fp.Params)}
				return true
			}
		}
	}
	switch {
	case feat.KprobeMulti == nil:
		pr.ProgType, pr.AttachType = ebpf.Kprobe, ebpf.AttachTraceKprobeMulti
		pr.Private = fbtProbe{fn: pr.Function, ret: ret, method: fbtKprobeMulti}
	case feat.Kprobe == nil:
		pr.ProgType = ebpf.Kprobe
		pr.Private = fbtProbe{fn: pr.Function, ret: ret, method: fbtKprobe}
	default:
		return false
	}
	return true
}

// oneSlotEach reports whether each of a function's arguments, and its
// return value, takes one u64 slot of an fentry/fexit context, so that
// argument i is slot i. (A struct passed by value may take two.)
func oneSlotEach(fp *btf.FuncProto) bool {
	fits := func(t btf.Type) bool {
		if _, void := btf.UnderlyingType(t).(*btf.Void); void {
			return true
		}
		n, err := btf.Sizeof(t)
		return err == nil && n <= 8
	}
	for _, p := range fp.Params {
		if !fits(p.Type) {
			return false
		}
	}
	return fits(fp.Return)
}

// fentryArgs types an fentry probe's args[] from the function's prototype
// and an fexit probe's as DTrace's fbt return: args[1] is the return
// value (args[0], the offset of the return instruction, is not known).
func fentryArgs(fp *btf.FuncProto, ret bool) []Arg {
	if ret {
		args := []Arg{{Type: "int", Kind: ArgInt, Size: 4, Signed: true}}
		if _, void := btf.UnderlyingType(fp.Return).(*btf.Void); !void {
			args = append(args, btfArg(fp.Return))
		}
		return args
	}
	args := []Arg{}
	for _, p := range fp.Params {
		args = append(args, btfArg(p.Type))
	}
	return args
}

// Prologue fills arg0..: for fentry the function's arguments from the
// program's context (u64 slots); for fexit arg1 = the return value, found
// in the slot after the arguments. For kprobes the arguments come from the
// registers of the C calling convention, and on return arg1 from the
// return-value register.
func (*FBT) Prologue(pr *Probe, p *Prologue) error {
	if err := checkPrologue(p); err != nil {
		return err
	}
	setup(p)
	fp, ok := pr.Private.(fbtProbe)
	if !ok {
		return fmt.Errorf("%s: not an fbt probe", pr)
	}
	n := 0
	load := func(off int16, a *Arg) {
		p.Insns = append(p.Insns, asm.LoadMem(asm.R0, p.Ctx, off, asm.DWord))
		if a != nil && a.Kind == ArgInt {
			p.Insns = append(p.Insns, narrow(asm.R0, a.Size, a.Signed)...)
		}
	}
	arg := func(i int) *Arg {
		if i < len(pr.Args) {
			return &pr.Args[i]
		}
		return nil
	}
	switch {
	case fp.method == fbtFentry && !fp.ret:
		for n = 0; n < min(fp.nargs, NumArgs); n++ {
			if p.Unused&(1<<n) == 0 {
				load(int16(8*n), arg(n))
				storeArg(p, n, asm.R0)
			}
		}
	case fp.method == fbtFentry:
		zeroArgs(p, 0)                                // arg0, the return offset, is unknown; arg1 is set below
		if p.Unused&(1<<1) == 0 && len(pr.Args) > 1 { // not for a void function
			load(int16(8*fp.nargs), arg(1))
			storeArg(p, 1, asm.R0)
		}
		n = NumArgs
	case !regs.supported:
		return fmt.Errorf("fbt: pt_regs layout unknown on this architecture")
	case !fp.ret:
		for n = 0; n < len(regs.callArgs) && n < NumArgs; n++ {
			if p.Unused&(1<<n) == 0 {
				load(regs.callArgs[n], nil)
				storeArg(p, n, asm.R0)
			}
		}
	default:
		zeroArgs(p, 0)
		if p.Unused&(1<<1) == 0 {
			load(regs.ret, nil)
			storeArg(p, 1, asm.R0)
		}
		n = NumArgs
	}
	zeroArgs(p, n)
	zeroErrno(p)
	return nil
}

// Attach attaches prog to the function by the probe's mechanism.
func (*FBT) Attach(pr *Probe, prog *ebpf.Program) (io.Closer, error) {
	fp, ok := pr.Private.(fbtProbe)
	if !ok {
		return nil, fmt.Errorf("%s: not an fbt probe", pr)
	}
	var l link.Link
	var err error
	switch fp.method {
	case fbtFentry:
		l, err = link.AttachTracing(link.TracingOptions{Program: prog})
	case fbtKprobeMulti:
		opts := link.KprobeMultiOptions{Symbols: []string{fp.fn}}
		if fp.ret {
			l, err = link.KretprobeMulti(prog, opts)
		} else {
			l, err = link.KprobeMulti(prog, opts)
		}
	default:
		if fp.ret {
			l, err = link.Kretprobe(fp.fn, prog, nil)
		} else {
			l, err = link.Kprobe(fp.fn, prog, nil)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: attaching to kernel function %s: %w", pr, fp.fn, err)
	}
	return l, nil
}
