package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/elfsym"
	"github.com/dstar-trace/dstar/providers/procmaps"
)

// pidProg is the C program the pid provider is tested on. Its functions
// are called a known number of times with known arguments; given an
// argument it then calls pidt_foo once per byte read from stdin, until
// end of file, so a test can drive it while attached with -p.
const pidProg = `
#include <stdio.h>
#include <unistd.h>
#define NI __attribute__((noinline, noipa))
NI int pidt_foo(int x) { return x * 2; }
NI int pidt_fbar(int x) { return x + 100; }
NI long pidt_six(long a, long b, long c, long d, long e, long f) { return a + b + c + d + e + f; }
#ifdef __x86_64__
/* Known instructions at known offsets: 0 nop, 1 nop, 2 mov %rdi,%rax
   (3 bytes), 5 ret, then at 6 a byte never run that is no instruction
   in 64-bit mode, which the kernel refuses to probe. */
__asm__(".text\n.globl pidt_asm\n.type pidt_asm, @function\npidt_asm:\n"
	"nop\nnop\nmov %rdi, %rax\nret\n.byte 0x06\n.size pidt_asm, .-pidt_asm\n");
long pidt_asm(long);
#else
NI long pidt_asm(long x) { return x; }
#endif
int main(int argc, char **argv) {
	long s = 0;
	for (int i = 0; i < 3; i++) s += pidt_foo(i);
	for (int i = 0; i < 2; i++) s += pidt_fbar(7);
	s += pidt_six(1, 2, 3, 4, 5, 6);
	s += pidt_asm(40) + pidt_asm(2);
	s += getpid() > 0;
	if (argc > 1) {
		int c;
		while ((c = getchar()) != EOF)
			pidt_foo(c);
	}
	printf("sum %ld\n", s);
	return 0;
}
`

// pidGoProg is the Go program: main.work runs five times.
const pidGoProg = `package main

//go:noinline
func work(n int) int { return n * 3 }

func main() {
	s := 0
	for i := 0; i < 5; i++ {
		s += work(i)
	}
	println("sum", s)
}
`

// pidThreadsProg calls pidt_work 100 times on each of four threads.
const pidThreadsProg = `
#include <pthread.h>
__attribute__((noinline, noipa)) int pidt_work(int x) { return x + 1; }
static void *run(void *a) { for (int i = 0; i < 100; i++) pidt_work(i); return 0; }
int main(void) {
	pthread_t t[4];
	for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, run, 0);
	for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
	return 0;
}
`

// pidBuild builds a test program in a temporary directory of t's and
// returns its path: "pie", "nopie", "stripped" (a stripped non-PIE), "go"
// or "go-s" (go build -ldflags=-s).
func pidBuild(t *testing.T, name string) string {
	t.Helper()
	bpftest.Require(t)
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	switch name {
	case "pie":
		bpftest.BuildC(t, dir, name, pidProg, "-O1", "-fPIE", "-pie")
	case "nopie":
		bpftest.BuildC(t, dir, name, pidProg, "-O1", "-no-pie")
	case "stripped":
		full := bpftest.BuildC(t, dir, "stripped-full", pidProg, "-O1", "-no-pie")
		if b, err := exec.Command("strip", "-o", path, full).CombinedOutput(); err != nil {
			t.Fatalf("strip: %v\n%s", err, b)
		}
	case "threads":
		bpftest.BuildC(t, dir, name, pidThreadsProg, "-O1", "-pthread")
	case "go":
		bpftest.BuildGo(t, dir, name, pidGoProg)
	case "go-s":
		bpftest.BuildGo(t, dir, name, pidGoProg, "-ldflags=-s")
	default:
		t.Fatalf("no test program %q", name)
	}
	return path
}

// aggLines returns the non-empty lines of s with runs of blanks made one
// space, sorted: aggregation output compared without its column widths.
func aggLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			out = append(out, strings.Join(f, " "))
		}
	}
	slices.Sort(out)
	return out
}

func wantLines(t *testing.T, r result, want ...string) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	slices.Sort(want)
	if got := aggLines(r.stdout); !slices.Equal(got, want) {
		t.Errorf("got lines %q, want %q\nstderr:\n%s", got, want, r.stderr)
	}
}

func TestPidEntryArgs(t *testing.T) {
	for _, kind := range []string{"pie", "nopie"} {
		t.Run(kind, func(t *testing.T) {
			prog := pidBuild(t, kind)
			r := dstar(t, 20*time.Second, "-q", "-n", `pid$target:a.out:pidt_foo:entry { @[arg0] = count(); }`, "-c", prog)
			wantLines(t, r, "sum 284", "0 1", "1 1", "2 1")
			r = dstar(t, 20*time.Second, "-q", "-n",
				`pid$target:a.out:pidt_six:entry { printf("%s %s %d %d %d %d %d %d\n", probemod, probefunc, arg0, arg1, arg2, arg3, arg4, arg5); }`, "-c", prog)
			wantLines(t, r, "sum 284", kind+" pidt_six 1 2 3 4 5 6")
		})
	}
}

func TestPidReturn(t *testing.T) {
	for _, kind := range []string{"pie", "nopie"} {
		t.Run(kind, func(t *testing.T) {
			prog := pidBuild(t, kind)
			r := dstar(t, 20*time.Second, "-q", "-n", `pid$target:a.out:pidt_foo:return, pid$target:a.out:pidt_fbar:return { @[probefunc, probename, arg1] = count(); }`, "-c", prog)
			wantLines(t, r, "sum 284", "pidt_foo return 0 1", "pidt_foo return 2 1", "pidt_foo return 4 1", "pidt_fbar return 107 2")
		})
	}
}

// TestPidThreads checks that a process's probes fire on all its threads,
// not only on the one whose id is the process's.
func TestPidThreads(t *testing.T) {
	prog := pidBuild(t, "threads")
	r := dstar(t, 20*time.Second, "-q", "-n", `pid$target:a.out:pidt_work:entry { @[tid != pid] = count(); }`, "-c", prog)
	wantLines(t, r, "1 400")
}

func TestPidGlob(t *testing.T) {
	prog := pidBuild(t, "pie")
	r := dstar(t, 20*time.Second, "-q", "-n", `pid$target:a.out:pidt_f*:entry { @[probefunc] = count(); }`, "-c", prog)
	wantLines(t, r, "sum 284", "pidt_foo 3", "pidt_fbar 2")
	// An empty name field is entry and return.
	r = dstar(t, 20*time.Second, "-q", "-n", `pid$target:pie:pidt_fbar: { @[probename] = count(); }`, "-c", prog)
	wantLines(t, r, "sum 284", "entry 2", "return 2")
}

func TestPidLibc(t *testing.T) {
	for _, kind := range []string{"pie", "nopie"} {
		t.Run(kind, func(t *testing.T) {
			prog := pidBuild(t, kind)
			// DTrace's names for a library: its file name, a glob, or
			// the file name up to a '.'.
			for _, mod := range []string{"libc.so.6", "libc*", "libc", "libc.so"} {
				r := dstar(t, 20*time.Second, "-q", "-n", `pid$target:`+mod+`:getpid:entry { @[probemod, probefunc] = count(); }`, "-c", prog)
				wantLines(t, r, "sum 284", "libc.so.6 getpid 1")
			}
		})
	}
}

// TestPidLibcAll probes every function of libc: functions whose first
// instruction the kernel will not probe are skipped with a warning, and
// the rest fire.
func TestPidLibcAll(t *testing.T) {
	prog := pidBuild(t, "pie")
	r := dstar(t, 60*time.Second, "-q", "-n", `pid$target:libc.so.6::entry { @[probefunc] = count(); }`, "-c", prog)
	if r.code != 0 || !regexp.MustCompile(`(?m)^  getpid +1$`).MatchString(r.stdout) {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if l != "" && !strings.HasPrefix(l, "dstar: warning: pid") {
			t.Errorf("stderr: %q", l)
		}
	}
}

// TestPidEvaltime checks where -c holds the command (DTrace's evaltime):
// at exec the dynamic linker has not yet opened libc (its probes are
// found from the executable's DT_NEEDED); at preinit it has, and the linker's opens are past; at main the
// program's own code is about to run. By default every program holds the
// command at exec.
func TestPidEvaltime(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("-c holds commands past exec on amd64 only")
	}
	prog := pidBuild(t, "pie")
	opens := `syscall::openat:entry /pid == $target/ { printf("open %s\n", basename(copyinstr(arg1))); }`
	for _, evaltime := range []string{"exec", ""} {
		args := []string{"-q", "-n", opens, "-c", prog}
		if evaltime != "" {
			args = append([]string{"-x", "evaltime=" + evaltime}, args...)
		}
		r := dstar(t, 20*time.Second, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "open libc.so.6\n") {
			t.Errorf("evaltime=%q: exit %d, stdout %q, stderr %q", evaltime, r.code, r.stdout, r.stderr)
		}
	}
	// At exec libc is not mapped yet, but it is found from the
	// executable's DT_NEEDED, and its uprobe fires once it is mapped.
	r := dstar(t, 20*time.Second, "-q", "-x", "evaltime=exec", "-n", `pid$target:libc.so.6:getpid:entry { @ = count(); }`, "-c", prog)
	wantLines(t, r, "sum 284", "1")
	r = dstar(t, 20*time.Second, "-q", "-x", "evaltime=preinit", "-n", opens, "-c", prog)
	if r.code != 0 || strings.Contains(r.stdout, "open") {
		t.Errorf("evaltime=preinit: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// A pid probe leaves the default at exec: the linker's opens are seen.
	r = dstar(t, 20*time.Second, "-q", "-n", opens+` pid$target:a.out:pidt_six:entry { printf("six\n"); }`, "-c", prog)
	if r.code != 0 || !strings.Contains(r.stdout, "open libc.so.6\n") || !strings.Contains(r.stdout, "six\n") {
		t.Errorf("default with a pid probe: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = dstar(t, 20*time.Second, "-q", "-x", "evaltime=main", "-n", `pid$target:a.out:pidt_foo:entry { @ = count(); }`, "-c", prog)
	wantLines(t, r, "sum 284", "3")
	r = dstar(t, 20*time.Second, "-x", "evaltime=never", "-n", `BEGIN { exit(0); }`)
	if r.code != 1 || r.stderr != "dstar: failed to set -x evaltime: Invalid value for specified option\n" {
		t.Errorf("evaltime=never: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestPidLibraryAtExec checks that, by default, a -c command with a pid
// probe on a library it has not mapped yet stays held at exec: the probe
// fires once libc is mapped, and the dynamic linker's very first system
// call, brk(0), is seen too.
func TestPidLibraryAtExec(t *testing.T) {
	prog := pidBuild(t, "pie")
	r := dstar(t, 20*time.Second, "-q", "-n",
		`pid$target:libc.so.6:getpid:entry { printf("getpid\n"); }
		syscall::brk:entry /pid == $target/ { printf("brk %x\n", arg0); }`, "-c", prog)
	// The program's own output ("sum 284") shares stdout.
	lines := slices.DeleteFunc(strings.Split(r.stdout, "\n"), func(l string) bool { return strings.HasPrefix(l, "sum ") })
	if r.code != 0 || lines[0] != "brk 0" || !slices.Contains(lines, "getpid") {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestPidGo(t *testing.T) {
	for _, kind := range []string{"go", "go-s"} {
		t.Run(kind, func(t *testing.T) {
			prog := pidBuild(t, kind)
			r := dstar(t, 30*time.Second, "-q", "-n", `pid$target:*:main.work:entry { @[probemod, probefunc] = count(); }`, "-c", prog)
			// The program prints to stderr (println).
			wantLines(t, r, kind+" main.work 5")
			// Arguments come from Go's registers.
			r = dstar(t, 30*time.Second, "-q", "-n", `pid$target:a.out:main.work:entry { @[arg0] = count(); }`, "-c", prog)
			wantLines(t, r, "0 1", "1 1", "2 1", "3 1", "4 1")
		})
	}
}

func TestPidOffset(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the test's instruction offsets are x86-64's")
	}
	prog := pidBuild(t, "pie")
	// At offset 5, the ret, mov has copied the argument into rax.
	r := dstar(t, 20*time.Second, "-q", "-n", `pid$target:a.out:pidt_asm:5 { @[probename, arg0] = count(); }`, "-c", prog)
	wantLines(t, r, "sum 284", "5 40 1", "5 2 1")
	// uregs[]: rax, rdi, and the PC, whose low twelve bits are those of
	// the probed instruction's link-time address.
	f, err := elfsym.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	fn, _ := f.Lookup("pidt_asm")
	r = dstar(t, 20*time.Second, "-q", "-n", `pid$target:a.out:pidt_asm:5 { printf("%d %d %d %x\n", uregs[R_RAX], uregs[R_RDI], uregs[R_R0], uregs[R_PC] & 0xfff); }`, "-c", prog)
	pc := fmt.Sprintf("%x", (fn.Value+5)&0xfff)
	wantLines(t, r, "sum 284", "40 40 40 "+pc, "2 2 2 "+pc)
	// On other probes, uregs[] are the registers saved on entering the
	// kernel: a system call's arguments, and a PC in the C library.
	r = dstar(t, 20*time.Second, "-q", "-n", `syscall::write:entry /pid == $target/ { printf("%d %d\n", uregs[R_RDI] == arg0, uregs[R_RDX] == arg2); @[umod(uregs[R_PC])] = count(); }`, "-c", prog)
	wantLines(t, r, "sum 284", "1 1", "libc.so.6 1")
	// As in DTrace, the register is named by a constant.
	r = dstar(t, 20*time.Second, "-q", "-n", `BEGIN { this->i = R_RDX; trace(uregs[this->i]); }`)
	if r.code != 1 || !strings.Contains(r.stderr, "[D_PROTO_ARG]") && !strings.Contains(r.stderr, "uregs[ ] argument #1 is incompatible") {
		t.Errorf("uregs[] by a variable: exit %d, stderr %q", r.code, r.stderr)
	}
	r = dstar(t, 20*time.Second, "-q", "-n", `pid$target:a.out:pidt_asm:7 { }`, "-c", prog)
	if r.code != 1 || !strings.Contains(r.stderr, "offset 0x7 outside of function 'pidt_asm' (7 bytes") {
		t.Errorf("offset past the end: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestPidErrors(t *testing.T) {
	before := probeEvents()
	stripped := pidBuild(t, "stripped")
	r := dstar(t, 20*time.Second, "-n", `pid$target:a.out:pidt_foo:entry`, "-c", stripped)
	if r.code != 1 || !strings.Contains(r.stderr, stripped+" has no symbol table (stripped)") {
		t.Errorf("stripped: exit %d, stderr %q", r.code, r.stderr)
	}
	r = dstar(t, 20*time.Second, "-n", `pid999999999:a.out:pidt_foo:entry`)
	if r.code != 1 || !strings.HasPrefix(r.stderr, "dstar: invalid probe specifier pid999999999:a.out:pidt_foo:entry: failed to grab pid 999999999: No such process\n") {
		t.Errorf("no process: exit %d, stderr %q", r.code, r.stderr)
	}
	// Whether a stripped executable has the function cannot be told.
	r = dstar(t, 20*time.Second, "-n", `pid$target::pidt_foo:entry`, "-c", stripped)
	if r.code != 1 || !strings.Contains(r.stderr, "no function pidt_foo found in pid ") || !strings.Contains(r.stderr, stripped+" has no symbol table (stripped)") {
		t.Errorf("stripped, any module: exit %d, stderr %q", r.code, r.stderr)
	}
	// Go functions get no return probes: uretprobes crash the Go runtime.
	r = dstar(t, 20*time.Second, "-n", `pid$target:a.out:main.work:return`, "-c", pidBuild(t, "go"))
	if r.code != 1 || !strings.Contains(r.stderr, "return probes on Go functions") {
		t.Errorf("Go return: exit %d, stderr %q", r.code, r.stderr)
	}
	r = dstar(t, 20*time.Second, "-p", "999999999", "-n", `pid$target:a.out:pidt_foo:entry`)
	if r.code != 1 || r.stderr != "dstar: failed to grab pid 999999999: No such process\n" {
		t.Errorf("-p of no process: exit %d, stderr %q", r.code, r.stderr)
	}
	prog := pidBuild(t, "pie")
	r = dstar(t, 20*time.Second, "-n", `pid$target:a.out:nosuch:entry`, "-c", prog)
	if r.code != 1 || !strings.HasPrefix(r.stderr, "dstar: invalid probe specifier pid$target:a.out:nosuch:entry: failed to lookup 'nosuch' in module 'a.out'\n") {
		t.Errorf("no such function: exit %d, stderr %q", r.code, r.stderr)
	}
	if after := probeEvents(); after != before {
		t.Errorf("uprobe_events changed from %q to %q", before, after)
	}
}

func TestPidList(t *testing.T) {
	prog := pidBuild(t, "pie")
	r := dstar(t, 20*time.Second, "-l", "-n", `pid$target:a.out:pidt_f*:`, "-c", prog)
	re := regexp.MustCompile(`(?m)^ *\d+ +pid\d+ +pie +(pidt_f\w+) (entry|return)$`)
	var got []string
	for _, m := range re.FindAllStringSubmatch(r.stdout, -1) {
		got = append(got, m[1]+":"+m[2])
	}
	slices.Sort(got)
	if want := []string{"pidt_fbar:entry", "pidt_fbar:return", "pidt_foo:entry", "pidt_foo:return"}; r.code != 0 || !slices.Equal(got, want) {
		t.Errorf("exit %d, listed %q\nstdout:\n%s\nstderr:\n%s", r.code, got, r.stdout, r.stderr)
	}
	// Without -c or -p, $target is 0, as when compiling.
	for _, args := range [][]string{{"-l", "-n", "pid$target:::entry"}, {"-n", "pid$target:::entry"}} {
		r = dstar(t, 20*time.Second, args...)
		if want := "dstar: invalid probe specifier pid$target:::entry: 'pid0' does not contain a valid pid\n"; r.code != 1 || !strings.HasPrefix(r.stderr, want) {
			t.Errorf("%q: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	// Listing everything without a target reads no process: no pid probes.
	r = dstar(t, 20*time.Second, "-l")
	if r.code != 0 || regexp.MustCompile(`(?m)^ *\d+ +pid\d+ `).MatchString(r.stdout) {
		t.Errorf("dstar -l: exit %d, pid probes listed or error %q", r.code, r.stderr)
	}
}

// pidWaiter starts the test program reading its stdin, for -p.
func pidWaiter(t *testing.T, path string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(path, "wait")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	return cmd, in
}

// feedUntil writes b to w every few milliseconds until done is closed:
// the probes fire from the first write after dstar has attached them.
func feedUntil(w io.Writer, b string, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-time.After(20 * time.Millisecond):
			w.Write([]byte(b))
		}
	}
}

func TestPidGrab(t *testing.T) {
	prog, in := pidWaiter(t, pidBuild(t, "pie"))
	cmd := exec.Command(dstarBin, "-q", "-p", fmt.Sprint(prog.Process.Pid), "-n",
		`pid$target:a.out:pidt_foo:entry /arg0 == 65/ { printf("got %c from %d\n", (int)arg0, pid); exit(0); }`)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go feedUntil(in, "A", done)
	err := cmd.Wait()
	close(done)
	if err != nil {
		t.Fatalf("dstar: %v\n%s", err, errb.String())
	}
	if want := fmt.Sprintf("got A from %d\n", prog.Process.Pid); !strings.HasPrefix(out.String(), want) {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
}

// TestPidCleanup checks that no uprobe outlives dstar, after a normal exit
// and after SIGINT: uprobe_events is unchanged, and the probed
// instruction in the traced process is the file's again (a uprobe is a
// breakpoint written into the process's copy of the page).
func TestPidCleanup(t *testing.T) {
	before := probeEvents()
	path := pidBuild(t, "pie")
	prog, in := pidWaiter(t, path)
	pid := prog.Process.Pid

	r := dstar(t, 20*time.Second, "-q", "-n", `pid$target:a.out:pidt_six:entry { }`, "-c", path)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if after := probeEvents(); after != before {
		t.Errorf("after exit: uprobe_events changed from %q to %q", before, after)
	}

	// Enabling fails after the first uprobe is placed: the kernel will not
	// probe the bad byte at pidt_asm+6.
	if runtime.GOARCH == "amd64" {
		r = dstar(t, 20*time.Second, "-q", "-n", `pid$target:a.out:pidt_foo:entry { } pid$target:a.out:pidt_asm:6 { }`, "-c", path)
		if r.code != 1 || !strings.Contains(r.stderr, "the kernel cannot place a uprobe at offset") {
			t.Errorf("bad offset: exit %d, stderr %q", r.code, r.stderr)
		}
		if after := probeEvents(); after != before {
			t.Errorf("after an error: uprobe_events changed from %q to %q", before, after)
		}
	}

	cmd := exec.Command(dstarBin, "-q", "-p", fmt.Sprint(pid), "-n",
		`pid$target:a.out:pidt_foo:entry { printf("fired\n"); }`)
	var out, errb bpftest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go feedUntil(in, "B", done)
	waitFor(t, &out, "fired")
	close(done)
	if !breakpointAt(t, pid, path, "pidt_foo") {
		t.Error("no breakpoint in the process while traced: the check below proves nothing")
	}
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("dstar after SIGINT: %v\n%s", err, errb.String())
	}
	if after := probeEvents(); after != before {
		t.Errorf("after SIGINT: uprobe_events changed from %q to %q", before, after)
	}
	if breakpointAt(t, pid, path, "pidt_foo") {
		t.Error("after SIGINT: the uprobe's breakpoint is still in the process")
	}
}

// breakpointAt reports whether the first byte of function fn of file path,
// as process pid sees it, differs from the file's: a uprobe's breakpoint
// is there.
func breakpointAt(t *testing.T, pid int, path, fn string) bool {
	t.Helper()
	f, err := elfsym.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := f.Lookup(fn)
	if !ok {
		t.Fatalf("no %s in %s", fn, path)
	}
	off, err := f.FileOffset(s.Value)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := procmaps.Read(pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Path != path || off < m.Offset || off >= m.Offset+(m.End-m.Start) {
			continue
		}
		file, _ := os.ReadFile(path)
		mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
		if err != nil {
			t.Fatal(err)
		}
		defer mem.Close()
		b := make([]byte, 1)
		if _, err := mem.ReadAt(b, int64(m.Start+off-m.Offset)); err != nil {
			t.Fatal(err)
		}
		return b[0] != file[off]
	}
	t.Fatalf("%s offset %#x not mapped in %d", path, off, pid)
	return false
}

// TestFlowIndent checks -F's layout: entry probes indent what follows and
// return probes take it back, syscall's with "=>" and "<=", and a second
// clause on the probe that just fired prints as "| function:name" without
// indenting again.
func TestFlowIndent(t *testing.T) {
	prog := pidBuild(t, "pie")
	out := filepath.Join(t.TempDir(), "out")
	r := dstar(t, 20*time.Second, "-F", "-o", out, "-n", `
pid$target:a.out:pidt_f*:entry, pid$target:a.out:pidt_f*:return {}
pid$target:a.out:pidt_fbar:entry {}
syscall::getpid:entry, syscall::getpid:return /pid == $target/ {}`, "-c", prog)
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	line := func(s string) string { return fmt.Sprintf("%-41s \n", s) }
	want := "CPU " + line("FUNCTION")[:41] + "\n"
	for i := 0; i < 3; i++ {
		want += line(" -> pidt_foo") + line(" <- pidt_foo")
	}
	for i := 0; i < 2; i++ {
		want += line(" -> pidt_fbar") + line("  | pidt_fbar:entry") + line(" <- pidt_fbar")
	}
	want += line(" => getpid") + line(" <= getpid") + "\n"
	// Each line but the heading starts with its CPU, "%3d ".
	lines := strings.SplitAfter(string(b), "\n")
	for i := 1; i < len(lines); i++ {
		if len(lines[i]) > 4 {
			lines[i] = lines[i][4:]
		}
	}
	if got := strings.Join(lines, ""); got != want {
		t.Errorf("got:\n%q\nwant:\n%q", got, want)
	}
}
