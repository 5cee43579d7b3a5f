package providers

import (
	"fmt"
	"io"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/dstar-trace/dstar/providers/tracefs"
)

// SDT is the sdt provider: every kernel tracepoint, as sdt:GROUP::EVENT.
// args->field reads the tracepoint's record (fields and offsets from its
// format file), and arg0..arg9 hold its first integer and pointer fields.
// A system call's tracepoint runs on the raw sys_enter or sys_exit
// (sdt_syscalls.go), one whose record no clause reads on a raw tracepoint
// (sdt_raw.go), and the others on perf events (sdt_perf.go): the kernel
// releases the first two in a fraction of a millisecond, a perf event in
// tens.
type SDT struct {
	first func() (int, error)
}

// sdtProbe is what an sdt probe keeps for its prologue and Attach.
type sdtProbe struct{ group, event string }

// NewSDT returns the sdt provider. Its probes' IDs start at what firstID
// returns (it depends on how many syscalls the kernel traces), in the order
// of tracefs.Events: by group, then event.
func NewSDT(firstID func() (int, error)) *SDT { return &SDT{first: firstID} }

// Name returns "sdt".
func (*SDT) Name() string { return "sdt" }

// Probes returns the matching tracepoints, with their format fields as
// Args.
func (s *SDT) Probes(d Desc) ([]*Probe, error) { return s.probes(d, true) }

// List is Probes without Args: it reads only the event list, not thousands
// of format files.
func (s *SDT) List(d Desc) ([]*Probe, error) { return s.probes(d, false) }

func (s *SDT) probes(d Desc, withArgs bool) ([]*Probe, error) {
	// Rule out, without reading tracefs, descriptions no tracepoint can
	// match: tracepoint groups and events are C identifiers and sdt probes
	// have no function.
	if !fieldMatch(d.Provider, "sdt") || !fieldMatch(d.Function, "") ||
		!maybeIdent(d.Module) || !maybeIdent(d.Name) {
		return nil, nil
	}
	evs, err := tracefs.Events()
	if err != nil {
		return nil, fmt.Errorf("sdt provider: %w", err)
	}
	first, err := s.first()
	if err != nil {
		return nil, err
	}
	var out []*Probe
	for i, e := range evs {
		if !fieldMatch(d.Module, e.Group) || !fieldMatch(d.Name, e.Name) {
			continue
		}
		pr := &Probe{
			ID: first + i, Provider: "sdt", Module: e.Group, Name: e.Name,
			ProgType: ebpf.TracePoint,
			Private:  sdtProbe{e.Group, e.Name},
		}
		if sc, ok := rawSyscall(e); ok {
			pr.ProgType, pr.Private = ebpf.RawTracepoint, sc
		}
		out = append(out, pr)
	}
	if withArgs {
		evs := make([]tracefs.Event, len(out))
		for i, pr := range out {
			evs[i] = tracefs.Event{Group: pr.Module, Name: pr.Name}
		}
		fs, err := tracefs.FormatsOf(evs)
		if err != nil {
			return nil, fmt.Errorf("sdt provider: %w", err)
		}
		for i, pr := range out {
			pr.Args = formatArgs(fs[i])
			if sc, ok := pr.Private.(sdtSyscall); ok {
				slotSyscallArgs(pr.Args, sc)
			}
		}
	}
	return out, nil
}

// NumProbes is the number of sdt probes: the kernel's tracepoints.
func (s *SDT) NumProbes() (int, error) {
	evs, err := tracefs.Events()
	if err != nil {
		return 0, fmt.Errorf("sdt provider: %w", err)
	}
	return len(evs), nil
}

// maybeIdent reports whether pattern could match a C identifier: it is a
// glob, empty, or an identifier itself.
func maybeIdent(pattern string) bool {
	if pattern == "" || isGlob(pattern) {
		return true
	}
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// formatArgs is a format's fields but the common_* header.
func formatArgs(f *tracefs.Format) []Arg {
	args := []Arg{}
	for i := range f.Fields {
		if !f.Fields[i].Common {
			args = append(args, fieldArg(&f.Fields[i]))
		}
	}
	return args
}

// Prologue loads the first NumArgs integer and pointer fields of the record
// into arg0..arg9 (zeroing the rest). The syscalls group's __syscall_nr is
// skipped, so that arg0 is the syscall's first argument as in the syscall
// provider.
func (*SDT) Prologue(pr *Probe, p *Prologue) error {
	if err := checkPrologue(p); err != nil {
		return err
	}
	switch pv := pr.Private.(type) {
	case sdtSyscall:
		sdtSyscallPrologue(pr, p, pv)
		return nil
	case sdtRawProbe:
		rawPrologue(p)
		return nil
	}
	setup(p)
	sp, ok := pr.Private.(sdtProbe)
	if !ok {
		return fmt.Errorf("%s: not an sdt probe", pr)
	}
	args := pr.Args
	if args == nil {
		f, err := tracefs.FormatOf(sp.group, sp.event)
		if err != nil {
			return err
		}
		args = formatArgs(f)
	}
	n := 0
	for i := range args {
		a := &args[i]
		if n == NumArgs {
			break
		}
		if !isScalar(a) || a.Name == "__syscall_nr" {
			continue
		}
		if p.Unused&(1<<n) != 0 {
			n++ // no clause reads it: not loaded
			continue
		}
		p.Insns = append(p.Insns, loadCtx(p.Ctx, asm.R0, asm.R1, a.Offset, a.Size, a.Signed && a.Kind == ArgInt)...)
		storeArg(p, n, asm.R0)
		n++
	}
	zeroArgs(p, n)
	zeroErrno(p)
	return nil
}

// Attach attaches prog to the tracepoint, through whichever hook its
// probe was compiled for.
func (*SDT) Attach(pr *Probe, prog *ebpf.Program) (io.Closer, error) {
	switch pv := pr.Private.(type) {
	case sdtSyscall:
		return attachRawSyscall(pr, prog, pv.entry)
	case sdtRawProbe:
		return attachRaw(pr, prog, pv)
	}
	sp, ok := pr.Private.(sdtProbe)
	if !ok {
		return nil, fmt.Errorf("%s: not an sdt probe", pr)
	}
	if prog.Type() != ebpf.TracePoint {
		return nil, fmt.Errorf("%s: program type is %v, want %v", pr, prog.Type(), ebpf.TracePoint)
	}
	if _, err := tracefs.Dir(); err != nil {
		return nil, fmt.Errorf("%s: %w", pr, err)
	}
	l, err := attachPerfTracepoint(sp.group, sp.event, prog)
	if err != nil {
		return nil, fmt.Errorf("%s: attaching to tracepoint %s:%s: %w", pr, sp.group, sp.event, err)
	}
	return l, nil
}
