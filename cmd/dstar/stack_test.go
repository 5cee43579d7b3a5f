package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// TestKernelStack: stack() at a system call's entry prints the kernel's
// stack from where the probe fired (not dstar's own program) down to the
// system call entry point, one frame to a line, indented as dtrace does.
func TestKernelStack(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-c", "cat /dev/null", "-n",
		`syscall::openat:entry /pid == $target/ { stack(); stack(2); exit(0); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// The probe line, then the full stack, then the two-frame one.
	re := regexp.MustCompile("(?m)^ +\\d+ +\\d+ +openat:entry \n" +
		"((?: {14}vmlinux`[\\w.]+(?:\\+0x[0-9a-f]+)?\n)+)\n" +
		"( {14}vmlinux`[\\w.]+(?:\\+0x[0-9a-f]+)?\n {14}vmlinux`[\\w.]+(?:\\+0x[0-9a-f]+)?\n)\n")
	m := re.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	full := m[1]
	if !strings.Contains(full, "`entry_SYSCALL_64") || !strings.Contains(full, "`do_syscall_64+0x") {
		t.Errorf("no system call entry in the stack:\n%s", full)
	}
	if strings.Contains(full, "bpf") {
		t.Errorf("the stack starts in the tracing code:\n%s", full)
	}
	if !strings.HasPrefix(full, m[2]) {
		t.Errorf("stack(2) is not the first two frames of stack():\n%s\nvs\n%s", m[2], full)
	}
}

// TestStackKey: stacks as aggregation keys, printed as dtrace prints
// them: each stack after an empty line, then the count on a line of its
// own.
func TestStackKey(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-q", "-c", "cat /dev/null /dev/null /dev/null", "-n",
		`syscall::openat:entry /pid == $target/ { @[stack()] = count(); @n = count(); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	re := regexp.MustCompile("\n\n((?: {14}vmlinux`[\\w.]+(?:\\+0x[0-9a-f]+)?\n)+) +(\\d+)\n")
	ms := re.FindAllStringSubmatch(r.stdout, -1)
	if len(ms) == 0 {
		t.Fatalf("no stack-keyed rows:\n%s", r.stdout)
	}
	total := 0
	for _, m := range ms {
		n, _ := strconv.Atoi(m[2])
		total += n
	}
	want := regexp.MustCompile(`(?m)^ +(\d+)$`).FindAllStringSubmatch(r.stdout, -1)
	if len(want) == 0 || want[len(want)-1][1] != strconv.Itoa(total) {
		t.Errorf("stack rows add to %d; stdout:\n%s", total, r.stdout)
	}
}

// TestUserStack: ustack() in a C program resolves its functions, callee
// first: middle is called by top, top by main; and libc's frames by libc's
// symbols. (leaf, which calls libc's getppid, is not there: getppid makes
// no frame of its own, and the kernel walks frame pointers, so the walk
// goes from getppid's address to the return address in leaf's frame,
// which is in middle.) The program runs long enough for its mappings to
// be read after its libraries are loaded.
func TestUserStack(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	prog := bpftest.BuildC(t, dir, "chain", `
#include <unistd.h>
__attribute__((noinline)) int leaf(void) { return getppid() + 1; }
__attribute__((noinline)) int middle(void) { return leaf() + 1; }
__attribute__((noinline)) int top(void) { return middle() + 1; }
int main(void) {
	int n = 0;
	for (int i = 0; i < 20; i++) { n += top(); usleep(20000); }
	return n == 0;
}
`, "-O1", "-fno-omit-frame-pointer")
	r := dstar(t, 30*time.Second, "-q", "-c", prog, "-n",
		`syscall::getppid:entry /pid == $target/ { @[ustack()] = count(); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	re := regexp.MustCompile("(?m)^ {14}libc\\.so\\.6`getppid\\+0x[0-9a-f]+\n {14}chain`middle\\+0x[0-9a-f]+\n {14}chain`top\\+0x[0-9a-f]+\n {14}chain`main\\+0x[0-9a-f]+\n")
	if !re.MatchString(r.stdout) {
		t.Errorf("no getppid → middle → top → main stack:\n%s", r.stdout)
	}
}
