// Package examples_test runs the Starlark examples with the real dstar
// binary. Each example's NAME.expected, beside it, lists what its output
// must show: regular expressions that must each match a whole line of the
// output, in order, with ${...} filled in by the test from what it did.
package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// dstarBin is the binary the tests run, built once.
var dstarBin string

// loadEnv makes the test binary a load generator instead (see TestMain).
const loadEnv = "DSTAR_EXAMPLES_LOAD"

func TestMain(m *testing.M) {
	if os.Getenv(loadEnv) == "getppid" {
		getppidLoop()
	}
	bpftest.MainWithDstar(m, "../cmd/dstar", &dstarBin)
}

// getppidLoop calls getppid as fast as it can until its standard input
// closes: the busiest process on the machine, with a known busiest call.
func getppidLoop() {
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	runtime.LockOSThread()
	for {
		syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
	}
}

// checkExpected matches out against the regular expressions of
// NAME.expected, with vars filled in.
func checkExpected(t *testing.T, name, out string, vars map[string]string) {
	t.Helper()
	b, err := os.ReadFile(name + ".expected")
	if err != nil {
		t.Fatal(err)
	}
	var res []*regexp.Regexp
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for k, v := range vars {
			line = strings.ReplaceAll(line, "${"+k+"}", regexp.QuoteMeta(v))
		}
		res = append(res, regexp.MustCompile("^(?:"+line+")$"))
	}
	i := 0
	for _, line := range strings.Split(out, "\n") {
		if i < len(res) && res[i].MatchString(line) {
			i++
		}
	}
	if i < len(res) {
		t.Errorf("%s.expected: no line matching %s (after %d matched)\noutput:\n%s", name, res[i], i, out)
	}
}

// waitFor polls out until it matches re, failing after 20 s.
func waitFor(t *testing.T, out, errb *bpftest.Buffer, re string) {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if rx.MatchString(out.String()) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no match for %s\nstdout:\n%s\nstderr:\n%s", re, out.String(), errb.String())
}

func selfComm(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// dropLine is how dstar reports events a script's handler did not keep up
// with.
var dropLine = regexp.MustCompile(`^dstar: \d+ events dropped: the script did not keep up$`)

func TestMultiphase(t *testing.T) {
	bpftest.Require(t)
	load := exec.Command(os.Args[0])
	load.Env = append(os.Environ(), loadEnv+"=getppid")
	stdin, err := load.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		load.Wait()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, dstarBin, "run", "multiphase.star", "-d", "0.5", "-m", "0.5")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	// The script's handler runs as fast as the machine lets it: on a busy
	// one it may fall behind and drop events, which dstar reports and the
	// script counts. Anything else on stderr is a failure.
	for _, l := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
		if l != "" && !dropLine.MatchString(l) {
			t.Errorf("stderr:\n%s", errb.String())
			break
		}
	}
	checkExpected(t, "multiphase", out.String(), map[string]string{
		"PID":  strconv.Itoa(load.Process.Pid),
		"COMM": selfComm(t),
	})
	m := regexp.MustCompile(`(?m)^timed (\d+) calls: min (\d+) ns, avg (\d+) ns, max (\d+) ns`).FindStringSubmatch(out.String())
	if m == nil {
		return
	}
	n, lo, avg, hi := atoi(m[1]), atoi(m[2]), atoi(m[3]), atoi(m[4])
	if n < 100 || lo <= 0 || lo > avg || avg > hi {
		t.Errorf("implausible latencies: %s", m[0])
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func TestThreshold(t *testing.T) {
	bpftest.Require(t)
	comm := selfComm(t)
	path := filepath.Join(t.TempDir(), "opened")
	os.WriteFile(path, nil, 0o644)
	cmd := exec.Command(dstarBin, "run", "threshold.star", "-n", comm, "-t", "1000")
	var out, errb bpftest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, &out, &errb, `(?m)^watching openat`)

	// The load: five opens a millisecond, until stop closes.
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				for i := 0; i < 5; i++ {
					if f, err := os.Open(path); err == nil {
						f.Close()
					}
				}
			}
		}
	}()
	pid := os.Getpid()
	detailLine := fmt.Sprintf(`(?m)^  %d +%s +\d+ %s$`, pid, regexp.QuoteMeta(comm), regexp.QuoteMeta(path))
	waitFor(t, &out, &errb, detailLine)
	close(stop)
	<-stopped
	waitFor(t, &out, &errb, `(?m)^\d\d:\d\d:\d\d rate \d+/s: detached detail$`)
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil || errb.String() != "" {
		t.Errorf("exit: %v, stderr:\n%s", err, errb.String())
	}
	s := out.String()
	checkExpected(t, "threshold", s, map[string]string{"PID": strconv.Itoa(pid), "COMM": comm, "PATH": path})
	after := s[strings.Index(s, "detached detail"):]
	if regexp.MustCompile(detailLine).MatchString(after) {
		t.Errorf("opens shown after the detail was detached:\n%s", s)
	}
}

func TestReportJSON(t *testing.T) {
	bpftest.Require(t)
	cmd := exec.Command(dstarBin, "run", "report_json.star", "-d", "0.5", "-T", "3")
	var out, errb bpftest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The report comes only at the end: run /bin/true throughout.
	var err error
	deadline := time.After(30 * time.Second)
loop:
	for {
		select {
		case err = <-done:
			break loop
		case <-deadline:
			cmd.Process.Kill()
			t.Fatal("report_json.star did not finish")
		default:
			exec.Command("/bin/true").Run()
		}
	}
	if err != nil || errb.String() != "" {
		t.Fatalf("exit: %v\nstderr:\n%s", err, errb.String())
	}
	s := out.String()
	pid := os.Getpid()
	checkExpected(t, "report_json", s, map[string]string{"PID": strconv.Itoa(pid)})

	type count struct {
		Syscall string `json:"syscall"`
		NR      int    `json:"nr"`
		PID     int    `json:"pid"`
		Comm    string `json:"comm"`
		Count   int    `json:"count"`
	}
	var doc struct {
		Duration float64 `json:"duration_s"`
		Drops    int     `json:"drops"`
		Errors   int     `json:"errors"`
		Execs    []struct {
			PID      int    `json:"pid"`
			PPID     int    `json:"ppid"`
			Comm     string `json:"comm"`
			Filename string `json:"filename"`
		} `json:"execs"`
		Exits struct {
			Processes int `json:"processes"`
		} `json:"exits"`
		Syscalls struct {
			Total        int     `json:"total"`
			TopCalls     []count `json:"top_calls"`
			TopProcesses []count `json:"top_processes"`
		} `json:"syscalls"`
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("not the JSON document: %v\n%s", err, s)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Errorf("more after the document (%v):\n%s", err, s)
	}
	ours := 0
	for _, e := range doc.Execs {
		if e.PPID == pid && e.Comm == "true" && e.Filename == "/bin/true" {
			ours++
		}
	}
	// The test runs one /bin/true at a time, so at most the last one can
	// exec inside the window and exit after it.
	if ours == 0 || doc.Exits.Processes < ours-1 {
		t.Errorf("%d execs of /bin/true by the test, %d exits:\n%s", ours, doc.Exits.Processes, s)
	}
	if doc.Duration != 0.5 || doc.Syscalls.Total <= 0 || len(doc.Syscalls.TopCalls) == 0 || len(doc.Syscalls.TopCalls) > 3 || len(doc.Syscalls.TopProcesses) > 3 {
		t.Errorf("document:\n%s", s)
	}
	for _, list := range [][]count{doc.Syscalls.TopCalls, doc.Syscalls.TopProcesses} {
		for i := 1; i < len(list); i++ {
			if list[i].Count > list[i-1].Count {
				t.Errorf("not largest first: %+v", list)
			}
		}
	}
}
