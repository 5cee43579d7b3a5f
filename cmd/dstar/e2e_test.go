package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers"
	"github.com/dstar-trace/dstar/providers/bpftest"
)

// dstarBin is the binary the end-to-end tests run, built once.
var dstarBin string

func TestMain(m *testing.M) { bpftest.MainWithDstar(m, ".", &dstarBin) }

// result is what one run of dstar did.
type result struct {
	stdout, stderr string
	code           int
}

// dstar runs the binary with args, failing the test if it takes longer
// than limit.
func dstar(t *testing.T, limit time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, dstarBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("dstar %q did not finish in %v\nstdout:\n%s\nstderr:\n%s", args, limit, out.String(), errb.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("dstar %q: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

func TestHelloWorld(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-n", `BEGIN { printf("hello, world\n"); exit(0); }`)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr: %s", r.code, r.stderr)
	}
	want := "CPU     ID                    FUNCTION:NAME\n"
	if !strings.HasPrefix(r.stdout, want) {
		t.Errorf("no DTrace header; stdout:\n%s", r.stdout)
	}
	if !regexp.MustCompile(`(?m)^ +\d+ +1 +:BEGIN hello, world$`).MatchString(r.stdout) {
		t.Errorf("no BEGIN line; stdout:\n%s", r.stdout)
	}
	if r.stderr != "dstar: description 'BEGIN ' matched 1 probe\n" {
		t.Errorf("stderr: %q", r.stderr)
	}
}

// TestActionRecordsFiring: a clause with an action that records no data
// (chill, raise, stop) still records its firing, as in DTrace, while one
// of assignments only does not.
func TestActionRecordsFiring(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-w", "-n", `BEGIN { chill(1); } BEGIN { x = 1; } BEGIN { exit(0); }`)
	if n := len(regexp.MustCompile(`(?m)^ +\d+ +1 +:BEGIN $`).FindAllString(r.stdout, -1)); r.code != 0 || n != 2 {
		t.Errorf("exit %d, %d BEGIN lines, want 2; stdout:\n%s", r.code, n, r.stdout)
	}
}

func TestQuietAndExitStatus(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-q", "-n", `BEGIN { printf("%d %s|%5d|%-4x|\n", 1 + 2 * 3, "s", -3, 255); exit(3); }`)
	if r.stdout != "7 s|   -3|ff  |\n\n" || r.code != 3 || r.stderr != "" {
		t.Errorf("got %q, %q, exit %d", r.stdout, r.stderr, r.code)
	}
}

func TestTickCount(t *testing.T) {
	bpftest.Require(t)
	// tick-100hz fires every 10 ms: most gaps between its firings are
	// 10 ms. (A loaded virtual machine can make a timer miss a firing or
	// fire late, which makes a longer gap and then a shorter one, and it
	// delays attaching, so neither the count in a second nor the mean or
	// shortest gap is a fair test.)
	// (last is an array: DTrace refuses a scalar read before the clause
	// that first assigns it.)
	r := dstar(t, 20*time.Second, "-q", "-n", `tick-100hz /last[0]/ { this->g = timestamp - last[0]; @near = sum(this->g >= 9500000 && this->g <= 10500000); @all = count(); }
		tick-100hz { last[0] = timestamp; }
		tick-1s { printa("%@d", @near); printa(" %@d\n", @all); exit(0); }`)
	var near, all int
	if _, err := fmt.Sscanf(strings.TrimSpace(r.stdout), "%d %d", &near, &all); err != nil || r.code != 0 || all < 20 {
		t.Fatalf("stdout %q (exit %d, stderr %s)", r.stdout, r.code, r.stderr)
	}
	if 2*near <= all {
		t.Errorf("only %d of %d gaps between tick-100hz firings are 10 ms", near, all)
	}
}

func TestSyscallTargetCount(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	// The child opens five files the test names, then exits.
	for i := 0; i < 5; i++ {
		os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), nil, 0o644)
	}
	cmd := fmt.Sprintf("cat %s/0 %s/1 %s/2 %s/3 %s/4", dir, dir, dir, dir, dir)
	r := dstar(t, 20*time.Second, "-q", "-c", cmd, "-n",
		`syscall::openat:entry /pid == $target/ { @[copyinstr(arg1)] = count(); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for i := 0; i < 5; i++ {
		re := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(filepath.Join(dir, fmt.Sprint(i))) + ` +1$`)
		if !re.MatchString(r.stdout) {
			t.Errorf("open of %d not counted once; stdout:\n%s", i, r.stdout)
		}
	}
}

func TestSdtExec(t *testing.T) {
	bpftest.Require(t)
	cmd := exec.Command(dstarBin, "-q", "-n", `sdt:sched::sched_process_exec /args->filename == "/bin/true" || args->filename == "/usr/bin/true"/ { printf("exec %s\n", args->filename); exit(0); }`)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Exec /bin/true until dstar sees it: dstar attaches at its own pace.
	deadline := time.After(20 * time.Second)
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("dstar: %v\n%s", err, errb.String())
			}
			if !strings.HasPrefix(out.String(), "exec /") || !strings.Contains(out.String(), "/true\n") {
				t.Errorf("stdout: %q", out.String())
			}
			return
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("no exec seen; stderr: %s", errb.String())
		case <-time.After(50 * time.Millisecond):
			exec.Command("/bin/true").Run()
		}
	}
}

func TestCountByExecname(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-q", "-c", "cat /dev/null", "-n",
		`syscall::openat:entry /pid == $target/ { @[execname] = count(); }`)
	if !regexp.MustCompile(`(?m)^  cat +\d+$`).MatchString(r.stdout) {
		t.Errorf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

func TestListSyscall(t *testing.T) {
	bpftest.Require(t) // tracefs is root's
	r := dstar(t, 20*time.Second, "-l", "-n", "syscall::read:entry")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if len(lines) != 2 || lines[0] != "   ID   PROVIDER            MODULE                          FUNCTION NAME" {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	if !regexp.MustCompile(`^ *\d+ +syscall +vmlinux +read entry$`).MatchString(lines[1]) {
		t.Errorf("line: %q", lines[1])
	}
}

func TestSyntaxError(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "x.d")
	os.WriteFile(script, []byte("BEGIN\n{\n\tprintf(\"x\" }\n"), 0o644)
	r := dstar(t, 20*time.Second, "-s", script)
	first := strings.SplitN(r.stderr, "\n", 2)[0]
	want := fmt.Sprintf(`dstar: failed to compile script %s: line 3: syntax error near "}"`, script)
	if r.code != 1 || first != want {
		t.Errorf("exit %d, stderr:\n%s\nwant first line:\n%s", r.code, r.stderr, want)
	}
	if !strings.Contains(r.stderr, script+":3:13:") || !strings.Contains(r.stderr, "^") {
		t.Errorf("no position and caret:\n%s", r.stderr)
	}
}

func TestNoMatch(t *testing.T) {
	bpftest.Require(t) // tracefs is root's
	r := dstar(t, 20*time.Second, "-n", "syscall::nosuch:entry")
	want := "dstar: invalid probe specifier syscall::nosuch:entry: probe description syscall::nosuch:entry does not match any probes\n"
	if r.code != 1 || r.stderr != want {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestUsage(t *testing.T) {
	r := dstar(t, 20*time.Second, "-K")
	if r.code != 2 || !strings.Contains(r.stderr, "Usage: dstar") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestSigintPrintsAggregations(t *testing.T) {
	bpftest.Require(t)
	cmd := exec.Command(dstarBin, "-n", `tick-10ms { @ticks = count(); @[probename] = sum(2); } tick-10ms /++n == 5/ { printf("ready"); } END { printf("end"); }`)
	var out, errb bpftest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "ready")
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("dstar exited with %v\n%s", err, errb.String())
	}
	s := out.String()
	if !strings.Contains(s, ":END end") {
		t.Errorf("END did not fire:\n%s", s)
	}
	if !regexp.MustCompile(`(?m)^  tick-10ms +\d+$`).MatchString(s) || !regexp.MustCompile(`(?m)^ +\d+$`).MatchString(s) {
		t.Errorf("aggregations not printed:\n%s", s)
	}
}

// waitFor polls buf until it contains s.
func waitFor(t *testing.T, buf *bpftest.Buffer, s string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(buf.String(), s) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %q in %q", s, buf.String())
}

func TestRuntimeFaults(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-q", "-n",
		`BEGIN { x = 0; printf("%d\n", 1 / x); } BEGIN { printf("next clause\n"); }
		 ERROR { printf("ERROR %d %d\n", arg4, arg5); }
		 tick-1ms { trace(copyinstr(0)); } tick-1ms /i++ == 2/ { exit(0); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "next clause\n") || !strings.Contains(r.stdout, "ERROR 4 0\n") || !strings.Contains(r.stdout, "ERROR 1 0\n") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	if !regexp.MustCompile(`dstar: error in dt_clause_0 for probe ID 1 \(dtrace:::BEGIN\): divide-by-zero at BPF pc \d+\n`).MatchString(r.stderr) {
		t.Errorf("no divide-by-zero message:\n%s", r.stderr)
	}
	if !regexp.MustCompile(`dstar: error in dt_clause_3 for probe ID \d+ \(profile:::tick-1ms\): invalid address \(0x0\) at BPF pc \d+\n`).MatchString(r.stderr) {
		t.Errorf("no invalid address message:\n%s", r.stderr)
	}
}

func TestDtraceName(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "dtrace")
	if err := os.Symlink(dstarBin, link); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command(link, "-n", "syscall::nosuch:entry").CombinedOutput()
	if !strings.HasPrefix(string(out), "dtrace: invalid probe specifier") {
		t.Errorf("through a link named dtrace: %q", out)
	}
}

func TestMacroArgs(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "m.d")
	os.WriteFile(script, []byte("#!/usr/sbin/dtrace -qs\nBEGIN { printf(\"%d %s %s\\n\", $1 + 1, $$2, $0); exit(0); }\n"), 0o644)
	r := dstar(t, 20*time.Second, "-qs", script, "41", "word")
	if r.stdout != fmt.Sprintf("42 word %s\n\n", script) || r.code != 0 {
		t.Errorf("got %q (exit %d): %s", r.stdout, r.code, r.stderr)
	}
	r = dstar(t, 20*time.Second, "-qs", script)
	if r.code != 1 || !strings.Contains(r.stderr, "macro argument $1 is not defined") {
		t.Errorf("missing argument: exit %d, %q", r.code, r.stderr)
	}
	// DTrace refuses an argument nothing references, unless -x argref.
	r = dstar(t, 20*time.Second, "-qs", script, "41", "word", "extra")
	if r.code != 1 || !strings.Contains(r.stderr, "extraneous argument 'extra' ($3 is not referenced)") {
		t.Errorf("extraneous argument: exit %d, %q", r.code, r.stderr)
	}
	r = dstar(t, 20*time.Second, "-x", "argref", "-qs", script, "41", "word", "extra")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "42 word") {
		t.Errorf("-x argref: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	// Macros expand inside probe descriptions too.
	r = dstar(t, 20*time.Second, "-qn", `syscall::$1:entry /pid == $target/ { printf("%s", probefunc); exit(0); }`, "exit_group", "-c", "true")
	if strings.TrimSpace(r.stdout) != "exit_group" || r.code != 0 {
		t.Errorf("$1 in a description: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
}

func TestGrabPid(t *testing.T) {
	bpftest.Require(t)
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	pid := sleeper.Process.Pid
	cmd := exec.Command(dstarBin, "-p", strconv.Itoa(pid), "-n", `tick-10ms /$target == `+strconv.Itoa(pid)+` && n++ == 0/ { printf("ready"); }`)
	var out, errb bpftest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "ready")
	sleeper.Process.Kill()
	sleeper.Wait()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("dstar: %v\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), fmt.Sprintf("dstar: pid %d has exited\n", pid)) {
		t.Errorf("stderr: %q", errb.String())
	}
}

func TestOptionsAndOutputFile(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "q.d")
	os.WriteFile(script, []byte("#pragma D option quiet\nBEGIN { trace(\"q\"); exit(0); }\n"), 0o644)
	out := filepath.Join(dir, "out")
	r := dstar(t, 20*time.Second, "-x", "bufsize=64k", "-o", out, "-s", script)
	b, _ := os.ReadFile(out)
	if r.code != 0 || r.stdout != "" || r.stderr != "" || string(b) != "q\n" {
		t.Errorf("exit %d, stdout %q, stderr %q, file %q", r.code, r.stdout, r.stderr, b)
	}
	r = dstar(t, 20*time.Second, "-x", "nosuch=1", "-n", "BEGIN")
	if r.code != 1 || r.stderr != "dstar: failed to set -x nosuch: Invalid option name\n" {
		t.Errorf("bad option: exit %d, %q", r.code, r.stderr)
	}
	r = dstar(t, 20*time.Second, "-Z", "-q", "-n", "syscall::nosuch:entry { }", "-n", "BEGIN { exit(0); }")
	if r.code != 0 {
		t.Errorf("-Z: exit %d, %q", r.code, r.stderr)
	}
}

func TestAllSyscalls(t *testing.T) {
	bpftest.Require(t)
	// Every syscall probe at once: one dispatcher program per attach
	// point, tail-calling each probe's program.
	r := dstar(t, 30*time.Second, "-q", "-c", "cat /nonexistent-dstar-file", "-n",
		`syscall:::entry /pid == $target/ { @[probefunc] = count(); } syscall:::return /pid == $target && errno != 0/ { @e[probefunc, errno] = count(); }`)
	if !regexp.MustCompile(`(?m)^  execve +1$`).MatchString(r.stdout) && !regexp.MustCompile(`(?m)^  openat +\d+$`).MatchString(r.stdout) {
		t.Errorf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	if !regexp.MustCompile(`(?m)^  openat +2 +\d+$`).MatchString(r.stdout) {
		t.Errorf("the failed open (ENOENT) is not counted:\n%s", r.stdout)
	}
}

// localListener listens on a TCP port of 127.0.0.1 until the test ends,
// for the test to connect to.
func localListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func TestTracepointArrayField(t *testing.T) {
	bpftest.Require(t)
	// sock:inet_sock_set_state has __u8 saddr[4]: its elements are
	// readable by index, with a constant or a computed one.
	ln := localListener(t)
	port := ln.Addr().(*net.TCPAddr).Port
	cmd := exec.Command(dstarBin, "-q", "-n", fmt.Sprintf(`BEGIN { printf("ready\n"); }
		sdt:sock::inet_sock_set_state /args->dport == %d/ { i = 3; printf("%%d.%%d.%%d.%%d\n", args->daddr[0], args->daddr[1], args->daddr[2], args->daddr[i]); exit(0); }`, port))
	var out, errb bpftest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "ready\n")
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	if out.String() != "ready\n127.0.0.1\n\n" {
		t.Errorf("stdout %q", out.String())
	}
}

func TestJSONOutput(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-f", "json", "-n",
		`BEGIN { printf("hi %d\n", 5); @c["a", 1] = count(); @q = quantize(3); exit(2); }`)
	if r.code != 2 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var got []map[string]any
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q: %v", l, err)
		}
		got = append(got, m)
	}
	if len(got) != 4 || got[0]["type"] != "printf" || got[0]["text"] != "hi 5\n" || got[1]["type"] != "exit" ||
		got[1]["status"] != 2.0 || got[2]["name"] != "@c" || got[3]["function"] != "quantize" {
		t.Errorf("records:\n%s", r.stdout)
	}
	rows := got[2]["rows"].([]any)
	row := rows[0].(map[string]any)
	if fmt.Sprint(row["keys"]) != "[a 1]" || row["value"] != 1.0 {
		t.Errorf("aggregation row %v", row)
	}
}

func TestPerCPUMerge(t *testing.T) {
	bpftest.Require(t)
	// Four threads on two CPUs make exactly 400,000 getppid calls: the
	// per-CPU counts must merge to exactly that, with no lost updates.
	load := filepath.Join(t.TempDir(), "loadgen")
	if out, err := exec.Command("go", "build", "-o", load, "../../bench/loadgen").CombinedOutput(); err != nil {
		t.Fatalf("building loadgen: %v\n%s", err, out)
	}
	r := dstar(t, 60*time.Second, "-q", "-c", load+" -getppid -threads 4 -n 400000", "-n",
		`syscall::getppid:entry /pid == $target/ { @n = count(); @s = sum(2); @byThread[tid] = count(); @q = quantize(1); }
		 END { printa("%@d %@d\n", @n, @s); }`)
	lines := strings.SplitN(r.stdout, "\n", 3)
	if len(lines) < 3 || lines[1] != "400000 800000" {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	// Four threads, 100,000 calls each.
	if n := len(regexp.MustCompile(`(?m)^ +\d+ +100000$`).FindAllString(r.stdout, -1)); n != 4 {
		t.Errorf("%d threads counted 100000 times:\n%s", n, r.stdout)
	}
	if !strings.Contains(r.stdout, "1 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@ 400000") {
		t.Errorf("quantize did not merge:\n%s", r.stdout)
	}
}

func TestCopyinTracememArgs(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-q", "-c", "cat /etc/hostname", "-n",
		`syscall::openat:entry /pid == $target && basename(copyinstr(args[1])) == "hostname"/ {
			tracemem(arg1, 14); printf("%x %d\n", *(int *)copyin(arg1, 4), args[0]); }`)
	if !strings.Contains(r.stdout, "0: 2f 65 74 63 2f 68 6f 73 74 6e 61 6d 65 00        /etc/hostname.\n") ||
		!strings.Contains(r.stdout, "6374652f -100\n") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

func TestFreopen(t *testing.T) {
	bpftest.Require(t)
	file := filepath.Join(t.TempDir(), "out")
	r := dstar(t, 20*time.Second, "-qw", "-n", fmt.Sprintf(`BEGIN { printf("one\n"); freopen("%s"); printf("two\n"); freopen(""); printf("three\n"); exit(0); }`, file))
	b, _ := os.ReadFile(file)
	if r.stdout != "one\nthree\n\n" || string(b) != "two\n" {
		t.Errorf("stdout %q, file %q, stderr %q", r.stdout, b, r.stderr)
	}
}

// TestFBT traces a kernel function where the kernel allows it, and
// elsewhere checks that naming fbt fails with the message that says which
// mechanisms the kernel lacks (this test's own probe of the kernel, not an
// assumption, decides which).
func TestFBT(t *testing.T) {
	bpftest.Require(t)
	script := `fbt::ksys_read:entry /pid == $target/ { @e = count(); } fbt::ksys_read:return /pid == $target/ { @r[arg1 >= 0] = count(); }`
	if err := providers.FBTAvailable(); err == nil {
		r := dstar(t, 20*time.Second, "-q", "-n", script, "-c", "head -c 1 /etc/hostname")
		if r.code != 0 || !regexp.MustCompile(`(?m)^ +[1-9]\d*\n`).MatchString(r.stdout) {
			t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		return
	}
	r := dstar(t, 20*time.Second, "-n", script)
	want := "invalid probe specifier " + script + ": fbt provider unavailable: this kernel lacks kprobes ("
	if r.code != 1 || !strings.Contains(r.stderr, want) ||
		!strings.Contains(r.stderr, "), kprobe-multi links (") || !strings.Contains(r.stderr, ") and fentry/fexit programs (") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	// Listing everything is not disturbed by fbt.
	if r := dstar(t, 20*time.Second, "-l"); r.code != 0 || strings.Contains(r.stderr, "fbt") {
		t.Errorf("-l: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestAggPerCPU(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-q", "-x", "aggpercpu", "-n", `BEGIN { @c = count(); @c = count(); @s["k"] = sum(5); exit(0); }`)
	want := regexp.MustCompile(`^\n +2\n    \[CPU \d+\] +2\n  k +5\n    \[CPU \d+\] +5\n$`)
	if !want.MatchString(r.stdout) {
		t.Errorf("stdout %q", r.stdout)
	}
}

func TestAggregationDrops(t *testing.T) {
	bpftest.Require(t)
	// Room for four keys (16 bytes each in 64): two of six are dropped,
	// and said to be.
	r := dstar(t, 20*time.Second, "-q", "-x", "aggsize=64", "-n",
		`BEGIN { @[1] = count(); @[2] = count(); @[3] = count(); @[4] = count(); @[5] = count(); @[6] = count(); exit(0); }`)
	if !regexp.MustCompile(`^dstar: 2 aggregation drops on CPU \d+\n$`).MatchString(r.stderr) {
		t.Errorf("stderr %q", r.stderr)
	}
	if n := strings.Count(r.stdout, "\n"); n != 5 {
		t.Errorf("stdout %q", r.stdout)
	}
}

func TestInetNtoa(t *testing.T) {
	bpftest.Require(t)
	ln := localListener(t)
	port := ln.Addr().(*net.TCPAddr).Port
	cmd := exec.Command(dstarBin, "-q", "-n", fmt.Sprintf(`BEGIN { printf("ready\n"); }
		sdt:sock::inet_sock_set_state /args->dport == %d/ {
			printf("%%s\n", inet_ntoa(&((struct sock *)args->skaddr)->__sk_common.skc_daddr)); exit(0); }`, port))
	var out, errb bpftest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "ready\n")
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	if out.String() != "ready\n127.0.0.1\n\n" {
		t.Errorf("stdout %q, stderr %q", out.String(), errb.String())
	}
}

// TestInetNtop formats addresses the target writes, read back with copyin:
// RFC 5952 text for IPv6 (as inet_ntop(3) writes it), dotted quads for IPv4;
// inet_ntoa6 writes IPv4-mapped and -compatible addresses as plain IPv4.
func TestInetNtop(t *testing.T) {
	bpftest.Require(t)
	cases := []struct{ bytes, want string }{
		{`\x20\x01\x0d\xb8\0\0\0\0\0\x01\0\0\0\0\0\x01`, "2001:db8::1:0:0:1"},
		{`\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x01`, "::1"},
		{`\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0`, "::"},
		{`\0\x01\0\0\0\0\0\0\0\0\0\0\0\0\0\0`, "1::"},
		{`\0\0\0\0\0\0\0\0\0\0\xff\xff\x7f\0\0\x01`, "::ffff:127.0.0.1"},
		{`\0\0\0\0\0\0\0\0\0\0\0\0\x0b\0\0\x01`, "::11.0.0.1"},
		{`\xfe\x80\0\0\0\0\0\0\x02\x11\x22\xff\xfe\x33\x44\x55`, "fe80::211:22ff:fe33:4455"},
		{`\x20\x01\x0d\xb8\0\0\0\x01\0\x01\0\x01\0\x01\0\0`, "2001:db8:0:1:1:1:1:0"},
	}
	var script, want strings.Builder
	for _, c := range cases {
		fmt.Fprintf(&script, "printf '%s' >/dev/null; ", c.bytes)
		// inet_ntoa6 writes an address holding an IPv4 one as plain IPv4.
		ntoa6 := c.want
		if i := strings.LastIndex(c.want, ":"); strings.Contains(c.want, ".") {
			ntoa6 = c.want[i+1:]
		}
		fmt.Fprintf(&want, "%s %s\n", c.want, ntoa6)
	}
	script.WriteString(`printf '\xc0\xa8\x01\xfe' >/dev/null`)
	want.WriteString("192.168.1.254\n192.168.1.254\n192.168.1.254\n\n")
	r := dstar(t, 30*time.Second, "-qn", `syscall::write:entry /pid == $target && arg2 == 16/ {
		printf("%s %s\n", inet_ntop(AF_INET6, copyin(arg1, 16)), inet_ntoa6((in6_addr_t *)copyin(arg1, 16))); }
	syscall::write:entry /pid == $target && arg2 == 4/ { printf("%s\n", inet_ntop(AF_INET, copyin(arg1, 4))); printf("%s\n", inet_ntoa((ipaddr_t *)copyin(arg1, 4)));
		this->a = alloca(4); copyinto(arg1, 4, this->a); printf("%s\n", inet_ntoa((ipaddr_t *)this->a)); }`,
		"-c", "bash -c "+shellQuote(script.String()))
	if r.stdout != want.String() {
		t.Errorf("got:\n%s\nwant:\n%s\nstderr: %s", r.stdout, want.String(), r.stderr)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestLongJumps runs clauses of over 32K instructions (500 statements
// of about 70), whose jumps to their end and to their fault handler reach
// past a jump's 16-bit offset: the first is skipped by its predicate, the
// second faults at its start, the third runs.
func TestLongJumps(t *testing.T) {
	bpftest.Require(t)
	var b strings.Builder
	body := func() {
		for i := range 500 {
			fmt.Fprintf(&b, "\ta[%d] = %d; n += a[%d] + (unsigned char)a[%d];\n", i%10, i, i%10, i%10)
		}
	}
	// n is declared: n += x reads n, as in DTrace.
	b.WriteString("int a[int];\nint n;\nBEGIN /n != 0/ {\n")
	body()
	b.WriteString("}\nBEGIN {\n\ttrace(copyinstr(0));\n")
	body()
	b.WriteString("}\nBEGIN {\n")
	body()
	b.WriteString("\tprintf(\"%d\\n\", n);\n\texit(0);\n}\n")
	script := filepath.Join(t.TempDir(), "long.d")
	os.WriteFile(script, []byte(b.String()), 0o644)
	r := dstar(t, 60*time.Second, "-q", "-s", script)
	// Each statement adds a[k] twice, the second time cut to a char.
	want := 0
	for i := range 500 {
		want += i + i%256
	}
	if r.code != 0 || r.stdout != fmt.Sprintf("%d\n\n", want) {
		t.Fatalf("exit %d, stdout %q, want %d\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	if !strings.Contains(r.stderr, "error in dt_clause_1 for probe ID 1 (dtrace:::BEGIN): invalid address (0x0) at BPF pc ") {
		t.Errorf("stderr %q, want the second clause's fault", r.stderr)
	}
}

// TestBigRecord runs a clause whose record is over 32K, past what an
// instruction's 16-bit offset reaches: 150 printfs of a string and a
// number each, and a fault after them that discards the record.
func TestBigRecord(t *testing.T) {
	bpftest.Require(t)
	var b strings.Builder
	b.WriteString("BEGIN {\n")
	for i := range 150 {
		fmt.Fprintf(&b, "\tprintf(\"%%s %%d\\n\", strjoin(\"a\", \"b\"), %d);\n", i)
	}
	b.WriteString("}\nBEGIN /n++ == 0/ {\n")
	for i := range 150 {
		fmt.Fprintf(&b, "\tprintf(\"%%s %%d\\n\", \"c\", %d);\n", i)
	}
	b.WriteString("\tprintf(\"%s\\n\", copyinstr(0));\n}\nBEGIN { exit(0); }\n")
	script := filepath.Join(t.TempDir(), "big.d")
	os.WriteFile(script, []byte(b.String()), 0o644)
	r := dstar(t, 30*time.Second, "-q", "-s", script)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 150 || lines[0] != "ab 0" || lines[149] != "ab 149" {
		t.Fatalf("exit %d, %d lines, stdout ends %q\nstderr: %s", r.code, len(lines), lines[len(lines)-1], r.stderr)
	}
	if !strings.Contains(r.stderr, "error in dt_clause_1 for probe ID 1 (dtrace:::BEGIN): invalid address (0x0) at BPF pc ") {
		t.Errorf("stderr %q, want the second clause's fault", r.stderr)
	}
}

// TestPrint prints a script-defined struct the target writes, in DTrace's
// layout: the address, then one member to a line, zero members left out,
// char arrays up to their NUL, enums by name.
func TestPrint(t *testing.T) {
	bpftest.Require(t)
	script := filepath.Join(t.TempDir(), "print.d")
	os.WriteFile(script, []byte(`#pragma D option quiet
enum eh { FIRSTVAL = 0, SECONDVAL = 1, THIRDVAL = 3 };
struct inner { void *e; uint64_t f; };
struct test_struct { int a; char b[5]; long z; struct inner s; char g; enum eh h; };
syscall::write:entry /pid == $target/ { print((struct test_struct *)copyin(arg1, sizeof (struct test_struct))); exit(0); }
`), 0o644)
	bytes := `\x01\0\0\0test\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x7e\xca\x7a\x9b\xff\xff\xb1\x68\xde\x3a\0\0\0\0\x01\0\0\0\x01\0\0\0`
	r := dstar(t, 30*time.Second, "-s", script, "-c", "bash -c "+shellQuote("printf '"+bytes+"' >/dev/null"))
	pad := strings.Repeat(" ", 44)
	want := pad + "(struct test_struct) {\n" +
		pad + " .a = (int)1,\n" +
		pad + " .b = (char [5]) [\n" +
		pad + "  (char)'t',\n" + pad + "  (char)'e',\n" + pad + "  (char)'s',\n" + pad + "  (char)'t',\n" +
		pad + " ],\n" +
		pad + " .s = (struct inner) {\n" +
		pad + "  .e = (void *)0xffff9b7aca7e0000,\n" +
		pad + "  .f = (uint64_t)987654321,\n" +
		pad + " },\n" +
		pad + " .g = (char)1,\n" +
		pad + " .h = (enum eh)SECONDVAL,\n" +
		pad + "}\n\n"
	addr, rest, _ := strings.Cut(r.stdout, "\n")
	if !regexp.MustCompile(`^0x[0-9a-f]+ = \*$`).MatchString(addr) || rest != want {
		t.Errorf("got:\n%s\nwant:\n0x... = *\n%s\nstderr: %s", r.stdout, want, r.stderr)
	}

	// Anonymous members, filled by assignments through the pointer.
	r = dstar(t, 30*time.Second, "-qn", `struct ts { int a; char b[5]; union { uint8_t c; uint64_t d; } u; struct { void *e; uint64_t f; } s; };
		BEGIN { t = (struct ts *)alloca(sizeof (struct ts)); t->u.d = 123456789; t->s.f = 987654321; print(t); exit(0); }`)
	// b is all zero, so it is left out, as DTrace does.
	want = pad + "(struct ts) {\n" +
		pad + " .u = (union) {\n" + pad + "  .c = (uint8_t)21,\n" + pad + "  .d = (uint64_t)123456789,\n" + pad + " },\n" +
		pad + " .s = (struct) {\n" + pad + "  .f = (uint64_t)987654321,\n" + pad + " },\n" +
		pad + "}\n\n"
	if _, rest, _ := strings.Cut(r.stdout, "\n"); rest != want {
		t.Errorf("got:\n%s\nwant:\n0x... = *\n%s\nstderr: %s", r.stdout, want, r.stderr)
	}
}

// TestProfileArgs samples a busy user-space loop: arg0 is the kernel PC
// (0 in user mode), arg1 the user PC (0 in kernel mode), never both; on
// profile-N, and on tick-N pinned with the loop to one CPU.
func TestProfileArgs(t *testing.T) {
	bpftest.Require(t)
	cpu := strconv.Itoa(runtime.NumCPU() - 1)
	loop := `sh -c 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done'`
	clause := ` /pid == $target/ { @[arg0 != 0, arg1 != 0, arg0 == 0 || (uint64_t)arg0 >> 48 == 0xffff, arg1 < 0x800000000000] = count(); }`
	for _, args := range [][]string{
		{"-n", "profile-997" + clause, "-c", loop},
		{"-x", "cpu=" + cpu, "-n", "tick-1ms" + clause, "-c", "taskset -c " + cpu + " " + loop},
	} {
		r := dstar(t, 30*time.Second, append([]string{"-q"}, args...)...)
		if r.code != 0 {
			t.Fatalf("%q: exit %d, stderr %s", args, r.code, r.stderr)
		}
		user := regexp.MustCompile(`(?m)^ +0 +1 +1 +1 +(\d+)$`).FindStringSubmatch(r.stdout)
		rows := regexp.MustCompile(`(?m)^ +(0 +1|1 +0) +1 +1 +\d+$`).FindAllString(r.stdout, -1)
		if user == nil || len(user[1]) < 2 || len(rows) != len(strings.Split(strings.TrimSpace(r.stdout), "\n")) {
			t.Errorf("%q: want mostly user-mode samples (0 1 1 1), each with one PC:\n%s", args, r.stdout)
		}
	}
}

// TestCPUOption pins BEGIN, END and tick-N to one CPU with -x cpu, and
// records nothing from other CPUs.
// syscallsOn keeps making system calls on CPU cpu until the test ends, for
// probes there to see: a quiet machine may make none there for a while.
func syscallsOn(t *testing.T, cpu int) {
	t.Helper()
	busy := exec.Command("taskset", "-c", strconv.Itoa(cpu), "cat", "/dev/zero")
	if err := busy.Start(); err != nil {
		t.Fatalf("taskset: %v", err)
	}
	t.Cleanup(func() { busy.Process.Kill(); busy.Wait() })
}

func TestCPUOption(t *testing.T) {
	bpftest.Require(t)
	cpu := runtime.NumCPU() - 1
	syscallsOn(t, cpu)
	r := dstar(t, 20*time.Second, "-q", "-x", fmt.Sprintf("cpu=%d", cpu), "-n",
		`BEGIN { printf("BEGIN %d\n", cpu); } tick-1ms { @t[cpu] = count(); } syscall:::entry { @s[cpu] = count(); }
		tick-20ms { exit(0); } END { printf("END %d\n", cpu); }`)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	want := regexp.MustCompile(fmt.Sprintf(`^BEGIN %[1]d\nEND %[1]d\n\n +%[1]d +\d+\n +%[1]d +\d+\n*$`, cpu))
	if !want.MatchString(r.stdout) {
		t.Errorf("stdout:\n%s\nwant BEGIN, END and every row on CPU %d", r.stdout, cpu)
	}
	r = dstar(t, 20*time.Second, "-x", "cpu=-1", "-n", "BEGIN { exit(0); }")
	if r.code != 1 || !strings.Contains(r.stderr, "failed to set -x cpu: Invalid value for specified option") {
		t.Errorf("-x cpu=-1: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestListVerbose checks dtrace -lv's layout: each probe's line, its
// stability and its arguments' types.
func TestListVerbose(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-l", "-v", "-n", "BEGIN", "-n", "syscall::read:entry", "-n", "rawtp:sched::sched_switch")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	attrs := func(probe, args string) string {
		f := func(title, a string) string {
			v := strings.Split(a, "/")
			return "\n\t" + title + "\n\t\tIdentifier Names: " + v[0] + "\n\t\tData Semantics:   " + v[1] + "\n\t\tDependency Class: " + v[2] + "\n"
		}
		return f("Probe Description Attributes", probe) + f("Argument Attributes", args) + "\n\tArgument Types\n"
	}
	want := "   ID   PROVIDER            MODULE                          FUNCTION NAME\n" +
		"    1     dtrace                                                     BEGIN\n" +
		attrs("Stable/Stable/Common", "Stable/Stable/Common") + "\t\tNone\n\n" +
		"ID syscall           vmlinux                              read entry\n" +
		attrs("Evolving/Evolving/Common", "Private/Private/ISA") +
		"\t\targs[0]: unsigned int\n\t\targs[1]: char *\n\t\targs[2]: size_t\n\n" +
		"ID rawtp             sched                                   sched_switch\n" +
		attrs("Private/Private/Unknown", "Private/Private/ISA") +
		"\t\targs[0]: bool\n\t\targs[1]: struct task_struct *\n\t\targs[2]: struct task_struct *\n"
	got := regexp.MustCompile(`(?m)^ *\d+ +(syscall|rawtp)`).ReplaceAllString(r.stdout, "ID $1")
	if !strings.HasPrefix(got, want) {
		t.Errorf("stdout:\n%s\nwant it to start:\n%s", got, want)
	}
}

// TestListAll lists every probe, and every sdt probe with its argument
// types. (How fast listing is, is measured by providers' BenchmarkListAll,
// not timed here.)
func TestListAll(t *testing.T) {
	bpftest.Require(t)
	for _, args := range [][]string{{"-l"}, {"-l", "-v", "-P", "sdt"}, {"-l", "-v"}} {
		r := dstar(t, 60*time.Second, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		lines := strings.Count(r.stdout, "\n")
		t.Logf("dstar %s: %d lines", strings.Join(args, " "), lines)
		if !strings.HasPrefix(r.stdout, "   ID   PROVIDER") || lines < 100 {
			t.Errorf("dstar %s: %d lines, starting %.80q", strings.Join(args, " "), lines, r.stdout)
		}
	}
}

// TestRawTPCount counts context switches on a BTF tracepoint, reading the
// tasks through args[1] and args[2]: the previous task is the current one.
func TestRawTPCount(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-q", "-n",
		`rawtp:sched::sched_switch { @[args[1]->pid == tid, stringof(args[1]->comm) == execname, args[2]->pid != tid || tid == 0] = count(); }
		tick-50ms { exit(0); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !regexp.MustCompile(`^\n +1 +1 +1 +[1-9]\d*\n$`).MatchString(r.stdout) {
		t.Errorf("stdout:\n%q\nwant one row: 1 1 1 COUNT", r.stdout)
	}
}

// TestSeveralTargets: with several -c and -p, dstar (as dtrace) says how
// each process went and stops only when all have gone; $target is the
// first -c's pid.
func TestSeveralTargets(t *testing.T) {
	bpftest.Require(t)
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	cmd := exec.Command(dstarBin, "-n", `BEGIN { printf("target %d\n", $target); }`,
		"-c", "sh -c 'exit 3'", "-c", "sh -c 'kill -9 $$'", "-p", strconv.Itoa(sleeper.Process.Pid))
	var out, errb bpftest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &errb, "exited with status 3\n")
	waitFor(t, &errb, "terminated by SIGKILL\n")
	sleeper.Process.Kill()
	sleeper.Wait()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("dstar: %v\n%s", err, errb.String())
	}
	m := regexp.MustCompile(`dstar: pid (\d+) exited with status 3\n`).FindStringSubmatch(errb.String())
	if m == nil || !strings.Contains(out.String(), "target "+m[1]+"\n") {
		t.Errorf("$target is not the first -c's pid: stdout %q, stderr %q", out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), fmt.Sprintf("dstar: pid %d has exited\n", sleeper.Process.Pid)) {
		t.Errorf("no notice for the -p process: %q", errb.String())
	}
}

// TestTargetHeldAtExec: a -c command is held at its exec until every
// probe is attached, so its very first system call (the dynamic linker's
// brk) is seen.
func TestTargetHeldAtExec(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-q", "-c", "/bin/true", "-n",
		`syscall:::entry /pid == $target && !seen/ { seen = 1; printf("%s\n", probefunc); }`)
	if r.code != 0 || r.stdout != "brk\n\n" {
		t.Errorf("exit %d, stdout %q (want the first syscall, brk), stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestPrintfTime checks %Y and %T, in the zone TZ names, as DTrace prints
// them (strftime's "%Y %b %e %T" and RFC 822's), and that walltimestamp
// is now.
func TestPrintfTime(t *testing.T) {
	bpftest.Require(t)
	cmd := exec.Command(dstarBin, "-q", "-n", `BEGIN { printf("%Y|%T|%-22Y|\n", 1700000000123456789, 1700000000123456789, 1700000000123456789);
		printf("%d\n", walltimestamp / 1000000000); exit(0); }`)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	before := time.Now().Unix()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := strings.Split(string(out), "\n")
	if want := "2023 Nov 14 22:13:20|Tue, 14 Nov 2023 22:13:20 UTC|2023 Nov 14 22:13:20  |"; lines[0] != want {
		t.Errorf("got %q, want %q", lines[0], want)
	}
	now, _ := strconv.ParseInt(strings.TrimSpace(lines[1]), 10, 64)
	if now < before-1 || now > time.Now().Unix()+1 {
		t.Errorf("walltimestamp %d s, want about %d", now, before)
	}
}

// TestPrintfWide: a width of ten million is printed in full, as Oracle's
// tst.wide.sh expects.
func TestPrintfWide(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-qn", `BEGIN { printf("%10000000d|%-10000000s|\n", 1, "x"); exit(0); }`)
	if want := strings.Repeat(" ", 9999999) + "1|x" + strings.Repeat(" ", 9999999) + "|\n\n"; r.code != 0 || r.stdout != want {
		t.Errorf("exit %d, %d bytes of output, want %d", r.code, len(r.stdout), len(want))
	}
}

// TestExitAndMatched checks dtrace's notice, which counts each clause's
// probes, and that the last exit( ) read decides the status: END's.
func TestExitAndMatched(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-n", `BEGIN { exit(1); } BEGIN { exit(2); } END { exit(0); }`)
	if r.code != 0 {
		t.Errorf("exit status %d, want END's 0", r.code)
	}
	if want := "dstar: description 'BEGIN ' matched 3 probes\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	r = dstar(t, 20*time.Second, "-q", "-n", `BEGIN { exit(0); } END { exit(3); }`)
	if r.code != 3 {
		t.Errorf("exit status %d, want END's 3", r.code)
	}
}
