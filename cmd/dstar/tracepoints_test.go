package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// tracepoints lists the kernel's tracepoints as group:event, leaving out
// the groups whose events are not tracepoints of their own (those of
// dynamic events, ftrace's) and, when syscalls is false, the system calls'.
func tracepoints(t testing.TB, syscalls bool) []string {
	t.Helper()
	b, err := os.ReadFile("/sys/kernel/tracing/available_events")
	if err != nil {
		bpftest.Skip(t, "no tracefs event list: "+err.Error())
	}
	var out []string
	for _, ev := range strings.Fields(string(b)) {
		group, _, _ := strings.Cut(ev, ":")
		switch group {
		case "ftrace", "kprobes", "uprobes", "eprobes", "synthetic", "fprobes", "tracepoints":
			continue
		case "syscalls":
			if !syscalls {
				continue
			}
		}
		out = append(out, ev)
	}
	return out
}

// sdtList is the probe description list naming the tracepoints evs.
func sdtList(evs []string) string {
	descs := make([]string, len(evs))
	for i, ev := range evs {
		group, event, _ := strings.Cut(ev, ":")
		descs[i] = "sdt:" + group + "::" + event
	}
	return strings.Join(descs, ",")
}

// releasers counts the processes dstar left to release perf events.
func releasers() int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && strings.HasPrefix(string(cmd), "dstar (releasing perf events)") {
			n++
		}
	}
	return n
}

// TestManyTracepoints runs dstar on hundreds of tracepoints — every system
// call's, which run on the raw sys_enter and sys_exit, and two hundred
// others whose records are read, on perf events — and checks that it
// counts their events, exits with status 0, and leaves nothing behind:
// its programs and links are gone when it has exited, and the perf events
// it handed to a releaser are closed soon after.
func TestManyTracepoints(t *testing.T) {
	bpftest.Require(t)
	others := tracepoints(t, false)
	if len(others) < 200 {
		bpftest.Skip(t, "fewer than 200 tracepoints")
	}
	// Evenly spread over the groups.
	var perf []string
	for i := 0; i < 200; i++ {
		perf = append(perf, others[i*len(others)/200])
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "many.d")
	os.WriteFile(script, []byte(`sdt:syscalls:: { @sys = count(); }
`+sdtList(perf)+` /arg0 != 0 || arg0 == 0/ { @perf = count(); }
tick-10ms /n++ == 0/ { printf("ready\n"); }
syscall::mkdirat:entry /basename(copyinstr(arg1)) == "dstar-stop"/ { exit(0); }
`), 0o644)
	cmd := exec.Command(dstarBin, "-q", "-x", "skiprefused", "-s", script)
	var out, errb bpftest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, &out, "ready")
	objs := objectsOf(t, cmd.Process.Pid)
	// Two raw tracepoints serve every system call; each other
	// tracepoint has a link and a perf event of its own.
	if len(objs.links) < 200 || objs.perfEvents < 200 {
		t.Fatalf("dstar holds %d links and %d perf events, want 200 or more of each", len(objs.links), objs.perfEvents)
	}
	stop := filepath.Join(dir, "dstar-stop")
	os.Mkdir(stop, 0o755)
	os.Remove(stop)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("dstar: %v\n%s", err, errb.String())
	}
	m := regexp.MustCompile(`(?m)^\s+(\d+)\n\n?\s+(\d+)\s*$`).FindStringSubmatch(strings.TrimPrefix(out.String(), "ready\n"))
	if m == nil {
		t.Fatalf("no counts in %q", out.String())
	}
	for _, n := range m[1:] {
		if v, _ := strconv.Atoi(n); v == 0 {
			t.Errorf("a count is 0: %q", out.String())
		}
	}
	objs.gone(t)
	releasersGone(t)
}

// releasersGone waits for dstar's releasers to have closed the perf events
// they hold and exited: a grace period each, one after another.
func releasersGone(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for releasers() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := releasers(); n > 0 {
		t.Errorf("%d releasers still hold perf events after 30 s", n)
	}
}

// TestRefusedProbes: a probe the kernel refuses (x86's irq_work_exit
// takes no sampling perf event, which a clause reading its record needs)
// fails the enabling with one message saying how many of how many and
// why, and nothing stays attached; -x skiprefused enables the rest and
// says what it skipped; a clause that reads no field runs on a raw
// tracepoint, which the kernel does not refuse.
func TestRefusedProbes(t *testing.T) {
	bpftest.Require(t)
	if _, err := os.Stat("/sys/kernel/tracing/events/irq_vectors/irq_work_exit"); err != nil {
		t.Skip("no irq_vectors:irq_work_exit tracepoint (not x86)")
	}
	const reads = `sdt:irq_vectors:: /arg0 != 12345/ { @ = count(); } tick-10ms { exit(0); }`
	r := dstar(t, 30*time.Second, "-q", "-n", reads)
	if r.code != 1 || !regexp.MustCompile(`could not enable tracing: 1 of \d+ probes could not be enabled: sdt:irq_vectors::irq_work_exit: operation not permitted \(.*sampling.*\); -x skiprefused enables the other \d+\n$`).MatchString(r.stderr) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("output: %q", r.stdout)
	}
	// -Z, as in DTrace, permits descriptions matching no probe; it does
	// not make a refusal any less an error.
	if r := dstar(t, 30*time.Second, "-Z", "-q", "-n", reads); r.code != 1 {
		t.Errorf("-Z: exit %d, stderr %q", r.code, r.stderr)
	}
	r = dstar(t, 30*time.Second, "-q", "-x", "skiprefused", "-n", reads)
	if r.code != 0 || !strings.Contains(r.stderr, "warning: 1 of ") || !strings.Contains(r.stderr, "sdt:irq_vectors::irq_work_exit: operation not permitted") || !strings.HasSuffix(r.stderr, "; skipped\n") {
		t.Errorf("-x skiprefused: exit %d, stderr %q", r.code, r.stderr)
	}
	r = dstar(t, 30*time.Second, "-q", "-n", `sdt:irq_vectors:: { @ = count(); } tick-10ms { exit(0); }`)
	if r.code != 0 || strings.Contains(r.stderr, "could not") {
		t.Errorf("reading no field: exit %d, stderr %q", r.code, r.stderr)
	}
	releasersGone(t)
}
