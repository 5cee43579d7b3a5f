package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// phaseProgram traces a -c command's sleeping with a uprobe, counts
// ticks in an aggregation (whose key, "counted", is printed only with
// the aggregations), and marks BEGIN, the first tick and END.
var phaseProgram = []string{"-q", "-c", "sleep 60", "-n",
	`BEGIN { printf("begun\n"); }
	 pid$target:libc.so.6:clock_nanosleep:entry { @u = count(); }
	 tick-10ms { @agg["counted"] = count(); }
	 tick-10ms /i++ == 0/ { printf("ready\n"); }
	 END { printf("ended\n"); }`}

// childOf is the first child process of pid.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	c, _ := strconv.Atoi(f[0])
	return c
}

// alive reports whether pid is a process that has not exited.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// TestSignalsAtEveryPhase: SIGINT, SIGTERM and SIGHUP at each phase of a
// run (compiling, attaching, after BEGIN, tracing, after END, before the
// aggregations are printed) leave no program, link, perf event or probe
// event behind, and end dstar as they end dtrace:
//   - SIGINT or SIGTERM while compiling: status 0, nothing traced, the
//     -c command killed before it ran;
//   - the first SIGINT or SIGTERM later: tracing stops, END runs, the
//     aggregations are printed, status 0;
//   - a second one (here at END or before the printout): what was traced
//     is written, the aggregations are not, status 0;
//   - SIGHUP, which dtrace does not catch, kills dstar, whatever it was
//     doing.
//
// DSTAR_TEST_HOLD makes dstar wait at the phase for the signal.
func TestSignalsAtEveryPhase(t *testing.T) {
	bpftest.Require(t)
	for _, phase := range []string{"compile", "attach", "begin", "tracing", "end", "print"} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
			t.Run(phase+"/"+sig.String(), func(t *testing.T) {
				before := probeEvents()
				cmd := exec.Command(dstarBin, phaseProgram...)
				if phase != "tracing" {
					cmd.Env = append(os.Environ(), "DSTAR_TEST_HOLD="+phase)
				}
				var out, errb bpftest.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				// After SIGHUP, the -c command lives on (as dtrace's does)
				// holding the output pipes: Wait does not wait for them.
				cmd.WaitDelay = time.Second
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer cmd.Process.Kill()
				pid := cmd.Process.Pid
				second := phase == "end" || phase == "print"
				if second {
					// Tracing is stopped by a first interrupt.
					waitFor(t, &out, "ready")
					cmd.Process.Signal(os.Interrupt)
				}
				if phase == "tracing" {
					waitFor(t, &out, "ready")
				} else {
					waitFor(t, &errb, "holding at "+phase)
				}
				objs := objectsOf(t, pid)
				if phase != "compile" && phase != "attach" && (len(objs.progs) == 0 || objs.perfEvents == 0) {
					t.Fatalf("dstar holds no programs or perf events to check: %+v", objs)
				}
				child := childOf(t, pid)
				if child == 0 {
					t.Fatal("no -c command running")
				}
				defer syscall.Kill(child, syscall.SIGKILL)
				cmd.Process.Signal(sig)
				err := cmd.Wait()
				stdout, stderr := out.String(), errb.String()

				if sig == syscall.SIGHUP {
					var ee *exec.ExitError
					if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGHUP {
						t.Errorf("after SIGHUP: %v, want killed by SIGHUP", err)
					}
				} else {
					if err != nil {
						t.Errorf("exit: %v, want status 0\nstderr:\n%s", err, stderr)
					}
					// (At attach and begin, no tick may have come.)
					wantOut := map[string]bool{"begun": true, "ended": true}
					if phase != "attach" && phase != "begin" {
						wantOut["counted"] = !second
					}
					if phase == "compile" {
						wantOut = map[string]bool{"begun": false, "ended": false, "counted": false}
					}
					for word, want := range wantOut {
						if strings.Contains(stdout, word) != want {
							t.Errorf("%q in stdout: %v, want %v\nstdout:\n%s\nstderr:\n%s", word, !want, want, stdout, stderr)
						}
					}
					if alive(child) {
						t.Errorf("the -c command (pid %d) is still running", child)
					}
				}
				if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
					t.Errorf("stderr:\n%s", stderr)
				}
				objs.gone(t)
				if after := probeEvents(); after != before {
					t.Errorf("probe events changed:\nbefore:\n%s\nafter:\n%s", before, after)
				}
			})
		}
	}
}

// TestTimeoutInterrupt: coreutils timeout signals its child, then the
// child's process group, so that dstar often sees two SIGINTs at once.
// As dtrace, dstar then writes every record traced, skips at most the
// aggregations, and exits 0: never 1, never a cut line.
func TestTimeoutInterrupt(t *testing.T) {
	bpftest.Require(t)
	if _, err := exec.LookPath("timeout"); err != nil {
		t.Skip("no coreutils timeout")
	}
	for i := 0; i < 8; i++ {
		cmd := exec.Command("timeout", "--preserve-status", "-s", "INT", "0.5", dstarBin, "-q", "-n",
			`tick-1ms { printf("line %d\n", i++); } END { printf("ended\n"); }`)
		var out, errb bpftest.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("run %d: %v\nstderr:\n%s", i, err, errb.String())
		}
		// (Blank lines: the one ending the ^C line, the one before the
		// aggregations.)
		var lines []string
		for _, l := range strings.Split(out.String(), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
		if len(lines) < 2 || lines[len(lines)-1] != "ended" {
			t.Fatalf("run %d: output does not end with END's line:\n%s", i, out.String())
		}
		// Every tick's line, in order, none cut.
		for n, l := range lines[:len(lines)-1] {
			if l != "line "+strconv.Itoa(n) {
				t.Fatalf("run %d: line %d is %q, want %q", i, n, l, "line "+strconv.Itoa(n))
			}
		}
	}
}

// TestWriteErrors: output that cannot be written — a full disk, a
// closed standard output — is reported once, naming the file and the
// reason, and ends tracing with status 1, whichever writer failed.
func TestWriteErrors(t *testing.T) {
	bpftest.Require(t)
	forever := `tick-10ms { printf("tick %d\n", i++); }`
	full := "dstar: failed to write to /dev/full: No space left on device\n"
	script := filepath.Join(t.TempDir(), "print.star")
	os.WriteFile(script, []byte(`
s = dtrace.session()
s.attach(r'tick-10ms { printf("tick %d\n", i++); }')
print("tracing")
s.run()
`), 0o644)
	// (Its first output is the session's.)
	session := filepath.Join(t.TempDir(), "session.star")
	os.WriteFile(session, []byte(`
s = dtrace.session()
s.attach(r'tick-10ms { printf("tick %d\n", i++); }')
s.run()
`), 0o644)
	for _, tc := range []struct {
		name   string
		shell  string // how the shell runs dstar ("$@" is its arguments)
		args   []string
		stderr string
		within bool // stderr holds it (with a Starlark traceback)
	}{
		{"-o", `exec "$@"`, []string{"-q", "-o", "/dev/full", "-n", forever}, full, false},
		{"stdout", `exec "$@" >/dev/full`, []string{"-q", "-n", forever}, full, false},
		{"closed stdout", `exec "$@" >&-`, []string{"-q", "-n", forever}, "dstar: failed to write to <stdout>: Bad file descriptor\n", false},
		{"freopen", `exec "$@"`, []string{"-qw", "-n", `BEGIN { freopen("/dev/full"); } ` + forever}, full, false},
		{"json", `exec "$@" >/dev/full`, []string{"-q", "-x", "outputformat=json", "-n", forever}, full, false},
		{"aggregations", `exec "$@" >/dev/full`, []string{"-q", "-n", `tick-10ms { @[i++] = count(); } tick-50ms { exit(0); }`}, full, false},
		{"list", `exec "$@" >/dev/full`, []string{"-l", "-n", "syscall:::entry"}, full, false},
		{"starlark print", `exec "$@" >/dev/full`, []string{"run", script}, full, false},
		{"repl", `printf 'print(1)\nprint(2)\n' | "$@" >/dev/full`, []string{"repl"}, full, false},
		{"starlark session", `exec "$@" >/dev/full`, []string{"run", session}, full, false},
		{"flame graph", `exec "$@"`, []string{"tool", "profile", "-d", "0.2", "--svg", "/dev/full"},
			"dtrace.flamegraph: failed to write to /dev/full: No space left on device\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", append([]string{"-c", tc.shell, "sh", dstarBin}, tc.args...)...)
			var out, errb bpftest.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("still tracing 30 s after its output failed; stderr:\n%s", errb.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Errorf("exit: %v, want status 1", err)
			}
			// The error alone, once.
			if got := errb.String(); !tc.within && got != tc.stderr || tc.within && strings.Count(got, tc.stderr) != 1 {
				t.Errorf("stderr %q, want %q", got, tc.stderr)
			}
			// (After a freopen( ), standard output still gets the blank
			// line before the aggregations, as dtrace's does.)
			if out.String() != "" && !(tc.name == "freopen" && out.String() == "\n") && tc.name != "flame graph" {
				t.Errorf("stdout: %q", out.String())
			}
		})
	}
}

// TestScriptSignals: a `dstar run` script and the REPL, signalled while a
// session traces, release every kernel object: SIGINT ends the blocking
// s.run() and the script goes on (status 0); SIGTERM ends s.run() in a
// script and ends the REPL (status 1); SIGHUP kills either.
func TestScriptSignals(t *testing.T) {
	bpftest.Require(t)
	code := `s = dtrace.session()
s.attach(r'syscall::getpid:entry { @ = count(); } tick-10ms /i++ == 0/ { printf("ready\n"); }')
s.run()
print("after run")
`
	script := filepath.Join(t.TempDir(), "sig.star")
	os.WriteFile(script, []byte(code), 0o644)
	for _, mode := range []string{"run", "repl"} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
			t.Run(mode+"/"+sig.String(), func(t *testing.T) {
				before := probeEvents()
				var cmd *exec.Cmd
				var stdin io.WriteCloser
				if mode == "run" {
					cmd = exec.Command(dstarBin, "run", script)
				} else {
					cmd = exec.Command(dstarBin, "repl")
					cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
					var err error
					if stdin, err = cmd.StdinPipe(); err != nil {
						t.Fatal(err)
					}
				}
				var out, errb bpftest.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer cmd.Process.Kill()
				if stdin != nil {
					io.WriteString(stdin, code)
				}
				waitFor(t, &out, "ready")
				objs := objectsOf(t, cmd.Process.Pid)
				if len(objs.progs) == 0 || objs.perfEvents == 0 {
					t.Fatalf("dstar holds no programs or perf events to check: %+v", objs)
				}
				cmd.Process.Signal(sig)
				if sig != syscall.SIGHUP && !(mode == "repl" && sig == syscall.SIGTERM) {
					waitFor(t, &out, "after run")
				}
				if stdin != nil {
					stdin.Close()
				}
				err := cmd.Wait()
				var ee *exec.ExitError
				errors.As(err, &ee)
				switch {
				case sig == syscall.SIGHUP:
					if ee == nil || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGHUP {
						t.Errorf("after SIGHUP: %v, want killed by SIGHUP", err)
					}
				case mode == "repl" && sig == syscall.SIGTERM:
					if ee == nil || ee.ExitCode() != 1 {
						t.Errorf("exit: %v, want status 1\nstderr:\n%s", err, errb.String())
					}
				case err != nil:
					t.Errorf("exit: %v, want status 0\nstderr:\n%s", err, errb.String())
				}
				objs.gone(t)
				if after := probeEvents(); after != before {
					t.Errorf("probe events changed:\nbefore:\n%s\nafter:\n%s", before, after)
				}
			})
		}
	}
}
