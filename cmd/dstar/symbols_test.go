package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// TestKernelCaller: at a system call's entry, caller is the first frame
// stack( ) prints, stackdepth how many it prints, and func( ), sym( ) and
// mod( ) name caller as dtrace does: module`function, and the module;
// printf's %a names it with its offset, as stack( ) does.
func TestKernelCaller(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-q", "-c", "cat /dev/null", "-n",
		`syscall::openat:entry /pid == $target/ {
			stack(); printf("depth=%d\n%a\n", stackdepth, caller);
			func(caller); printf("\n"); sym(caller); printf("\n"); mod(caller); printf("\n");
			@[func(caller)] = count(); @deep[stackdepth > 2] = count(); exit(0);
		}`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	m := regexp.MustCompile("^\n((?: {14}\\S+\n)+)depth=(\\d+)\n(\\S+)\n  (\\S+) +\n  (\\S+) +\n  (\\S+) +\n").FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("stdout:\n%q", r.stdout)
	}
	frames := strings.Fields(m[1])
	if depth, _ := strconv.Atoi(m[2]); depth != len(frames) {
		t.Errorf("stackdepth %d, but stack( ) prints %d frames:\n%s", depth, len(frames), m[1])
	}
	if m[3] != frames[0] {
		t.Errorf("printf(\"%%a\", caller) = %q, want %q (stack( )'s first frame)", m[3], frames[0])
	}
	first, _, _ := strings.Cut(frames[0], "+")
	if m[4] != first || m[5] != first {
		t.Errorf("func(caller) %q and sym(caller) %q, want %q", m[4], m[5], first)
	}
	if m[6] != "vmlinux" {
		t.Errorf("mod(caller) = %q, want vmlinux", m[6])
	}
	// As a key, padded to 50 columns as dtrace pads it; depth > 2 holds.
	if !regexp.MustCompile("(?m)^  " + regexp.QuoteMeta(first) + " {2,}1$").MatchString(r.stdout) {
		t.Errorf("no @[func(caller)] row for %s:\n%s", first, r.stdout)
	}
	if !regexp.MustCompile(`(?m)^ +1 +1$`).MatchString(r.stdout) {
		t.Errorf("stackdepth > 2 does not hold:\n%s", r.stdout)
	}
}

// TestUserCaller: at a user function's entry, ucaller is where it will
// return to, in the function that called it: ufunc( ) names that
// function, uaddr( ) the place in it, umod( ) the program; every call
// made by middle counts as one row whatever the offset. printf's %A
// names the place as uaddr( ) does.
func TestUserCaller(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	prog := bpftest.BuildC(t, dir, "callers", `
#include <unistd.h>
__attribute__((noinline)) int leaf(int x) { return getppid() + x; }
__attribute__((noinline)) int middle(void) { return leaf(1) + leaf(2); }
__attribute__((noinline)) int top(void) { return middle() + leaf(3); }
int main(void) {
	int n = 0;
	for (int i = 0; i < 10; i++) { n += top(); usleep(20000); }
	return n == 0;
}
`, "-O1", "-fno-omit-frame-pointer")
	r := dstar(t, 30*time.Second, "-q", "-c", prog, "-n",
		`pid$target:a.out:leaf:entry {
			@f[ufunc(ucaller)] = count(); @a[uaddr(ucaller)] = count(); @m[umod(ucaller)] = count();
			@d[ustackdepth >= 3] = count(); printf("%A\n", ucaller);
		}`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		"(?m)^  callers`middle {2,}20$",
		"(?m)^  callers`top {2,}10$",
		"(?m)^  callers`middle\\+0x[0-9a-f]+ {2,}10$",
		"(?m)^  callers`top\\+0x[0-9a-f]+ {2,}10$",
		"(?m)^  callers {2,}30$",
		"(?m)^ +1 +30$",
		"(?m)^callers`middle\\+0x[0-9a-f]+$",
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("no line matching %s:\n%s", want, r.stdout)
		}
	}
}

// TestStackDepthTracing: however the program is run (a raw tracepoint,
// tp_btf, a perf tracepoint, a system call's tracepoint (served on the raw
// tracepoint), or one with a second handler, which
// brings in its iterator's frame), stackdepth counts the frames stack( )
// prints and caller is the first of them.
func TestStackDepthTracing(t *testing.T) {
	bpftest.Require(t)
	const clause = ` /pid == $target/ { stack(); printf("depth=%d\n%a\n", stackdepth, caller); exit(0); }`
	for _, tc := range []struct{ name, script string }{
		{"raw tracepoint", `syscall::openat:entry` + clause},
		{"two handlers", `syscall::openat:entry` + clause + ` sdt:syscalls::sys_enter_openat /pid == $target/ { @n = count(); }`},
		{"tp_btf", `rawtp:raw_syscalls::sys_enter` + clause},
		{"tracepoint", `sdt:syscalls::sys_enter_openat` + clause},
		// Not a system call's: a tracepoint of its own, on a perf event
		// when its record is read, else on a raw tracepoint.
		{"perf tracepoint", `sdt:sched::sched_process_exit /args->pid == pid/ { trace(0); }` + ` sdt:sched::sched_process_exit` + clause},
		{"tracepoint reading no field", `sdt:sched::sched_process_exit` + clause},
		// A second program on sys_enter puts its iterator,
		// __traceiter_sys_enter, between the system call and the
		// tracepoint's handler.
		{"tracepoint beside sys_enter", `sdt:syscalls::sys_enter_openat` + clause + ` rawtp:raw_syscalls::sys_enter /pid == $target/ { @n = count(); }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := dstar(t, 20*time.Second, "-q", "-c", "cat /dev/null", "-n", tc.script)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			m := regexp.MustCompile("\n((?: {14}\\S+\n)+)depth=(\\d+)\n(\\S+)\n").FindStringSubmatch(r.stdout)
			if m == nil {
				t.Fatalf("stdout:\n%q", r.stdout)
			}
			frames := strings.Fields(m[1])
			if depth, _ := strconv.Atoi(m[2]); depth != len(frames) || m[3] != frames[0] {
				t.Errorf("stackdepth %d and caller %s, but stack( ) prints %d frames:\n%s", depth, m[3], len(frames), m[1])
			}
		})
	}
}
