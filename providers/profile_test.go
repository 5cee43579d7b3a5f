package providers

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

func TestParseProfileName(t *testing.T) {
	for _, c := range []struct {
		name   string
		period time.Duration
		perCPU bool
		ok     bool
		err    string
	}{
		{"profile-97", time.Second / 97, true, true, ""},
		{"profile-97hz", time.Second / 97, true, true, ""},
		{"tick-1s", time.Second, false, true, ""},
		{"tick-1sec", time.Second, false, true, ""},
		{"tick-10ms", 10 * time.Millisecond, false, true, ""},
		{"tick-10msec", 10 * time.Millisecond, false, true, ""},
		{"tick-200us", 200 * time.Microsecond, false, true, ""},
		{"tick-250000ns", 250 * time.Microsecond, false, true, ""},
		{"tick-2m", 2 * time.Minute, false, true, ""},
		{"tick-1min", time.Minute, false, true, ""},
		{"tick-1h", time.Hour, false, true, ""},
		{"tick-1hour", time.Hour, false, true, ""},
		{"tick-1d", 24 * time.Hour, false, true, ""},
		{"tick-1day", 24 * time.Hour, false, true, ""},
		{"profile-5000", 200 * time.Microsecond, true, true, ""},
		{"profile-5001", 0, true, true, "below minimum"},
		{"tick-199us", 0, false, true, "below minimum"},
		{"tick-100ns", 0, false, true, "below minimum"},
		{"profile-0", 0, true, true, "invalid rate"},
		{"profile-1x", 0, true, true, "unknown rate suffix"},
		{"tick-99999999999999999999", 0, false, true, "invalid rate"},
		{"tick-9999999999999999d", 0, false, true, "too long"},
		{"profile-", 0, false, false, ""},
		{"profile-x", 0, false, false, ""},
		{"tick", 0, false, false, ""},
		{"BEGIN", 0, false, false, ""},
	} {
		period, perCPU, ok, err := parseProfileName(c.name)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one saying %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || ok != c.ok || (ok && (period != c.period || perCPU != c.perCPU)) {
			t.Errorf("%s: got %v, %v, %v, %v; want %v, %v, %v", c.name, period, perCPU, ok, err, c.period, c.perCPU, c.ok)
		}
	}
}

func TestProfileProbes(t *testing.T) {
	p := NewProfile(4)
	all, err := p.Probes(Desc{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 15 || all[0].ID != 4 || all[0].Name != "profile-97" || all[14].ID != 18 || all[14].Name != "tick-10s" {
		t.Fatalf("listing: %v", all)
	}
	for _, pr := range all {
		if pr.Module != "" || pr.Function != "" || pr.ProgType != ebpf.PerfEvent {
			t.Errorf("%v: %+v", pr, pr)
		}
	}
	if ps, _ := p.Probes(mustDesc(t, "profile:::tick-*")); len(ps) != 8 {
		t.Errorf("tick-*: %v", ps)
	}
	if ps, _ := p.Probes(mustDesc(t, "tick-1s")); len(ps) != 1 || ps[0].ID != 17 {
		t.Errorf("tick-1s: %v", ps)
	}

	a := oneProbe(t, p, "profile-1234")
	b := oneProbe(t, p, "profile:::profile-1234")
	c := oneProbe(t, p, "tick-3s")
	if a.ID != firstDynamicID || b != a || c.ID != firstDynamicID+1 {
		t.Errorf("on demand: IDs %d %d %d", a.ID, b.ID, c.ID)
	}
	if pp := c.Private.(profileProbe); pp.period != 3*time.Second || pp.perCPU {
		t.Errorf("tick-3s: %+v", pp)
	}
	if ps, _ := p.Probes(Desc{}); len(ps) != 17 || ps[15] != a || ps[16] != c {
		t.Errorf("listing after creating two: %v", ps)
	}
	if _, err := p.Probes(mustDesc(t, "profile:::profile-10000")); err == nil || !strings.Contains(err.Error(), "below minimum") {
		t.Errorf("profile-10000: %v", err)
	}
	for _, d := range []string{"profile:vmlinux::tick-1s", "profile::f:tick-1s", "BEGIN", "profile-x", "syscall:::tick-1s"} {
		if ps, err := p.Probes(mustDesc(t, d)); len(ps) != 0 || err != nil {
			t.Errorf("%s: %v, %v", d, ps, err)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{"0": {0}, "0-1": {0, 1}, "0-2,4,6-7": {0, 1, 2, 4, 6, 7}} {
		got, err := parseCPUList(in)
		if err != nil || !equalInts(got, want) {
			t.Errorf("%q: %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "x", "3-1", "1-"} {
		if _, err := parseCPUList(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// kernelUserIndex sets the counter index to 1 when only arg0 (kernel PC) is
// set, 2 when only arg1 (user PC) is, and 0 or 3 otherwise (which is wrong).
var kernelUserIndex = []asm.Instruction{
	asm.LoadMem(asm.R1, regState, denseLayout.argOff(0), asm.DWord),
	asm.LoadMem(asm.R2, regState, denseLayout.argOff(1), asm.DWord),
	asm.JEq.Imm(asm.R1, 0, "nokernel"),
	asm.Or.Imm(regIndex, 1),
	asm.JEq.Imm(asm.R2, 0, "nouser").WithSymbol("nokernel"),
	asm.Or.Imm(regIndex, 2),
	asm.Mov.Imm(asm.R0, 0).WithSymbol("nouser"),
}

// TestTick attaches to tick-1000 (one perf event, every millisecond), sees
// it fire, and sees it stop after Close.
func TestTick(t *testing.T) {
	h := newHarness(t, denseLayout)
	p := NewProfile(4)
	pr := oneProbe(t, p, "tick-1000")
	c, err := p.Attach(pr, h.program(ebpf.PerfEvent, p, pr, kernelUserIndex...))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.(closers)); n != 2 {
		t.Errorf("tick-1000 made %d kernel objects, want a perf event and a link", n)
	}
	time.Sleep(200 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	n := h.counts()
	if total := n[1] + n[2]; total < 20 || n[0] != 0 || n[3] != 0 {
		t.Errorf("tick-1000 over 200ms: %d kernel, %d user, %d neither or both", n[1], n[2], n[0]+n[3])
	}
	time.Sleep(20 * time.Millisecond)
	if after := h.counts(); after != n {
		t.Errorf("still firing after Close: %v then %v", n, after)
	}
}

// TestProfile attaches to profile-997 (a perf event per CPU) while this
// goroutine spins in user space, and checks the PCs it records.
func TestProfile(t *testing.T) {
	h := newHarness(t, denseLayout)
	p := NewProfile(4)
	pr := oneProbe(t, p, "profile-997")
	cpus, err := onlineCPUs()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c, err := p.Attach(pr, h.program(ebpf.PerfEvent, p, pr, kernelUserIndex...))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("attach to %d CPUs: %v", len(cpus), time.Since(start))
	if n := len(c.(closers)); n != 2*len(cpus) {
		t.Errorf("profile-997 made %d kernel objects, want %d", n, 2*len(cpus))
	}
	runtime.LockOSThread()
	x := 0
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		for i := 0; i < 1000; i++ {
			x += i
		}
	}
	runtime.UnlockOSThread()
	start = time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("close: %v", time.Since(start))
	n := h.counts()
	t.Logf("profile-997 over 300ms: %d kernel, %d user samples (%d)", n[1], n[2], x%2)
	if n[2] < 10 || n[0] != 0 || n[3] != 0 {
		t.Errorf("%d kernel, %d user, %d neither or both: want user samples from the spinning goroutine, and never neither or both", n[1], n[2], n[0]+n[3])
	}
}

// TestProfileAttachFailure makes attaching fail after the perf event is
// open (the program is closed) and checks that nothing is left open.
func TestProfileAttachFailure(t *testing.T) {
	h := newHarness(t, denseLayout)
	p := NewProfile(4)
	pr := oneProbe(t, p, "profile-97")
	prog := h.program(ebpf.PerfEvent, p, pr)
	before := openFDs(t)
	prog.Close()
	if c, err := p.Attach(pr, prog); err == nil {
		c.Close()
		t.Fatal("attaching a closed program: no error")
	} else {
		t.Log(err)
	}
	if after := openFDs(t); after != before-1 {
		t.Errorf("%d file descriptors open before (with the program), %d after", before, after)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
