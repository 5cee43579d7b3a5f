package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// vdsoSrc spends its time in clock_gettime, which runs in the kernel's
// vDSO: code no file maps.
const vdsoSrc = `
#include <time.h>
__attribute__((noinline)) long spin(void) {
	struct timespec ts;
	long s = 0;
	for (long i = 0; i < 20000000; i++) { clock_gettime(CLOCK_MONOTONIC, &ts); s += ts.tv_nsec; }
	return s;
}
int main(void) { return spin() == 42; }
`

// TestUStackThroughVDSO: samples taken in the vDSO are named there
// ([vdso]`clock_gettime, as perf names them) and unwound through it to
// main and _start, from the vDSO's own call-frame information, not cut
// at it ("no mapping").
func TestUStackThroughVDSO(t *testing.T) {
	bpftest.Require(t)
	prog := bpftest.BuildC(t, t.TempDir(), "vd", vdsoSrc, "-O2")
	r := dstar(t, 60*time.Second, "-q", "-c", prog, "-n", `profile-997 /pid == $target/ { @[ustack()] = count(); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var inVDSO, whole, named int
	for _, block := range strings.Split(strings.TrimSpace(r.stdout), "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		n, err := strconv.Atoi(strings.TrimSpace(lines[len(lines)-1]))
		if err != nil || len(lines) < 2 {
			continue
		}
		frames := strings.Join(lines[:len(lines)-1], "\n")
		if !strings.Contains(frames, "[vdso]`") {
			continue
		}
		inVDSO += n
		if strings.Contains(frames, "[vdso]`clock_gettime") || strings.Contains(frames, "[vdso]`__vdso_clock_gettime") {
			named += n
		}
		if strings.Contains(frames, "vd`spin") && strings.Contains(frames, "vd`main") && strings.Contains(frames, "vd`_start") {
			whole += n
		}
	}
	if inVDSO == 0 {
		if strings.Contains(r.stdout, "no mapping") {
			t.Fatalf("stacks cut at the vDSO:\n%s", r.stdout)
		}
		t.Skipf("no sample in the vDSO: clock_gettime does not run there on this clock source\n%s", r.stdout)
	}
	if whole*100 < inVDSO*95 {
		t.Errorf("%d of %d samples in the vDSO unwound to vd`main and _start:\n%s", whole, inVDSO, r.stdout)
	}
	if named*100 < inVDSO*80 {
		t.Errorf("%d of %d samples in the vDSO name clock_gettime:\n%s", named, inVDSO, r.stdout)
	}
	t.Logf("%d samples in the vDSO, %d unwound to _start, %d naming clock_gettime", inVDSO, whole, named)
}

// TestUStackStrippedFunctions: in a stripped program, a frame no symbol
// names is known by where its function begins (from the FDE describing
// it) and its offset, "chain`0x55d0c0de1139+0x5", so that the samples of
// one function fold together; the names nm gives the unstripped build
// sit at those starts.
func TestUStackStrippedFunctions(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	prog := bpftest.BuildC(t, dir, "chain", chainSrc, "-O2", "-fomit-frame-pointer", "-fno-pie", "-no-pie")
	nm, err := exec.Command("nm", prog).Output()
	if err != nil {
		t.Skipf("nm: %v", err)
	}
	want := map[string]string{}
	for _, line := range strings.Split(string(nm), "\n") {
		if f := strings.Fields(line); len(f) == 3 && (f[2] == "leaf" || f[2] == "middle" || f[2] == "top" || f[2] == "main") {
			addr, _ := strconv.ParseUint(f[0], 16, 64)
			want[f[2]] = "chain`0x" + strconv.FormatUint(addr, 16)
		}
	}
	if out, err := exec.Command("strip", prog).CombinedOutput(); err != nil {
		t.Skipf("strip: %v\n%s", err, out)
	}
	r := dstar(t, 30*time.Second, "-q", "-c", prog, "-n", `syscall::getppid:entry /pid == $target/ { @[ustack()] = count(); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, fn := range []string{"leaf", "middle", "top", "main"} {
		w, ok := want[fn]
		if !ok {
			t.Fatalf("nm gave no %s:\n%s", fn, nm)
		}
		if !regexp.MustCompile("(?m)^ +" + regexp.QuoteMeta(w) + `\+0x[0-9a-f]+$`).MatchString(r.stdout) {
			t.Errorf("no frame of %s (%s+0x...):\n%s", fn, w, r.stdout)
		}
	}
}

// TestUStackDeletedBinary: a program whose file was deleted while it runs
// (upgraded by its package manager, or run from a memfd) is unwound and
// named through its mappings: whole stacks, by function, as before.
func TestUStackDeletedBinary(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	prog := bpftest.BuildC(t, dir, "gone", `
#include <unistd.h>
__attribute__((noinline)) int leaf(void) { return getppid() + 1; }
__attribute__((noinline)) int middle(void) { return leaf() + 1; }
__attribute__((noinline)) int top(void) { return middle() + 1; }
int main(void) { for (;;) { top(); usleep(2000); } }
`, "-O2", "-fomit-frame-pointer")
	cmd := exec.Command(prog)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	// Deleted once it runs: its mappings say "(deleted)".
	if err := os.Remove(prog); err != nil {
		t.Fatal(err)
	}
	r := dstar(t, 30*time.Second, "-q", "-p", strconv.Itoa(cmd.Process.Pid), "-n",
		`syscall::getppid:entry /pid == $target/ { @[ustack()] = count(); } tick-1s { exit(0); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	whole := regexp.MustCompile("(?m)^ +gone`leaf\\+0x[0-9a-f]+\n +gone`middle\\+0x[0-9a-f]+\n +gone`top\\+0x[0-9a-f]+\n +gone`main\\+0x[0-9a-f]+\n(?: +libc.so.6`.*\n)+ +gone`_start\\+0x[0-9a-f]+\n +(\\d+)$")
	m := whole.FindStringSubmatch(r.stdout)
	if m == nil || atoi(m[1]) < 100 {
		t.Errorf("want most of the calls' stacks whole, leaf to _start, named in the deleted file:\n%s%s", r.stdout, r.stderr)
	}
}
