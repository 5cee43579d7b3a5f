package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
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

// TestStackPrintf: printf's %k takes a stack( ) and prints it as the
// action does, and printa's %k a stack key.
func TestStackPrintf(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-q", "-c", "cat /dev/null", "-n",
		`syscall::openat:entry /pid == $target/ { printf("<%k>", stack(2)); @[stack(2)] = count(); exit(0); }
		END { printa("[%k]%@d\n", @); }`)
	frame := " {14}vmlinux`[\\w.]+(?:\\+0x[0-9a-f]+)?\n"
	re := regexp.MustCompile("^<\n(" + frame + frame + ")>\\[\n(" + frame + frame + ")\\]1\n\n$")
	m := re.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if m[1] != m[2] {
		t.Errorf("printf's stack\n%s\nis not printa's\n%s", m[1], m[2])
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

// userChain matches the stack of getppid called by leaf, called by
// middle, top and main, of the program prog, whole: from libc's
// __libc_start_call_main to prog's _start; and its count.
func userChain(prog string) *regexp.Regexp {
	f := func(mod, fn string) string { return " {14}" + regexp.QuoteMeta(mod) + "`" + fn + "\\+0x[0-9a-f]+\n" }
	return regexp.MustCompile("(?m)^" + f("libc.so.6", "getppid") + f(prog, "leaf") + f(prog, "middle") +
		f(prog, "top") + f(prog, "main") + f("libc.so.6", "__libc_start_call_main") +
		f("libc.so.6", "__libc_start_main") + f(prog, "_start") + " +(\\d+)\n")
}

// sumCounts adds the counts of every match of re (its first group).
func sumCounts(re *regexp.Regexp, out string) int {
	n := 0
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		k, _ := strconv.Atoi(m[1])
		n += k
	}
	return n
}

// TestUserStack: ustack() in a C program resolves its functions, callee
// first: leaf (which keeps no frame: its caller is found by its
// call-frame information, not by a frame pointer) is called by middle,
// middle by top, top by main, and libc's frames by libc's symbols, down to
// the program's _start. The -c command's unwind tables are loaded before
// it runs, so every one of its twenty stacks is whole.
func TestUserStack(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	prog := bpftest.BuildC(t, dir, "chain", chainSrc, "-O1", "-fno-omit-frame-pointer")
	r := dstar(t, 30*time.Second, "-q", "-c", prog, "-n",
		`syscall::getppid:entry /pid == $target/ { @[ustack()] = count(); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if n := sumCounts(userChain("chain"), r.stdout); n != 20 {
		t.Errorf("%d whole getppid ← leaf ← middle ← top ← main stacks, want 20:\n%s", n, r.stdout)
	}
}

// TestUserStackShortLived: a -c program that is gone within a millisecond
// still has every frame resolved, libc's included: dstar holds it at its
// exit and reads its mappings there, long after a poll of
// /proc/PID/maps would have missed the libraries it loaded.
func TestUserStackShortLived(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	prog := bpftest.BuildC(t, dir, "brief", `
#include <unistd.h>
__attribute__((noinline)) int leaf(void) { return getppid() + 1; }
__attribute__((noinline)) int middle(void) { return leaf() + 1; }
__attribute__((noinline)) int top(void) { return middle() + 1; }
int main(void) { int n = 0; for (int i = 0; i < 3; i++) n += top(); return n == 0; }
`, "-O1", "-fno-omit-frame-pointer")
	r := dstar(t, 30*time.Second, "-q", "-c", prog, "-n",
		`syscall::getppid:entry /pid == $target/ { @[ustack()] = count(); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if n := sumCounts(userChain("brief"), r.stdout); n != 3 {
		t.Errorf("%d whole getppid ← leaf ← middle ← top ← main stacks, want 3:\n%s", n, r.stdout)
	}
	// Nothing is left as a bare address: every frame is in a module.
	if bare := regexp.MustCompile("(?m)^ +0x[0-9a-f]+$").FindString(r.stdout); bare != "" {
		t.Errorf("unresolved frame %q:\n%s", bare, r.stdout)
	}

	// The same program run twice by the -c process, a shell: the
	// children's mappings are followed too. Their unwind tables are
	// asked for when their first stack is walked, and a walk before
	// they are loaded (a child this brief may be gone by then) ends
	// with a marker after its first frame: each stack is whole or
	// marked, never wrong.
	r = dstar(t, 30*time.Second, "-q", "-c", "sh -c '"+prog+"; "+prog+"; true'", "-n",
		`syscall::getppid:entry /ppid == $target/ { @[ustack()] = count(); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	cut := regexp.MustCompile("(?m)^ {14}libc\\.so\\.6`getppid\\+0x[0-9a-f]+\n {14}\\[stack cut: no mapping\\]\n +(\\d+)\n")
	whole, marked := sumCounts(userChain("brief"), r.stdout), sumCounts(cut, r.stdout)
	if whole+marked != 6 {
		t.Errorf("children: %d whole and %d marked getppid stacks, want 6 in all:\n%s", whole, marked, r.stdout)
	}
	if bare := regexp.MustCompile("(?m)^ +0x[0-9a-f]+$").FindString(r.stdout); bare != "" {
		t.Errorf("children: unresolved frame %q:\n%s", bare, r.stdout)
	}
}

// TestUserStackSignal: a stack taken in a signal handler goes on through
// the kernel's signal frame (libc's __restore_rt, whose call-frame
// information says where the interrupted registers are) to the code the
// signal interrupted, raise called by worker, and down to _start.
func TestUserStackSignal(t *testing.T) {
	bpftest.Require(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("user stacks are walked by call-frame information on x86-64 only")
	}
	prog := bpftest.BuildC(t, t.TempDir(), "sig", `
#include <signal.h>
#include <unistd.h>
static volatile int sink;
__attribute__((noinline)) void handler(int sig) { sink += getppid(); }
__attribute__((noinline)) int worker(int i) { raise(SIGUSR1); return i + 1; }
int main(void) { signal(SIGUSR1, handler); int n = 0; for (int i = 0; i < 5; i++) n += worker(i); return n == 0; }
`, "-O2", "-fomit-frame-pointer")
	r := dstar(t, 30*time.Second, "-q", "-c", prog, "-n",
		`syscall::getppid:entry /pid == $target/ { @[ustack()] = count(); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	f := func(mod, fn string) string {
		return " {14}" + regexp.QuoteMeta(mod) + "`" + fn + "(?:\\+0x[0-9a-f]+)?\n"
	}
	re := regexp.MustCompile("(?m)^" + f("libc.so.6", "getppid") + f("sig", "handler") + f("libc.so.6", "__restore_rt") +
		"(?: {14}libc\\.so\\.6`[^\n]*\n)*" + f("sig", "worker") + f("sig", "main") +
		f("libc.so.6", "__libc_start_call_main") + f("libc.so.6", "__libc_start_main") + f("sig", "_start") + " +5\n")
	if !re.MatchString(r.stdout) {
		t.Errorf("no getppid ← handler ← signal frame ← ... ← worker ← main stack, 5 times:\n%s", r.stdout)
	}
}

// goChain is a Go program whose time goes to main.inner, called by
// main.outer, called by main.main. inner keeps a frame of its own (its
// array lives on the stack) so that it saves the frame pointer: a
// frameless leaf would hide its caller from the kernel's frame-pointer
// walk, which starts at the leaf's caller's frame.
const goChain = `package main

import "time"

var sink int

//go:noinline
func inner(n int) int {
	var a [16]int
	for i := 0; i < n; i++ {
		a[i&15] += i * i
	}
	return a[n&15]
}

//go:noinline
func outer(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		sink += inner(100000)
	}
}

func main() { outer(300 * time.Millisecond) }
`

// TestGoUserStack: a profile of a Go program names its functions from
// the Go symbol table, callee first: inner above outer above main, in a
// binary with .symtab and in ones stripped to their .gopclntab (-s, and
// -s -w, without DWARF either).
func TestGoUserStack(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	for _, tc := range []struct{ name, ldflags string }{{"gofull", ""}, {"gostripped", "-s"}, {"gostripw", "-s -w"}} {
		t.Run(tc.name, func(t *testing.T) {
			prog := bpftest.BuildGo(t, dir, tc.name, goChain, "-ldflags="+tc.ldflags)
			r := dstar(t, 60*time.Second, "-q", "-c", prog, "-n",
				`profile-997 /pid == $target/ { @[ustack()] = count(); }`)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			re := regexp.MustCompile("(?m)^ {14}" + tc.name + "`main\\.inner\\+0x[0-9a-f]+\n {14}" +
				tc.name + "`main\\.outer\\+0x[0-9a-f]+\n {14}" + tc.name + "`main\\.main\\+0x[0-9a-f]+\n {14}" +
				tc.name + "`runtime\\.main\\+0x[0-9a-f]+\n(?: {14}.*\n)* +(\\d+)\n")
			ms := re.FindAllStringSubmatch(r.stdout, -1)
			n := 0
			for _, m := range ms {
				k, _ := strconv.Atoi(m[1])
				n += k
			}
			// 300 ms at 997 Hz: some 300 samples, nearly all in inner.
			if n < 50 {
				t.Errorf("%d samples in main.inner ← main.outer ← main.main:\n%s", n, r.stdout)
			}
		})
	}
}

// TestGoStrippedUserStack: a Go program stripped of everything a strip
// can take (-ldflags='-s -w': no .symtab, no DWARF), and a copy stripped
// of its section headers as well, has its frames named from its
// .gopclntab: main's functions and the runtime's.
func TestGoStrippedUserStack(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	prog := bpftest.BuildGo(t, dir, "gosw", goChain, "-ldflags=-s -w")
	b, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	noshdr := filepath.Join(dir, "gonoshdr")
	if err := os.WriteFile(noshdr, b, 0o755); err != nil {
		t.Fatal(err)
	}
	bpftest.StripSectionHeaders(t, noshdr)
	for _, p := range []string{prog, noshdr} {
		name := filepath.Base(p)
		t.Run(name, func(t *testing.T) {
			r := dstar(t, 60*time.Second, "-q", "-c", p, "-n",
				`profile-997 /pid == $target/ { @[ustack()] = count(); }`)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			// The walk without DWARF may miss a frame above a leaf: only
			// the names are checked, not the whole chain.
			re := regexp.MustCompile("(?m)^ {14}" + name + "`main\\.inner\\+0x[0-9a-f]+\n(?: {14}.*\n)*? {14}" +
				name + "`runtime\\.main\\+0x[0-9a-f]+\n(?: {14}.*\n)* +(\\d+)\n")
			n := 0
			for _, m := range re.FindAllStringSubmatch(r.stdout, -1) {
				k, _ := strconv.Atoi(m[1])
				n += k
			}
			if n < 50 {
				t.Errorf("%d samples in main.inner ... runtime.main:\n%s", n, r.stdout)
			}
		})
	}
}

// chainSrc calls main → top → middle → leaf → getppid twenty times, 20 ms
// apart: long enough for its mappings to be read while it lives.
const chainSrc = `
#include <unistd.h>
__attribute__((noinline)) int leaf(void) { return getppid() + 1; }
__attribute__((noinline)) int middle(void) { return leaf() + 1; }
__attribute__((noinline)) int top(void) { return middle() + 1; }
int main(void) {
	int n = 0;
	for (int i = 0; i < 20; i++) { n += top(); usleep(20000); }
	return n == 0;
}
`

// jitSrc calls getppid from code it wrote into an anonymous executable
// page, which no file maps, every 5 ms.
const jitSrc = `
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
int main(void) {
	/* mov $110, %eax (getppid); syscall; ret */
	static const unsigned char code[] = {0xb8, 110, 0, 0, 0, 0x0f, 0x05, 0xc3};
	void *page = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memcpy(page, code, sizeof code);
	for (;;) { ((long (*)(void))page)(); usleep(5000); }
}
`

// TestUserStackCut: a user stack whose code no file maps ends, after its
// first frame, in a marker frame that says so, and the session counts
// it (s.stats().ustack_cuts): every stack of a program calling from such
// code, few of one whose stacks are whole (only those walked before its
// unwind tables were loaded, a process running before tracing began).
func TestUserStackCut(t *testing.T) {
	bpftest.Require(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("the traced program is x86-64 machine code")
	}
	jit := startChain(t, "jit", jitSrc)
	whole := startChain(t, "chain", `
#include <unistd.h>
__attribute__((noinline)) int leaf(void) { return getppid() + 1; }
int main(void) { for (;;) { leaf(); usleep(5000); } }
`)
	path := writeScript(t, fmt.Sprintf(`
for pid in [%d, %d]:
    s = dtrace.session(quiet = True)
    s.attach('syscall::getppid:entry /pid == %%d/ { @[ustack()] = count(); }' %% pid)
    s.run(0.5)
    # Tracing goes on while the aggregation is read: the cuts counted
    # before and after it bound those in it.
    n, ends, before = 0, {}, s.stats().ustack_cuts
    for k, v in s.aggregations().get("@", {}).items():
        n += v
        ends[k[0][-1].split("+")[0]] = True
    print(sorted(ends.keys()), n, before, s.stats().ustack_cuts)
    s.close()
`, jit, whole))
	r := dstar(t, 30*time.Second, "run", path)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var n, before, cuts [2]int
	if len(lines) != 2 {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	for i, want := range []string{`["[stack cut: no mapping]"]`, "chain`_start"} {
		f := strings.Fields(lines[i])
		if len(f) < 4 || !strings.Contains(lines[i], want) {
			t.Fatalf("line %d: %q, want stacks ending %s", i+1, lines[i], want)
		}
		n[i], _ = strconv.Atoi(f[len(f)-3])
		before[i], _ = strconv.Atoi(f[len(f)-2])
		cuts[i], _ = strconv.Atoi(f[len(f)-1])
	}
	if n[0] < 20 || n[0] < before[0] || n[0] > cuts[0] {
		t.Errorf("jit: %d stacks, %d to %d counted cut; want them all cut", n[0], before[0], cuts[0])
	}
	if n[1] < 20 || cuts[1] > n[1]/2 {
		t.Errorf("chain: %d stacks, %d counted cut; want most whole", n[1], cuts[1])
	}
}
