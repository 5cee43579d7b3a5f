package providers

import (
	"errors"
	"fmt"
	"io"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// DTrace is the dtrace provider: BEGIN, END and ERROR. They are not kernel
// events: the engine runs their programs itself, with Fire, which gives
// DTrace's ordering (BEGIN before any other probe is enabled, END after all
// are disabled).
type DTrace struct{}

// The dtrace provider's probe IDs, fixed as in DTrace.
const (
	BeginID = 1
	EndID   = 2
	ErrorID = 3
)

var dtraceProbes = []*Probe{
	dtraceProbe(BeginID, "BEGIN"),
	dtraceProbe(EndID, "END"),
	dtraceProbe(ErrorID, "ERROR"),
}

func dtraceProbe(id int, name string) *Probe {
	return &Probe{ID: id, Provider: "dtrace", Name: name, ProgType: ebpf.RawTracepoint}
}

// isDTraceName reports whether d names one of the dtrace provider's probes
// and nothing else could: these names are reserved for it, which lets a
// BEGIN-only script start without reading tracefs.
func isDTraceName(d Desc) bool {
	if d.Provider != "" || d.Module != "" || d.Function != "" {
		return false
	}
	return d.Name == "BEGIN" || d.Name == "END" || d.Name == "ERROR"
}

// Name returns "dtrace".
func (DTrace) Name() string { return "dtrace" }

// Probes returns those of BEGIN, END and ERROR that d matches.
func (DTrace) Probes(d Desc) ([]*Probe, error) {
	var out []*Probe
	for _, p := range dtraceProbes {
		if d.Matches(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// Prologue copies the six u64s Fire passes as the context into arg0..arg5
// (ERROR's arguments; zero for BEGIN and END).
func (DTrace) Prologue(pr *Probe, p *Prologue) error {
	if err := checkPrologue(p); err != nil {
		return err
	}
	setup(p)
	for i := 0; i < fireArgs; i++ {
		p.Insns = append(p.Insns, asm.LoadMem(asm.R0, p.Ctx, int16(8*i), asm.DWord))
		storeArg(p, i, asm.R0)
	}
	zeroArgs(p, fireArgs)
	zeroErrno(p)
	return nil
}

// Attach makes nothing: dtrace probes fire through Fire.
func (DTrace) Attach(pr *Probe, prog *ebpf.Program) (io.Closer, error) {
	if prog.Type() != ebpf.RawTracepoint {
		return nil, fmt.Errorf("dtrace:::%s: program type is %v, want %v", pr.Name, prog.Type(), ebpf.RawTracepoint)
	}
	return nopCloser{}, nil
}

// fireArgs is how many u64s a dtrace probe's context holds, and what its
// prologue reads; maxFireArgs is the kernel's limit for a raw tracepoint
// context (MAX_BPF_FUNC_ARGS).
const (
	fireArgs    = 6
	maxFireArgs = 12
)

// Fire runs prog — a dtrace probe's raw-tracepoint program — once, now, on
// the calling CPU, with args as its context (BPF_PROG_TEST_RUN). The context
// is padded with zeros to the six u64s the prologue reads.
func Fire(prog *ebpf.Program, args ...uint64) error { return FireOn(prog, -1, args...) }

// FireOn is Fire on the given CPU (BPF_F_TEST_RUN_ON_CPU), or on the
// calling CPU when cpu is negative.
func FireOn(prog *ebpf.Program, cpu int, args ...uint64) error {
	if len(args) > maxFireArgs {
		return fmt.Errorf("fire: %d arguments, the most a raw tracepoint context holds is %d", len(args), maxFireArgs)
	}
	ctx := make([]uint64, max(fireArgs, len(args)))
	copy(ctx, args)
	opts := &ebpf.RunOptions{Context: ctx}
	if cpu >= 0 {
		opts.CPU, opts.Flags = uint32(cpu), unix.BPF_F_TEST_RUN_ON_CPU
	}
	if _, err := prog.Run(opts); err != nil {
		if cpu >= 0 && errors.Is(err, unix.ENXIO) {
			return fmt.Errorf("fire: CPU %d is not online", cpu)
		}
		if errors.Is(err, ebpf.ErrNotSupported) {
			return fmt.Errorf("fire: the kernel cannot run raw tracepoint programs on demand (BPF_PROG_TEST_RUN, Linux 5.10+): %w", err)
		}
		return fmt.Errorf("fire: BPF_PROG_TEST_RUN: %w", err)
	}
	return nil
}
