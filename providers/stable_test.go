package providers

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
)

func TestStableProbes(t *testing.T) {
	ps := stableProviders(func() (int, error) { return 100, nil })
	var names []string
	id := 100
	for _, p := range ps {
		probes, err := p.Probes(Desc{Provider: p.Name()})
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range probes {
			if pr.ID != id {
				t.Errorf("%s: ID %d, want %d", pr, pr.ID, id)
			}
			id++
			names = append(names, pr.Provider+":"+pr.Name)
			def := pr.Private.(*stableDef)
			if len(def.native) > NumArgs || len(pr.Args) > len(def.native) {
				t.Errorf("%s: %d args from %d native arguments", pr, len(pr.Args), len(def.native))
			}
		}
	}
	want := "proc:exec proc:exec-success proc:exec-failure proc:exit proc:create proc:lwp-create " +
		"proc:lwp-exit proc:start proc:lwp-start proc:signal-send proc:signal-discard proc:signal-handle " +
		"sched:on-cpu sched:off-cpu sched:sleep sched:dequeue sched:preempt sched:enqueue sched:wakeup sched:tick " +
		"io:start io:done io:wait-start io:wait-done"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("probes:\n%s\nwant:\n%s", got, want)
	}

	// Descriptions with a module or function match nothing; globs work.
	if got, _ := ps[0].Probes(Desc{Provider: "proc", Module: "vmlinux"}); len(got) != 0 {
		t.Errorf("proc:vmlinux:: matched %v", got)
	}
	got, _ := ps[1].Probes(Desc{Provider: "sched", Name: "*-cpu"})
	if len(got) != 2 || got[0].Name != "on-cpu" || got[1].Name != "off-cpu" {
		t.Errorf("sched:::*-cpu matched %v", got)
	}
	create, _ := ps[0].Probes(Desc{Provider: "proc", Name: "create"})
	if a := create[0].Args; len(a) != 1 || a[0].Type != "psinfo_t *" || a[0].Expr != "xlate <psinfo_t *> ((struct task_struct *)arg0)" {
		t.Errorf("proc:::create args: %+v", a)
	}
}

// Every probe's prologue passes the verifier, in both layouts, and
// attaches to this kernel's tracepoints.
func TestStableProloguesAttach(t *testing.T) {
	for _, l := range []layout{denseLayout, sparseLayout} {
		h := newHarness(t, l)
		for _, p := range stableProviders(func() (int, error) { return 1, nil }) {
			probes, err := p.Probes(Desc{Provider: p.Name()})
			if err != nil {
				t.Fatal(err)
			}
			for _, pr := range probes {
				prog := h.program(pr.ProgType, p, pr)
				c, err := p.Attach(pr, prog)
				if err != nil {
					t.Errorf("%v", err)
					continue
				}
				if err := c.Close(); err != nil {
					t.Errorf("%s: closing: %v", pr, err)
				}
			}
		}
	}
}

// proc:::create fires for a new process, with the child's task_struct in
// arg0, and lwp-create does not.
func TestStableCreate(t *testing.T) {
	h := newHarness(t, denseLayout)
	ps := stableProviders(func() (int, error) { return 1, nil })
	// The first exec of a Go program may fork once more, to probe what
	// the kernel supports: get it over with before counting.
	threadFilter(t)
	if err := exec.Command("/bin/true").Run(); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"create", "lwp-create"} {
		probes, err := ps[0].Probes(Desc{Provider: "proc", Name: name})
		if err != nil || len(probes) != 1 {
			t.Fatalf("proc:::%s: %v %v", name, probes, err)
		}
		// Count this test's own children only: their parent is this thread.
		prog := h.program(probes[0].ProgType, ps[0], probes[0], append(threadFilter(t), asm.Mov.Imm(regIndex, int32(i)))...)
		c, err := ps[0].Attach(probes[0], prog)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	for i := 0; i < 3; i++ {
		if err := exec.Command("/bin/true").Run(); err != nil {
			t.Fatal(err)
		}
	}
	if c := h.counts(); c[0] != 3 || c[1] != 0 {
		t.Errorf("create fired %d times, lwp-create %d; want 3 and 0", c[0], c[1])
	}
	if args, _ := h.last(); args[0] == 0 || args[1] != 0 {
		t.Errorf("args %x: want the child's task_struct, then zeros", args)
	}
}

// A tracepoint the kernel lacks fails to attach with a message that says so.
func TestStableMissingTracepoint(t *testing.T) {
	h := newHarness(t, denseLayout)
	s := &Stable{name: "proc", first: func() (int, error) { return 1, nil },
		defs: []stableDef{{name: "nosuch", tps: []string{"dstar_no_such_tracepoint"}}}}
	probes, err := s.Probes(Desc{Provider: "proc"})
	if err != nil || len(probes) != 1 {
		t.Fatalf("%v %v", probes, err)
	}
	c, err := s.Attach(probes[0], h.program(probes[0].ProgType, s, probes[0]))
	if err == nil {
		c.Close()
		t.Fatal("attached to a tracepoint that does not exist")
	}
	if !strings.Contains(err.Error(), "(this kernel has no tracepoint dstar_no_such_tracepoint, which proc:::nosuch needs)") {
		t.Errorf("error: %v", err)
	}
}
