package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/stapsdt/sdttest"
)

// usdtProgs are the C programs of the usdt tests, built once per run.
var usdtProgs = struct {
	once sync.Once
	dir  string
}{}

// The programs' sources. tick.c runs at -O0, so that its arguments are
// memory operands ("-4@-20(%rbp)"); lib.c at -O2 (registers) in a shared
// library the program finds through its run path; gate.c's probe has a
// semaphore and fires only while some tracer has it set.
var usdtSrcs = map[string]string{
	"tick.c": `#include <sys/sdt.h>
long lib_fn(long);
int main(void) {
	for (long i = 1; i <= 3; i++) {
		int v = (int)i * 10;
		DTRACE_PROBE2(myprov, tick, i, v);
	}
	volatile signed char c = -2;
	volatile unsigned short us = 65535;
	volatile long l = -7;
	STAP_PROBE4(myprov, types, c, us, l, 5);
	long s = 0;
	for (long i = 1; i <= 3; i++)
		s += lib_fn(i);
	return s == 9 ? 0 : 1;
}
`,
	"lib.c": `#include <sys/sdt.h>
long lib_fn(long x) {
	DTRACE_PROBE1(mylib, libcall, x);
	return x + 1;
}
`,
	"gate.c": `#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
#include <stdio.h>
#include <time.h>
__extension__ unsigned short myprov_gate_semaphore __attribute__((unused)) __attribute__((section(".probes")));
static int fired;
// gate fires its probe only when a tracer has set the semaphore, and
// counts how often it did.
static void gate(void) {
	if (__builtin_expect(myprov_gate_semaphore, 0)) {
		fired++;
		STAP_PROBE1(myprov, gate, fired);
	}
}
// main calls gate every millisecond until a tracer has set the semaphore
// and cleared it again (the kernel does both, as the tracer attaches and
// detaches; 10 s at most), then once more.
int main(void) {
	struct timespec ms = {0, 1000000};
	gate();
	printf("before: fired %d\n", fired);
	fflush(stdout);
	int seen = 0;
	for (int i = 0; i < 10000; i++) {
		unsigned short sem = myprov_gate_semaphore;
		if (sem)
			seen = 1;
		else if (seen)
			break;
		gate();
		nanosleep(&ms, 0);
	}
	int n = fired;
	gate();
	printf("while attached: %s; after: %s\n", n > 0 ? "fired" : "never fired", fired == n ? "off" : "on");
	return 0;
}
`,
}

// buildUSDTProgs builds tick (with libsdt.so) and gate into one directory
// for every test of the run.
func buildUSDTProgs(t *testing.T) string {
	t.Helper()
	sdttest.Require(t)
	usdtProgs.once.Do(func() {
		// Beside the dstar binary: TestMain removes that directory.
		dir := filepath.Join(filepath.Dir(dstarBin), "usdt")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		sdttest.Build(t, dir, "libsdt.so", map[string]string{"lib.c": usdtSrcs["lib.c"]}, "-O2", "-shared", "-fPIC")
		sdttest.Build(t, dir, "tick", map[string]string{"tick.c": usdtSrcs["tick.c"]}, "-O0", "-L.", "-lsdt", "-Wl,-rpath,$ORIGIN")
		sdttest.Build(t, dir, "gate", map[string]string{"gate.c": usdtSrcs["gate.c"]}, "-O1")
		usdtProgs.dir = dir
	})
	if usdtProgs.dir == "" {
		t.Fatal("building the usdt test programs failed earlier")
	}
	return usdtProgs.dir
}

func TestUSDTArgs(t *testing.T) {
	bpftest.Require(t)
	dir := buildUSDTProgs(t)
	before := probeEvents()
	r := dstar(t, 20*time.Second, "-q", "-n", `myprov$target:::tick { @[arg0] = sum(arg1); }
myprov$target:::types { printf("%d %d %d %d|%d %d\n", arg0, arg1, arg2, arg3, args[0], args[1]); }`,
		"-c", dir+"/tick")
	want := "-2 65535 -7 5|-2 65535\n\n" +
		"                1               10\n" +
		"                2               20\n" +
		"                3               30\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("exit %d\nstdout:\n%q\nwant:\n%q\nstderr:\n%s", r.code, r.stdout, want, r.stderr)
	}
	if after := probeEvents(); after != before {
		t.Errorf("uprobe_events changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestUSDTAnyProvider: usdt$target names every provider of the target,
// each probe keeping its own provider's name.
func TestUSDTAnyProvider(t *testing.T) {
	bpftest.Require(t)
	dir := buildUSDTProgs(t)
	r := dstar(t, 20*time.Second, "-q", "-n", `usdt$target:::tick,usdt$target::lib_fn:libcall { @[strtok(probeprov, "0123456789"), probename] = count(); }`,
		"-c", dir+"/tick")
	want := "\n  mylib                                               libcall                                                           3\n" +
		"  myprov                                              tick                                                              3\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("exit %d\nstdout:\n%q\nwant:\n%q\nstderr:\n%s", r.code, r.stdout, want, r.stderr)
	}
}

func TestUSDTSharedLibrary(t *testing.T) {
	bpftest.Require(t)
	dir := buildUSDTProgs(t)
	before := probeEvents()
	// The process is held at exec, before libsdt.so is loaded: the probe
	// is found through the executable's DT_NEEDED and run path.
	r := dstar(t, 20*time.Second, "-q", "-n", `mylib$target:libsdt.so:lib_fn:libcall { @n = count(); @s = sum(args[0]); }`,
		"-c", dir+"/tick")
	want := "\n                3\n                6\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("exit %d\nstdout:\n%q\nwant:\n%q\nstderr:\n%s", r.code, r.stdout, want, r.stderr)
	}
	if after := probeEvents(); after != before {
		t.Errorf("uprobe_events changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// startGate starts the gate program and returns it with its first line
// read, and a reader for the rest of its output.
func startGate(t *testing.T, dir string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(dir + "/gate")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	br := bufio.NewReader(out)
	line, err := br.ReadString('\n')
	if err != nil || line != "before: fired 0\n" {
		t.Fatalf("gate printed %q, %v", line, err)
	}
	return cmd, br
}

func TestUSDTSemaphore(t *testing.T) {
	bpftest.Require(t)
	dir := buildUSDTProgs(t)
	before := probeEvents()
	// gate's probe is off before dstar attaches (the program says so),
	// fires once dstar has attached — the kernel set the semaphore — and
	// is off again once dstar has exited and the kernel cleared it. How
	// many times it fires in between depends on timing; dstar reports the
	// first and exits.
	cmd, out := startGate(t, dir)
	pid := fmt.Sprint(cmd.Process.Pid)
	r := dstar(t, 20*time.Second, "-q", "-p", pid, "-n",
		`myprov$target:::gate /!seen/ { seen = 1; printf("gate %d\n", arg0 > 0); exit(0); }`)
	if want := "gate 1\n\n"; r.code != 0 || r.stdout != want {
		t.Errorf("exit %d\nstdout:\n%q\nwant:\n%q\nstderr:\n%s", r.code, r.stdout, want, r.stderr)
	}
	rest, _ := out.ReadString(0)
	if want := "while attached: fired; after: off\n"; cmd.Wait() != nil || rest != want {
		t.Errorf("gate printed %q, want %q", rest, want)
	}
	if after := probeEvents(); after != before {
		t.Errorf("uprobe_events changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func TestUSDTList(t *testing.T) {
	bpftest.Require(t)
	dir := buildUSDTProgs(t)
	cmd, _ := startGate(t, dir)
	pid := fmt.Sprint(cmd.Process.Pid)
	r := dstar(t, 20*time.Second, "-l", "-n", "myprov$target:::", "-p", pid)
	var want strings.Builder
	want.WriteString("   ID   PROVIDER            MODULE                          FUNCTION NAME\n")
	// The first pid or usdt probe ID (950000) in a fresh dstar.
	fmt.Fprintf(&want, "%5d %10s %17s %33s %s\n", 950000, "myprov"+pid, "gate", "gate", "gate")
	if r.code != 0 || r.stdout != want.String() {
		t.Errorf("exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", r.code, r.stdout, want.String(), r.stderr)
	}
	// Without -p the process is named by its ID.
	r2 := dstar(t, 20*time.Second, "-l", "-n", "myprov"+pid+":gate:gate:gate")
	if r2.code != 0 || r2.stdout != want.String() {
		t.Errorf("exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", r2.code, r2.stdout, want.String(), r2.stderr)
	}
}

// TestUSDTHeader: dstar -h writes DTrace's header for a provider
// definition, whose macros are <sys/sdt.h> probes the usdt provider
// finds: req__start is probe req-start (macro HPROV_REQ_START), and
// HPROV_P_ENABLED() is true exactly while probe p is traced.
func TestUSDTHeader(t *testing.T) {
	bpftest.Require(t)
	sdttest.Require(t)
	dir := t.TempDir()
	prov := filepath.Join(dir, "hprov.d")
	if err := os.WriteFile(prov, []byte(`provider hprov {
	probe req__start(int, string);
	probe gated(long x);
	probe untraced();
};
`), 0o644); err != nil {
		t.Fatal(err)
	}
	// Without -o the header is named after the script, in the current
	// directory (as dtrace names it).
	cmd := exec.Command(dstarBin, "-h", "-s", prov)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dstar -h: %v\n%s", err, out)
	}
	// The string is on the stack: a literal's page may not be mapped in
	// yet when the probe reads it.
	path := sdttest.Build(t, dir, "hprog", map[string]string{"main.c": `#include "hprov.h"
int main(void) {
	volatile char s[] = "hi";
	HPROV_REQ_START(7, (char *)s);
	if (HPROV_GATED_ENABLED())
		HPROV_GATED(-3);
	if (HPROV_UNTRACED_ENABLED())
		HPROV_GATED(99);
	return 0;
}
`}, "-O2")
	r := dstar(t, 20*time.Second, "-q", "-n", `hprov$target:::req-start { printf("%s %d %s\n", probename, arg0, copyinstr(arg1)); }
hprov$target:::gated { printf("gated %d\n", arg0); }`, "-c", path)
	want := "req-start 7 hi\ngated -3\n\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("exit %d\nstdout:\n%q\nwant:\n%q\nstderr:\n%s", r.code, r.stdout, want, r.stderr)
	}
}

// TestHeaderUsage: -h needs a script, and help is --help.
func TestHeaderUsage(t *testing.T) {
	r := dstar(t, 20*time.Second, "-h")
	if r.code != 2 || !strings.Contains(r.stderr, "-h requires one or more scripts or enabling options") {
		t.Errorf("-h alone: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = dstar(t, 20*time.Second, "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "-h  generate a header file") {
		t.Errorf("--help: exit %d, stdout:\n%s", r.code, r.stdout)
	}
}
