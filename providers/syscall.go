package providers

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/dstar-trace/dstar/providers/sysnum"
	"github.com/dstar-trace/dstar/providers/tracefs"
)

// Syscall is the syscall provider: syscall:vmlinux:NAME:entry and :return
// for every syscall the kernel traces (syscalls:sys_enter_NAME exists) and
// whose number dstar knows. Programs run on the raw sys_enter/sys_exit
// tracepoints and filter on the syscall number: about half the cost of the
// per-syscall perf-event tracepoints, and their links close in a fraction
// of a millisecond instead of tens.
type Syscall struct {
	first int
	list  func() ([]sysCall, error)
}

type sysCall struct {
	name string
	nr   int
}

// syscallProbe is what a syscall probe keeps for its prologue and Attach.
type syscallProbe struct {
	nr    int
	entry bool
}

// NewSyscall returns the syscall provider. Probe IDs start at firstID and
// go two per syscall (entry, then return), syscalls sorted by name.
func NewSyscall(firstID int) *Syscall {
	return &Syscall{first: firstID, list: sync.OnceValues(listSyscalls)}
}

// listSyscalls reads the traced syscalls from the event list (not from the
// events directory: one file read instead of hundreds).
func listSyscalls() ([]sysCall, error) {
	evs, err := tracefs.Events()
	if err != nil {
		return nil, fmt.Errorf("syscall provider: %w", err)
	}
	var out []sysCall
	for _, e := range evs { // sorted by group and name, so by syscall name
		name, ok := strings.CutPrefix(e.Name, "sys_enter_")
		if e.Group != "syscalls" || !ok {
			continue
		}
		if nr, ok := sysnum.Lookup(name); ok {
			out = append(out, sysCall{name, nr})
		}
	}
	return out, nil
}

// NumProbes is how many probes the provider has; the next provider's IDs
// start after them.
func (s *Syscall) NumProbes() (int, error) {
	l, err := s.list()
	return 2 * len(l), err
}

// Name returns "syscall".
func (*Syscall) Name() string { return "syscall" }

// Probes returns the matching probes; entry probes carry their arguments'
// C types from the syscall's tracepoint format.
func (s *Syscall) Probes(d Desc) ([]*Probe, error) { return s.probes(d, true) }

// List is Probes without argument types: it reads nothing but the event
// list.
func (s *Syscall) List(d Desc) ([]*Probe, error) { return s.probes(d, false) }

func (s *Syscall) probes(d Desc, withArgs bool) ([]*Probe, error) {
	// Rule out descriptions that cannot match without reading tracefs.
	if !fieldMatch(d.Provider, "syscall") || !fieldMatch(d.Module, "vmlinux") ||
		!fieldMatch(d.Name, "entry") && !fieldMatch(d.Name, "return") {
		return nil, nil
	}
	l, err := s.list()
	if err != nil {
		return nil, err
	}
	if len(l) == 0 && d.Provider == "syscall" {
		return nil, fmt.Errorf("syscall provider: tracefs has no syscalls:sys_enter_* events that dstar knows (kernel built without CONFIG_FTRACE_SYSCALLS?)")
	}
	var out []*Probe
	for i, sc := range l {
		for _, entry := range []bool{true, false} {
			pr := &Probe{
				ID: s.first + 2*i, Provider: "syscall", Module: "vmlinux",
				Function: sc.name, Name: "entry",
				ProgType: ebpf.RawTracepoint,
				Private:  syscallProbe{nr: sc.nr, entry: entry},
			}
			if !entry {
				pr.ID++
				pr.Name = "return"
			}
			if d.Matches(pr) {
				out = append(out, pr)
			}
		}
	}
	if withArgs {
		if err := syscallArgs(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// syscallArgs sets the Args of syscall probes: at entry the syscall's
// parameters, typed as the kernel's sys_enter format declares them; at
// return the return value, twice (arg0 and arg1, as in DTrace).
func syscallArgs(ps []*Probe) error {
	var evs []tracefs.Event
	for _, pr := range ps {
		if pr.Private.(syscallProbe).entry {
			evs = append(evs, tracefs.Event{Group: "syscalls", Name: "sys_enter_" + pr.Function})
		}
	}
	fs, err := tracefs.FormatsOf(evs)
	if err != nil {
		return fmt.Errorf("syscall provider: %w", err)
	}
	ret := Arg{Type: "long", Kind: ArgInt, Size: 8, Signed: true}
	for _, pr := range ps {
		if !pr.Private.(syscallProbe).entry {
			pr.Args = []Arg{ret, ret}
			continue
		}
		f := fs[0]
		fs = fs[1:]
		pr.Args = []Arg{}
		for i := range f.Fields {
			fld := &f.Fields[i]
			if fld.Common || fld.Name == "__syscall_nr" {
				continue
			}
			pr.Args = append(pr.Args, positionalArg(fld.Type))
		}
	}
	return nil
}

// Prologue filters on the syscall number and fills the state. At entry:
// arg0..arg5 from pt_regs (the syscall ABI registers), errno 0. At return:
// arg0 = arg1 = the return value, errno = -ret for -4095 <= ret < 0.
//
// The raw tracepoint context is u64 args[]: (struct pt_regs *, long id) at
// sys_enter and (struct pt_regs *, long ret) at sys_exit. pt_regs is kernel
// memory, read with bpf_probe_read_kernel into the state's arg slots, which
// double as scratch space.
func (*Syscall) Prologue(pr *Probe, p *Prologue) error {
	if err := checkPrologue(p); err != nil {
		return err
	}
	sp, ok := pr.Private.(syscallProbe)
	if !ok {
		return fmt.Errorf("%s: not a syscall probe", pr)
	}
	if !regs.supported {
		return fmt.Errorf("syscall: pt_regs layout unknown on this architecture")
	}
	if sp.entry {
		syscallEntry(pr, p, int32(sp.nr))
	} else {
		syscallReturn(pr, p, int32(sp.nr))
	}
	return nil
}

func syscallEntry(pr *Probe, p *Prologue, nr int32) {
	if !p.Filtered {
		p.Insns = append(p.Insns,
			asm.LoadMem(asm.R0, p.Ctx, 8, asm.DWord), // id
			asm.JNE.Imm(asm.R0, nr, p.Skip),
		)
	}
	setup(p)
	p.Insns = append(p.Insns, asm.LoadMem(asm.R3, p.Ctx, 0, asm.DWord)) // regs
	lo, hi := regs.sysArgs[0], regs.sysArgs[0]
	for _, o := range regs.sysArgs {
		lo, hi = min(lo, o), max(hi, o)
	}
	span := int(hi-lo) + 8
	if argsUnused(p, 0, len(regs.sysArgs)) {
		// No clause reads the arguments: skip reading pt_regs.
	} else if base, ok := contiguousArgs(p, span); ok {
		// One read of the registers' span into the arg slots, then move
		// each register to its slot: six loads before six stores, as the
		// moves may overlap.
		p.Insns = append(p.Insns,
			asm.Add.Imm(asm.R3, int32(lo)),
			asm.Mov.Reg(asm.R1, p.State),
			asm.Add.Imm(asm.R1, int32(base)),
			asm.Mov.Imm(asm.R2, int32(span)),
			asm.FnProbeReadKernel.Call(),
		)
		regsOrder := []asm.Register{asm.R0, asm.R1, asm.R2, asm.R3, asm.R4, asm.R5}
		for i, o := range regs.sysArgs {
			if src := base + o - lo; src != p.ArgOffset(i) {
				p.Insns = append(p.Insns, asm.LoadMem(regsOrder[i], p.State, src, asm.DWord))
			}
		}
		for i, o := range regs.sysArgs {
			if src := base + o - lo; src != p.ArgOffset(i) {
				storeArg(p, i, regsOrder[i])
			}
		}
	} else {
		// Slots are scattered: one read per argument, keeping the pt_regs
		// pointer in arg9's slot across the helper calls.
		keep := p.ArgOffset(NumArgs - 1)
		p.Insns = append(p.Insns, asm.StoreMem(p.State, keep, asm.R3, asm.DWord))
		for i, o := range regs.sysArgs {
			p.Insns = append(p.Insns,
				asm.LoadMem(asm.R3, p.State, keep, asm.DWord),
				asm.Add.Imm(asm.R3, int32(o)),
				asm.Mov.Reg(asm.R1, p.State),
				asm.Add.Imm(asm.R1, int32(p.ArgOffset(i))),
				asm.Mov.Imm(asm.R2, 8),
				asm.FnProbeReadKernel.Call(),
			)
		}
	}
	zeroArgs(p, len(regs.sysArgs))
	zeroErrno(p)
}

// contiguousArgs reports whether the arg slots are consecutive u64s with room
// for span bytes, and where they start.
func contiguousArgs(p *Prologue, span int) (int16, bool) {
	base := p.ArgOffset(0)
	for i := 1; i < NumArgs; i++ {
		if p.ArgOffset(i) != base+int16(8*i) {
			return 0, false
		}
	}
	return base, span <= 8*NumArgs
}

func syscallReturn(pr *Probe, p *Prologue, nr int32) {
	done := label(pr, "errno")
	if !p.Filtered {
		exitNr(p)
		p.Insns = append(p.Insns, asm.JNE.Imm(asm.R0, nr, p.Skip))
	}
	setup(p)
	p.Insns = append(p.Insns, asm.LoadMem(asm.R0, p.Ctx, 8, asm.DWord)) // ret
	storeArg(p, 0, asm.R0)
	storeArg(p, 1, asm.R0)
	if p.Unused&UnusedErrno == 0 {
		// errno = -ret if -4095 <= ret < 0, else 0.
		p.Insns = append(p.Insns,
			asm.Mov.Imm(asm.R1, 0),
			asm.JSLT.Imm(asm.R0, -4095, done),
			asm.JSGE.Imm(asm.R0, 0, done),
			asm.Sub.Reg(asm.R1, asm.R0),
			asm.StoreMem(p.State, p.ErrnoOffset, asm.R1, asm.DWord).WithSymbol(done),
		)
	}
	zeroArgs(p, 2)
}

// exitNr leaves in R0 the number of the system call returning: the one
// saved at entry in pt_regs, read into the scratch slot, since the state
// is not set up until the event is known to be ours.
func exitNr(p *Prologue) {
	p.Insns = append(p.Insns,
		asm.LoadMem(asm.R3, p.Ctx, 0, asm.DWord),
		asm.Add.Imm(asm.R3, int32(regs.sysNr)),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, int32(p.Scratch)),
		asm.Mov.Imm(asm.R2, int32(regs.sysNrSize)),
		asm.FnProbeReadKernel.Call(),
		asm.LoadMem(asm.R0, asm.RFP, p.Scratch, sizes[regs.sysNrSize]),
	)
	p.Insns = append(p.Insns, signExtend(asm.R0, regs.sysNrSize)...)
}

// Group puts every entry probe on sys_enter and every return probe on
// sys_exit: one program dispatches on the system call's number.
func (*Syscall) Group(pr *Probe) string {
	sp, ok := pr.Private.(syscallProbe)
	switch {
	case !ok:
		return ""
	case sp.entry:
		return "sys_enter"
	}
	return "sys_exit"
}

// Key is the system call's number.
func (*Syscall) Key(pr *Probe) int64 {
	sp, _ := pr.Private.(syscallProbe)
	return int64(sp.nr)
}

// LoadKey loads the number of the system call entering or returning.
func (*Syscall) LoadKey(group string, p *Prologue) error {
	if !regs.supported {
		return fmt.Errorf("syscall: pt_regs layout unknown on this architecture")
	}
	if group == "sys_enter" {
		p.Insns = append(p.Insns, asm.LoadMem(asm.R0, p.Ctx, 8, asm.DWord))
		return nil
	}
	exitNr(p)
	return nil
}

// Attach attaches prog to the raw tracepoint sys_enter (entry) or sys_exit
// (return).
func (*Syscall) Attach(pr *Probe, prog *ebpf.Program) (io.Closer, error) {
	sp, ok := pr.Private.(syscallProbe)
	if !ok {
		return nil, fmt.Errorf("%s: not a syscall probe", pr)
	}
	return attachRawSyscall(pr, prog, sp.entry)
}

// attachRawSyscall attaches prog to the raw tracepoint sys_enter (entry)
// or sys_exit.
func attachRawSyscall(pr *Probe, prog *ebpf.Program, entry bool) (io.Closer, error) {
	if prog.Type() != ebpf.RawTracepoint {
		return nil, fmt.Errorf("%s: program type is %v, want %v", pr, prog.Type(), ebpf.RawTracepoint)
	}
	tp := "sys_exit"
	if entry {
		tp = "sys_enter"
	}
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: tp, Program: prog})
	if err != nil {
		return nil, fmt.Errorf("%s: attaching to raw tracepoint %s (BPF_RAW_TRACEPOINT_OPEN): %w", pr, tp, err)
	}
	return l, nil
}
