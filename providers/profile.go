package providers

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Profile is the profile provider: profile-N fires on every online CPU at
// rate N, tick-N on one CPU. Each is a software cpu-clock perf event per CPU,
// made at attach time only.
type Profile struct {
	fixed []*Probe // DTrace's listed set, IDs from the registry

	mu     sync.Mutex
	made   map[string]*Probe // created on demand, by name
	nextID int
}

// profileNames is the set DTrace lists; other rates are created on demand.
var profileNames = []string{
	"profile-97", "profile-199", "profile-499", "profile-997", "profile-1999",
	"profile-4001", "profile-4999",
	"tick-1", "tick-10", "tick-100", "tick-500", "tick-1000", "tick-5000",
	"tick-1s", "tick-10s",
}

// firstDynamicID is where the IDs of probes created on demand start: far
// above the listed probes, so creating one never shifts another's ID, and
// below pidFirstID. Six digits, as dtrace's probe lines have room for
// (tick-1sec is in most scripts).
const firstDynamicID = 900000

// profileProbe is what a profile probe keeps for Attach.
type profileProbe struct {
	period time.Duration
	perCPU bool
}

// NewProfile returns the profile provider; its listed probes get IDs
// firstID, firstID+1, ... (len(profileNames) of them).
func NewProfile(firstID int) *Profile {
	p := &Profile{made: map[string]*Probe{}, nextID: firstDynamicID}
	for i, name := range profileNames {
		pr, err := newProfileProbe(firstID+i, name)
		if err != nil {
			panic(err) // the fixed names are valid
		}
		p.fixed = append(p.fixed, pr)
	}
	return p
}

func newProfileProbe(id int, name string) (*Probe, error) {
	period, perCPU, ok, err := parseProfileName(name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, nil
	}
	return &Probe{
		ID: id, Provider: "profile", Name: name,
		ProgType: ebpf.PerfEvent, AttachType: ebpf.AttachPerfEvent,
		Private: profileProbe{period: period, perCPU: perCPU},
	}, nil
}

// Name returns "profile".
func (*Profile) Name() string { return "profile" }

// Probes returns the listed probes d matches, plus those made before; a
// description naming a rate exactly (profile-1234, tick-3s) makes that probe.
func (p *Profile) Probes(d Desc) ([]*Probe, error) {
	if !fieldMatch(d.Module, "") || !fieldMatch(d.Function, "") || !fieldMatch(d.Provider, "profile") {
		return nil, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if d.Name != "" && !isGlob(d.Name) {
		for _, pr := range p.fixed {
			if pr.Name == d.Name {
				return []*Probe{pr}, nil
			}
		}
		if pr := p.made[d.Name]; pr != nil {
			return []*Probe{pr}, nil
		}
		if p.nextID >= pidFirstID {
			return nil, fmt.Errorf("profile: too many probes made (%d)", p.nextID-firstDynamicID)
		}
		pr, err := newProfileProbe(p.nextID, d.Name)
		if pr == nil || err != nil {
			return nil, err
		}
		p.nextID++
		p.made[d.Name] = pr
		return []*Probe{pr}, nil
	}
	var out []*Probe
	for _, pr := range p.fixed {
		if d.Matches(pr) {
			out = append(out, pr)
		}
	}
	var made []*Probe
	for _, pr := range p.made {
		if d.Matches(pr) {
			made = append(made, pr)
		}
	}
	sort.Slice(made, func(i, j int) bool { return made[i].ID < made[j].ID })
	return append(out, made...), nil
}

// Prologue sets arg0 to the interrupted kernel PC (0 in user mode) and arg1
// to the user PC (0 in kernel mode), from the pt_regs that start the
// perf-event context (struct bpf_perf_event_data).
func (*Profile) Prologue(pr *Probe, p *Prologue) error {
	if err := checkPrologue(p); err != nil {
		return err
	}
	setup(p)
	if !regs.supported {
		return fmt.Errorf("profile: pt_regs layout unknown on this architecture")
	}
	store := label(pr, "store")
	// Jump past the swap to user mode when in kernel mode: mode bits zero
	// on x86 (cs privilege level 0), non-zero on arm64 (pstate EL1).
	inKernel := asm.JEq
	if !regs.kernelIfZero {
		inKernel = asm.JNE
	}
	p.Insns = append(p.Insns,
		asm.LoadMem(asm.R0, p.Ctx, regs.ip, asm.DWord),
		asm.LoadMem(asm.R2, p.Ctx, regs.mode, asm.DWord),
		asm.And.Imm(asm.R2, regs.modeMask),
		asm.Mov.Reg(asm.R1, asm.R0), // kernel PC
		asm.Mov.Imm(asm.R3, 0),      // user PC
		inKernel.Imm(asm.R2, 0, store),
		asm.Mov.Imm(asm.R1, 0),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.StoreMem(p.State, p.ArgOffset(0), asm.R1, asm.DWord).WithSymbol(store),
	)
	storeArg(p, 1, asm.R3)
	zeroArgs(p, 2)
	zeroErrno(p)
	return nil
}

// Attach opens one cpu-clock perf event per CPU (all online CPUs for
// profile-N, the first for tick-N) and links prog to each.
func (p *Profile) Attach(pr *Probe, prog *ebpf.Program) (io.Closer, error) {
	return p.AttachWith(pr, prog, AttachOptions{})
}

// AttachWith is Attach, on o.CPU alone when o.OnCPU (-x cpu): tick-N
// fires there, and so does profile-N (its other CPUs would record nothing).
func (*Profile) AttachWith(pr *Probe, prog *ebpf.Program, o AttachOptions) (io.Closer, error) {
	pp, ok := pr.Private.(profileProbe)
	if !ok {
		return nil, fmt.Errorf("%s: not a profile probe", pr)
	}
	if prog.Type() != ebpf.PerfEvent {
		return nil, fmt.Errorf("%s: program type is %v, want %v", pr, prog.Type(), ebpf.PerfEvent)
	}
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pr, err)
	}
	switch {
	case o.OnCPU:
		if !slices.Contains(cpus, o.CPU) {
			return nil, fmt.Errorf("CPU %d is not online", o.CPU)
		}
		cpus = []int{o.CPU}
	case !pp.perCPU:
		cpus = cpus[:1]
	}
	var cs closers
	for _, cpu := range cpus {
		if err := attachCPUClock(&cs, cpu, pp.period, prog); err != nil {
			cs.Close()
			return nil, fmt.Errorf("%s: %w", pr, err)
		}
	}
	return cs, nil
}

// attachCPUClock opens a software cpu-clock perf event on cpu, sampling every
// period, and links prog to it, appending both to cs.
func attachCPUClock(cs *closers, cpu int, period time.Duration, prog *ebpf.Program) error {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Sample: uint64(period.Nanoseconds()),
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("perf_event_open (software cpu-clock) on CPU %d: %w%s", cpu, err, perfHint(err))
	}
	*cs = append(*cs, fdCloser(fd))
	l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
	if err != nil {
		hint := ""
		if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EINVAL) {
			hint = " (the kernel cannot link BPF programs to perf events: BPF_LINK_CREATE, Linux 5.15+)"
		}
		return fmt.Errorf("linking the program to the perf event on CPU %d: %w%s", cpu, err, hint)
	}
	*cs = append(*cs, l)
	return nil
}

func perfHint(err error) string {
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return " (the kernel lacks perf events: CONFIG_PERF_EVENTS)"
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return " (needs root, or a lower kernel.perf_event_paranoid)"
	case errors.Is(err, unix.ENODEV), errors.Is(err, unix.ENXIO):
		return " (that CPU is offline)"
	}
	return ""
}
