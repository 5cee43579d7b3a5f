package providers

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/procmaps"
)

const pidTestProg = `
#include <stdio.h>
#define NI __attribute__((noinline, noipa))
NI int pidt_foo(int x) { return x * 2; }
int main(void) {
	int c;
	while ((c = getchar()) != EOF)
		pidt_foo(c);
	return 0;
}
`

// pidTarget starts a program that calls pidt_foo(c) for each byte c on its
// stdin, and returns its pid and its stdin.
func pidTarget(t *testing.T) (int, io.Writer) {
	t.Helper()
	bpftest.Require(t)
	path := bpftest.BuildC(t, t.TempDir(), "target", pidTestProg, "-O1")
	cmd, in := startPiped(t, path)
	return cmd.Process.Pid, in
}

// startPiped starts the program at path with a pipe to its stdin, which
// the test writes to when its probes are attached. The test's clean-up
// closes the pipe and kills the process if it is still running.
func startPiped(t *testing.T, path string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(path)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	return cmd, in
}

func TestPidClaims(t *testing.T) {
	p := NewPid()
	for name, want := range map[string]bool{"pid1": true, "pid123": true, "pid": true, "pid*": true, "": true, "pid0": true, "pidx": false, "pid1x": false, "pid12*": false, "syscall": false} {
		if got := p.Claims(name); got != want {
			t.Errorf("Claims(%q) = %v", name, got)
		}
	}
	if !p.Owns(&Probe{Private: pidProbe{pid: 1}}) || p.Owns(&Probe{Provider: "pid1"}) {
		t.Error("Owns: wrong")
	}
}

func TestKernelRelease(t *testing.T) {
	for r, want := range map[string][2]int{"6.18.44-fc-v657": {6, 18}, "5.15.0-91-generic": {5, 15}, "6.6": {6, 6}, "6.10-rc1": {6, 10}} {
		major, minor, ok := kernelRelease(r)
		if !ok || major != want[0] || minor != want[1] {
			t.Errorf("kernelRelease(%q) = %d, %d, %v", r, major, minor, ok)
		}
	}
	if _, _, ok := kernelRelease("weird"); ok {
		t.Error("kernelRelease(weird) ok")
	}
}

func TestPidProbes(t *testing.T) {
	pid, _ := pidTarget(t)
	p := NewPid()
	prov := fmt.Sprintf("pid%d", pid)
	listed, err := p.List(Desc{Provider: prov, Module: "a.out", Function: "pidt_foo"})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[0].Name != "entry" || listed[1].Name != "return" ||
		listed[0].Module != "target" || listed[0].Provider != prov || listed[0].ID < pidFirstID {
		t.Fatalf("listed %v", listed)
	}
	got, err := p.Probes(Desc{Provider: prov, Module: "target", Function: "pidt_f*", Name: "entry"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != listed[0].ID || !got[0].UserRegs || got[0].ProgType != ebpf.Kprobe {
		t.Errorf("matched %v (ID %d), listed ID %d", got, got[0].ID, listed[0].ID)
	}
	again, _ := p.Probes(Desc{Provider: prov, Module: "target", Function: "pidt_foo", Name: "entry"})
	if len(again) != 1 || again[0] != got[0] {
		t.Errorf("matching again made a new probe: %v", again)
	}
	// Without a process named, only the probes made so far match.
	all, err := p.Probes(Desc{})
	if err != nil || len(all) != 2 {
		t.Errorf("Probes(all) = %v, %v", all, err)
	}
	if ps, err := p.Probes(Desc{Provider: prov, Module: "a.out", Function: "pidt_foo", Name: "zz"}); err == nil || err.Error() != "'zz' is an invalid probe name" {
		t.Errorf("name zz: %v, %v", ps, err)
	}
	if ps, err := p.Probes(Desc{Provider: prov, Module: "a.out", Function: "pidt_foo", Name: "100000"}); err == nil || !strings.Contains(err.Error(), "outside of function 'pidt_foo'") {
		t.Errorf("offset past the end: %v, %v", ps, err)
	}
	_, err = p.Probes(Desc{Provider: "pid1073741824", Function: "main"})
	if err == nil || err.Error() != "failed to grab pid 1073741824: No such process" {
		t.Errorf("no process: %v", err)
	}
}

// TestPidAttach attaches both ways a kernel may offer: a perf-event uprobe
// (a listed probe, loaded without an attach type) and a uprobe_multi link.
func TestPidAttach(t *testing.T) {
	pid, in := pidTarget(t)
	p := NewPid()
	d := Desc{Provider: fmt.Sprintf("pid%d", pid), Module: "a.out", Function: "pidt_foo", Name: "entry"}
	events := func() string {
		b, _ := os.ReadFile("/sys/kernel/tracing/uprobe_events")
		return string(b)
	}
	before := events()
	for i, how := range []string{"perf event", "uprobe_multi"} {
		var ps []*Probe
		var err error
		if i == 0 {
			ps, err = p.List(d)
		} else {
			ps, err = p.Probes(d)
			if ps[0].AttachType != ebpf.AttachTraceUprobeMulti {
				t.Skip("the kernel has no uprobe_multi links")
			}
		}
		if err != nil || len(ps) != 1 {
			t.Fatalf("%s: %v, %v", how, ps, err)
		}
		h := newHarness(t, sparseLayout)
		prog := h.program(ebpf.Kprobe, p, ps[0])
		l, err := p.Attach(ps[0], prog)
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		// The uprobe is in place once the program counts a call.
		for deadline := time.Now().Add(10 * time.Second); h.total() == 0; {
			if time.Now().After(deadline) {
				t.Fatalf("%s: pidt_foo never fired", how)
			}
			in.Write([]byte{'A' + byte(i)})
			time.Sleep(10 * time.Millisecond)
		}
		args, errno := h.last()
		// (arg6 on is read from the user stack, whatever is there.)
		if args[0] != uint64('A'+i) || errno != 0 {
			t.Errorf("%s: args %v errno %d", how, args, errno)
		}
		if err := l.Close(); err != nil {
			t.Errorf("%s: close: %v", how, err)
		}
	}
	if after := events(); after != before {
		t.Errorf("uprobe_events changed from %q to %q", before, after)
	}
}

func TestObjectMatch(t *testing.T) {
	libc := &procmaps.Module{Path: "/usr/lib/x86_64-linux-gnu/libc.so.6"}
	for _, c := range []struct {
		pattern string
		exe     bool
		want    bool
	}{
		{"", false, true}, {"libc.so.6", false, true}, {"libc*", false, true}, {"libc", false, true},
		{"libc.so", false, true}, {libc.Path, false, true}, {"a.out", true, true},
		{"a.out", false, false}, {"lib", false, false}, {"libc.s", false, false}, {"libc.so.6.1", false, false},
		{"libc?", false, false},
	} {
		if got := objectMatch(c.pattern, libc, c.exe); got != c.want {
			t.Errorf("objectMatch(%q, exe %v) = %v, want %v", c.pattern, c.exe, got, c.want)
		}
	}
}
