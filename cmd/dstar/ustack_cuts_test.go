package main

import (
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// cutsSrc calls getppid 50 times from code no file maps (a marker frame
// "no mapping" after the first), then 10 times at the bottom of a
// recursion 200 calls deep, deeper than the walker goes (127 frames).
const cutsSrc = `
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
__attribute__((noinline)) long deep(int n) { if (n == 0) return getppid(); return deep(n - 1) + 1; }
int main(void) {
	/* mov $110, %eax (getppid); syscall; ret */
	static const unsigned char code[] = {0xb8, 110, 0, 0, 0, 0x0f, 0x05, 0xc3};
	void *page = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memcpy(page, code, sizeof code);
	for (int i = 0; i < 50; i++) ((long (*)(void))page)();
	long s = 0;
	for (int i = 0; i < 10; i++) s += deep(200);
	return s == 0;
}
`

// firstLine is the first line of out that contains s.
func firstLine(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// TestUserStackCutsReported: user stacks cut short are counted, by
// reason, on stderr at exit as drops are: every walk ending in a "no
// mapping" marker (ustack(127)'s, ustack(5)'s and ucaller's: three an
// event), every stack deeper than the walker goes (127 frames); not the
// walks that stopped at the frames asked for (ustack(5)'s, ucaller's of
// the deep stack, as dtrace's ustackframes truncates silently).
func TestUserStackCutsReported(t *testing.T) {
	bpftest.Require(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("the traced program is x86-64 machine code")
	}
	prog := bpftest.BuildC(t, t.TempDir(), "cuts", cutsSrc, "-O0")
	r := dstar(t, 30*time.Second, "-q", "-x", "outputformat=json", "-c", prog, "-n",
		`syscall::getppid:entry /pid == $target/ { @[ustack(127)] = count(); @five[ustack(5)] = count(); @caller[ucaller] = count(); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	marked, deep := 0, 0
	for _, s := range dstarStacks(t, firstLine(r.stdout, `"name":"@"`)) {
		switch n := len(s.stack); {
		case n == 2 && s.stack[1].function == "[stack cut: no mapping]":
			marked += s.count
		case n == 127 && s.stack[0].function == "getppid":
			deep += s.count
		}
	}
	if marked != 50 || deep != 10 {
		t.Errorf("%d stacks marked cut (no mapping), %d 127 frames deep; want 50 and 10:\n%s", marked, deep, r.stdout)
	}
	for reason, want := range map[string]int{"no mapping": 150, "depth": 10} {
		m := regexp.MustCompile(`(?m)^dstar: (\d+) user stacks? cut short: ` + reason + `$`).FindStringSubmatch(r.stderr)
		if m == nil {
			t.Errorf("no count of stacks cut short (%s) on stderr:\n%s", reason, r.stderr)
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n != want {
			t.Errorf("%d stacks reported cut short (%s), want %d", n, reason, want)
		}
	}
	if n := len(regexp.MustCompile(`(?m)cut short`).FindAllString(r.stderr, -1)); n != 2 {
		t.Errorf("%d lines of stacks cut short, want 2 (no mapping, depth):\n%s", n, r.stderr)
	}
}
