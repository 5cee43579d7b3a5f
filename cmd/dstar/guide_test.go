package main

import (
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// Examples in the style of the Dynamic Tracing Guide, run out of quiet
// mode, where each record prints after its probe line.

// cpuColumn blanks the CPU column of probe lines, which varies by run.
var cpuColumn = regexp.MustCompile(`(?m)^ +\d+ `)

func probeLines(s string) string { return cpuColumn.ReplaceAllString(s, "  N ") }

// TestCommitProbeLines: committed records print with the probe lines of
// the clauses that speculated them, after the committing clause's own
// records; a clause that only commits prints no line, as in DTrace.
func TestCommitProbeLines(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-n", `BEGIN { s = speculation(); speculate(s); printf("hello %d", 1); }
		BEGIN { speculate(s); trace(42); }
		BEGIN { speculate(s); }
		BEGIN { trace(7); }
		BEGIN { commit(s); }
		BEGIN { t = speculation(); speculate(t); trace(8); }
		BEGIN { commit(t); }
		BEGIN { exit(0); }`)
	want := `CPU     ID                    FUNCTION:NAME
  N      1                           :BEGIN           7
  N      1                           :BEGIN hello 1
  N      1                           :BEGIN          42
  N      1                           :BEGIN 
  N      1                           :BEGIN           8
  N      1                           :BEGIN 

`
	if got := probeLines(r.stdout); got != want || r.code != 0 {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, got, want, r.stderr)
	}
}

// TestStringMacroArg: the guide passes a string to an interpreter file
// in double quotes inside single ones; its escapes are expanded.
func TestStringMacroArg(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-qn", `BEGIN { printf("%s|%d\n", $1, strlen($1)); exit(0); }`, `"a string\targument"`)
	if r.stdout != "a string\targument|17\n\n" || r.code != 0 {
		t.Errorf("got %q (exit %d): %s", r.stdout, r.code, r.stderr)
	}
}

// TestFlowIndentEmptyClause: -F prints a flow line for a clause with no
// actions, as for any other that records.
func TestFlowIndentEmptyClause(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-F", "-n", `BEGIN {} BEGIN { exit(0); }`)
	want := "CPU FUNCTION                                 \n" +
		"  N | :BEGIN                                  \n" +
		"  N | :BEGIN                                  \n\n"
	if got := probeLines(r.stdout); got != want || r.code != 0 {
		t.Errorf("exit %d, stdout:\n%q\nwant:\n%q\nstderr: %s", r.code, got, want, r.stderr)
	}
}

// TestMadeProbeIDColumn: probes made on demand (tick-N, as most scripts
// use) have IDs that fit dtrace's six-digit column, so their probe
// lines line up with the header.
func TestMadeProbeIDColumn(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-n", `tick-1ms { exit(0); }`)
	lines := strings.Split(r.stdout, "\n")
	if r.code != 0 || len(lines) < 2 {
		t.Fatalf("exit %d, stdout %q, stderr %s", r.code, r.stdout, r.stderr)
	}
	if end := strings.Index(lines[1], ":tick-1ms") + len(":tick-1ms"); end != len(lines[0]) {
		t.Errorf("probe line does not line up with the header:\n%s\n%s", lines[0], lines[1])
	}
}

// TestCommandNotFound: a -c command that cannot be run is reported as
// dtrace reports it, naming the file and the reason.
func TestCommandNotFound(t *testing.T) {
	bpftest.Require(t)
	for cmd, want := range map[string]string{
		"/nonexistent/cmd -x":       "dstar: failed to execute /nonexistent/cmd: No such file or directory\n",
		"dstar-no-such-command arg": "dstar: failed to execute dstar-no-such-command: No such file or directory\n",
	} {
		r := dstar(t, 20*time.Second, "-n", "BEGIN { exit(0); }", "-c", cmd)
		if r.code != 1 || r.stderr != want {
			t.Errorf("-c %q: exit %d, stderr %q, want %q", cmd, r.code, r.stderr, want)
		}
	}
}

// TestInterruptNewline: at Ctrl-C dtrace ends the line ^C was echoed on,
// even in quiet mode, before END's output: the guide's examples show a
// blank line between ^C and the aggregations.
func TestInterruptNewline(t *testing.T) {
	bpftest.Require(t)
	cmd := exec.Command(dstarBin, "-q", "-n", `tick-10ms /++n == 3/ { printf("ready"); } END { printf("end\n"); }`)
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
	if got, want := out.String(), "ready\nend\n\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
}
