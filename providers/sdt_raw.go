package providers

import (
	"fmt"
	"io"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// A tracepoint probe served by a perf event costs the kernel a grace
// period when it is released, one after another under a global mutex
// (about 27 ms each here: 1,584 tracepoints took 43 s to tear down), and
// the kernel refuses some (irq_vectors:irq_work_exit takes no sampling
// event). A raw tracepoint on the same kernel tracepoint fires at the
// same place, is released in about 0.3 ms and is refused by none; it
// lacks only the record the perf event fills. So an sdt probe whose
// clauses read nothing of its record or arguments is served by one.

// sdtRawProbe is an sdt probe served by a raw tracepoint.
type sdtRawProbe struct{ sdtProbe }

// ContextFree returns pr served by a raw tracepoint of its event's name,
// for a tracepoint of the kernel's own (not a system call's, which the
// raw sys_enter and sys_exit serve already, nor a dynamic event).
func (*SDT) ContextFree(pr *Probe) *Probe {
	sp, ok := pr.Private.(sdtProbe)
	if !ok || notRawGroups[sp.group] {
		return nil
	}
	cf := *pr
	cf.ProgType, cf.Private = ebpf.RawTracepoint, sdtRawProbe{sp}
	return &cf
}

// rawPrologue fills nothing from the context, which no clause reads.
func rawPrologue(p *Prologue) {
	setup(p)
	zeroArgs(p, 0)
	zeroErrno(p)
}

// attachRaw attaches prog to the raw tracepoint of pr's event.
func attachRaw(pr *Probe, prog *ebpf.Program, sp sdtRawProbe) (io.Closer, error) {
	if prog.Type() != ebpf.RawTracepoint {
		return nil, fmt.Errorf("%s: program type is %v, want %v", pr, prog.Type(), ebpf.RawTracepoint)
	}
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: sp.event, Program: prog})
	if err != nil {
		return nil, fmt.Errorf("%s: attaching to raw tracepoint %s (BPF_RAW_TRACEPOINT_OPEN): %w", pr, sp.event, err)
	}
	return l, nil
}
