package main

import (
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
