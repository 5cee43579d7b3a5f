package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// writeScript writes a Starlark script into a temporary directory.
func writeScript(t *testing.T, src string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.star")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startScript starts dstar run on a script, with its output captured.
func startScript(t *testing.T, path string) (*exec.Cmd, *bpftest.Buffer, *bpftest.Buffer) {
	t.Helper()
	cmd := exec.Command(dstarBin, "run", path)
	var out, errb bpftest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out, &errb
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestRunawayScriptStopsAtCtrlC(t *testing.T) {
	bpftest.Require(t)
	path := writeScript(t, `s = dtrace.session(quiet = True)
s.attach(r'BEGIN { printf("attached\n"); } END { printf("end\n"); }')
while True:
    pass
`)
	cmd, out, errb := startScript(t, path)
	waitFor(t, out, "attached\n")
	cmd.Process.Signal(syscall.SIGINT)
	code := exitCode(cmd.Wait())
	if code != 1 || !strings.Contains(errb.String(), "Starlark computation cancelled: interrupted") {
		t.Errorf("exit %d, stderr:\n%s", code, errb.String())
	}
	if out.String() != "attached\nend\n" {
		t.Errorf("END did not fire on the way out: %q", out.String())
	}
}

func TestCtrlCEndsRun(t *testing.T) {
	bpftest.Require(t)
	path := writeScript(t, `s = dtrace.session(quiet = True)
s.attach(r'tick-10ms { @ = count(); } tick-10ms /++n == 3/ { printf("running\n"); }')
s.run()
print("after run", s.aggregations()["@"][()] > 0)
`)
	cmd, out, errb := startScript(t, path)
	waitFor(t, out, "running\n")
	cmd.Process.Signal(syscall.SIGINT)
	if code := exitCode(cmd.Wait()); code != 0 || !strings.HasSuffix(out.String(), "after run True\n") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

func TestFailingScriptLeavesNothingAttached(t *testing.T) {
	bpftest.Require(t)
	path := writeScript(t, `s = dtrace.session(quiet = True)
s.attach(r'END { printf("end fired\n"); }')
x = 1 // 0
`)
	r := dstar(t, 20*time.Second, "run", path)
	if r.code != 1 || r.stdout != "end fired\n" {
		t.Errorf("exit %d, stdout %q", r.code, r.stdout)
	}
	want := "Traceback (most recent call last):\n  " + path + ":3:7: in <toplevel>\nError: floored division by zero\n"
	if r.stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, want)
	}
}

func TestCompileErrorPointsAtCallSite(t *testing.T) {
	bpftest.Require(t)
	path := writeScript(t, `s = dtrace.session()
e = s.attach("BEGIN\n{\n\ttrace(1 +);\n}")
`)
	r := dstar(t, 20*time.Second, path)
	if r.code != 1 {
		t.Fatalf("exit %d", r.code)
	}
	for _, want := range []string{
		path + ":2:13: in <toplevel>",
		`Error in attach: line 3: syntax error near ")"`,
		"<D program>:3:11:",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("no %q in:\n%s", want, r.stderr)
		}
	}
}

func TestQueueOverflowCountsDrops(t *testing.T) {
	bpftest.Require(t)
	// The script sleeps without pumping while two CPUs fire 4999 times a
	// second: the bounded queue overflows, which costs events, not a hang.
	path := writeScript(t, `s = dtrace.session(quiet = True)
s.attach(r'profile-4999 { printf("x\n"); }')
dtrace.sleep(3)
n = [0]
def count(ev):
    n[0] += 1
s.run(0.2, on_event = count)
st = s.stats()
print(n[0] > 0, st.drops > 0)
`)
	// cpu-clock events barely fire on idle CPUs: keep one busy.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	r := dstar(t, 30*time.Second, "run", path)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "True True\n") {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if !regexp.MustCompile(`dstar: \d+ events dropped: the script did not keep up`).MatchString(r.stderr) {
		t.Errorf("drops not reported: %q", r.stderr)
	}
}

func TestToolList(t *testing.T) {
	r := dstar(t, 20*time.Second, "tool")
	if r.code != 0 || !regexp.MustCompile(`(?m)^  syscount +\S`).MatchString(r.stdout) {
		t.Errorf("exit %d, stdout:\n%s", r.code, r.stdout)
	}
}

// TestSessionCPUOption: a Starlark session takes -x cpu as cpu=N.
func TestSessionCPUOption(t *testing.T) {
	bpftest.Require(t)
	cpu := runtime.NumCPU() - 1
	syscallsOn(t, cpu)
	path := writeScript(t, fmt.Sprintf(`s = dtrace.session(quiet = True, cpu = %d)
s.attach(r'BEGIN { printf("begin %%d\n", cpu); } tick-1ms { @[cpu] = count(); } syscall:::entry { @s[cpu] = count(); } tick-30ms { exit(0); }')
s.run()
print(sorted([k for k in s.aggregations()["@"]]), sorted([k for k in s.aggregations()["@s"]]))
`, cpu))
	r := dstar(t, 20*time.Second, "run", path)
	if want := fmt.Sprintf("begin %[1]d\n[(%[1]d,)] [(%[1]d,)]\n", cpu); r.code != 0 || r.stdout != want {
		t.Errorf("exit %d, stdout %q, want %q; stderr %q", r.code, r.stdout, want, r.stderr)
	}
}
