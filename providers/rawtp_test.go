package providers

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

func TestRawTPProbes(t *testing.T) {
	newHarness(t, denseLayout) // for bpftest.Require
	r := NewRawTP(func() (int, error) { return 5000, nil })
	ps, err := r.Probes(mustDesc(t, "rawtp:sched::sched_switch"))
	if err != nil || len(ps) != 1 {
		t.Fatalf("rawtp:sched::sched_switch: %v, %v", ps, err)
	}
	pr := ps[0]
	if pr.ProgType != ebpf.Tracing || pr.AttachType != ebpf.AttachTraceRawTp || pr.AttachTo != "sched_switch" {
		t.Errorf("program %v/%v/%q, want a tp_btf program on sched_switch", pr.ProgType, pr.AttachType, pr.AttachTo)
	}
	if len(pr.Args) < 3 || pr.Args[1].Type != "struct task_struct *" || pr.Args[1].Kind != ArgPointer || pr.Args[0].Size != 1 {
		t.Errorf("args: %+v", pr.Args)
	}
	listed, err := r.List(mustDesc(t, "rawtp:sched::sched_switch"))
	if err != nil || len(listed) != 1 || listed[0].ID != pr.ID || listed[0].Args != nil {
		t.Errorf("List: %v, %v", listed, err)
	}
	if ps, _ := r.Probes(mustDesc(t, "rawtp:syscalls::sys_enter_read")); len(ps) != 0 {
		t.Errorf("the syscalls group's events are not raw tracepoints: %v", ps)
	}
}

// TestRawTPUntyped runs the plain raw tracepoint path, taken where the
// kernel has no BTF: only the arguments clauses read are loaded, since the
// kernel refuses a program that reads past the event's.
func TestRawTPUntyped(t *testing.T) {
	h := newHarness(t, denseLayout)
	h.unused = ^uint32(1<<1) & (1<<NumArgs - 1)
	r := NewRawTP(func() (int, error) { return 5000, nil })
	pr := &Probe{ID: 5000, Provider: "rawtp", Module: "raw_syscalls", Name: "sys_enter",
		ProgType: ebpf.RawTracepoint, Private: rawtpProbe{event: "sys_enter", nargs: -1}}
	// Count only getppid: no event is counted unless arg1 is read right.
	post := append(threadFilter(t),
		asm.LoadMem(asm.R0, regState, denseLayout.argOff(1), asm.DWord),
		asm.JNE.Imm(asm.R0, unix.SYS_GETPPID, skip))
	prog := h.program(ebpf.RawTracepoint, r, pr, post...)
	c, err := r.Attach(pr, prog)
	if err != nil {
		t.Fatal(err)
	}
	unix.Getppid()
	c.Close()
	args, _ := h.last()
	if h.total() == 0 || args[1] != unix.SYS_GETPPID {
		t.Errorf("%d events, last syscall %d, want %d", h.total(), args[1], unix.SYS_GETPPID)
	}
}
