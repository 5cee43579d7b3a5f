package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/elfsym"
)

// cxxNamesSrc calls getppid from a member function of a class template in a
// namespace, reached through a lambda std::for_each calls: 20 times, 20
// ms apart. Frame pointers let the kernel's walk reach every frame.
const cxxNamesSrc = `
#include <algorithm>
#include <vector>
#include <unistd.h>
namespace shapes {
template <typename T> struct Box {
	T v;
	__attribute__((noinline)) long measure(const T &x) const { return getppid() + v + x; }
};
}
__attribute__((noinline)) long visit(std::vector<int> &v) {
	shapes::Box<int> b{1};
	long n = 0;
	std::for_each(v.begin(), v.end(), [&](int x) { n += b.measure(x); });
	return n;
}
int main() {
	std::vector<int> v{1};
	long n = 0;
	for (int i = 0; i < 20; i++) { n += visit(v); usleep(20000); }
	return n == 0;
}
`

// cxxFrames are the functions perf script names in cxxNamesSrc's stacks at
// getppid, built -O0 (so that std::for_each and the lambda are calls),
// innermost first.
var cxxFrames = []string{
	"shapes::Box<int>::measure",
	"visit(std::vector<int, std::allocator<int> >&)::{lambda(int)#1}::operator()",
	"std::for_each<__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, visit(std::vector<int, std::allocator<int> >&)::{lambda(int)#1}>",
	"visit",
	"main",
}

// TestUStackDemangled: a C++ program's frames are named as perf names
// them, demangled without parameters, in DTrace's module`function+0xoff
// form: by ustack( ) and by usym( ) as an aggregation key.
func TestUStackDemangled(t *testing.T) {
	bpftest.Require(t)
	prog := bpftest.BuildCXX(t, t.TempDir(), "cxxprog", cxxNamesSrc, "-O0", "-fno-omit-frame-pointer")
	stacks := getppidStacks(t, prog)
	if len(stacks) == 0 {
		t.Fatal("no stacks")
	}
	var re strings.Builder
	for _, f := range cxxFrames {
		re.WriteString("\\n *cxxprog`" + regexp.QuoteMeta(f) + "\\+0x[0-9a-f]+")
	}
	want := regexp.MustCompile(re.String() + "\\n")
	n := 0
	for _, s := range stacks {
		if strings.Contains(s, "_Z") {
			t.Errorf("a mangled name:\n%s", s)
		}
		if want.MatchString(s) {
			n++
		}
	}
	if n < len(stacks)/2 {
		t.Errorf("%d of %d stacks show %s:\n%s", n, len(stacks), strings.Join(cxxFrames, " ← "), strings.Join(stacks, "\n--\n"))
	}
	r := dstar(t, 60*time.Second, "-q", "-c", prog, "-n",
		`syscall::getppid:entry /pid == $target/ { @[usym(ucaller)] = count(); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "cxxprog`shapes::Box<int>::measure ") {
		t.Errorf("usym( ) key not demangled:\n%s", r.stdout)
	}
}

// rustSrc calls getppid (std's parent_id) from a method of a generic
// struct in a module, 20 times, 20 ms apart.
const rustSrc = `
mod shapes {
    pub struct Boxed<T> { pub v: T }
    impl<T: Copy + Into<u64>> Boxed<T> {
        #[inline(never)]
        pub fn measure(&self) -> u64 { std::os::unix::process::parent_id() as u64 + self.v.into() }
    }
}
#[inline(never)]
fn visit(b: &shapes::Boxed<u32>) -> u64 { b.measure() }
fn main() {
    let b = shapes::Boxed { v: 1u32 };
    let mut n = 0;
    for _ in 0..20 { n += visit(&b); std::thread::sleep(std::time::Duration::from_millis(20)); }
    std::process::exit((n == 0) as i32);
}
`

// TestUStackRustDemangled: a Rust program's frames are demangled in both
// of rustc's manglings, legacy (the hash dropped) and v0, as perf names
// them. Without rustc it skips: TestDemangle in engine/usym covers both
// manglings on known names.
func TestUStackRustDemangled(t *testing.T) {
	bpftest.Require(t)
	rustc, err := exec.LookPath("rustc")
	if err != nil {
		home, _ := os.UserHomeDir()
		if rustc = filepath.Join(home, ".cargo", "bin", "rustc"); !isFile(rustc) {
			t.Skip("rustc is not installed")
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "r.rs"), []byte(rustSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ mangling, want string }{
		{"legacy", "r::shapes::Boxed<T>::measure"},
		{"v0", "<r::shapes::Boxed<u32>>::measure"},
	} {
		t.Run(tc.mangling, func(t *testing.T) {
			name := "rust" + tc.mangling
			args := []string{"-C", "force-frame-pointers=yes", "-o", name, "r.rs"}
			if tc.mangling != "legacy" { // the default; naming it needs -Z on stable
				args = append(args, "-C", "symbol-mangling-version="+tc.mangling)
			}
			cmd := exec.Command(rustc, args...)
			cmd.Dir = dir
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("rustc: %v\n%s", err, b)
			}
			stacks := getppidStacks(t, filepath.Join(dir, name))
			want := regexp.MustCompile("(?m)^ *" + name + "`" + regexp.QuoteMeta(tc.want) + "\\+0x[0-9a-f]+$")
			n := 0
			for _, s := range stacks {
				if want.MatchString(s) {
					n++
				}
			}
			if len(stacks) == 0 || n < len(stacks)/2 {
				t.Errorf("%d of %d stacks name %s:\n%s", n, len(stacks), tc.want, strings.Join(stacks, "\n--\n"))
			}
		})
	}
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// inlineSrc has depth3 inlined into depth2 and depth2 into outer at -O2,
// so that getppid is called from all three at once; 20 calls, 20 ms
// apart.
const inlineSrc = `
#include <unistd.h>
static int depth3(int x) { return getppid() + x; }
static int depth2(int x) { return depth3(x * 2) + 1; }
__attribute__((noinline)) int outer(int x) { return depth2(x + 1) * 3; }
int main(void) {
	int n = 0;
	for (int i = 0; i < 20; i++) { n += outer(i); usleep(20000); }
	return n == 0;
}
`

// TestUStackInlined: in a program built -O2 -g, the functions inlined
// where getppid is called show as frames of their own, innermost first,
// as perf shows them (depth3, depth2, then outer, which they are inlined
// into); -x noinline shows only outer; and a build without DWARF has no
// inlined frames.
func TestUStackInlined(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	prog := bpftest.BuildC(t, dir, "inl", inlineSrc, "-O2", "-g")
	inlined := regexp.MustCompile("(?m)^ *inl`depth3 \\(inlined\\)\n *inl`depth2 \\(inlined\\)\n *inl`outer\\+0x[0-9a-f]+\n *inl`main\\+0x[0-9a-f]+$")
	count := func(stacks []string, re *regexp.Regexp) int {
		n := 0
		for _, s := range stacks {
			if re.MatchString(s) {
				n++
			}
		}
		return n
	}
	stacks := getppidStacks(t, prog)
	if n := count(stacks, inlined); len(stacks) == 0 || n < len(stacks)/2 {
		t.Errorf("%d of %d stacks show depth3 and depth2 inlined into outer:\n%s", n, len(stacks), strings.Join(stacks, "\n--\n"))
	}

	// Folded for flame graphs, root first, the inlined functions are
	// frames of their own between outer and getppid.
	r := dstar(t, 60*time.Second, "-q", "-x", "stackfmt=folded", "-c", prog, "-n",
		`syscall::getppid:entry /pid == $target/ { @[ustack()] = count(); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	folded := regexp.MustCompile("(?m);inl`main;inl`outer;inl`depth2 \\(inlined\\);inl`depth3 \\(inlined\\);libc\\.so\\.6`getppid (\\d+)$")
	if m := folded.FindStringSubmatch(r.stdout); m == nil || atoi(m[1]) < 10 {
		t.Errorf("folded, want most of the 20 calls through depth2 and depth3:\n%s", r.stdout)
	}

	plain := regexp.MustCompile("(?m)^ *libc.so.6`getppid\\+0x[0-9a-f]+\n *inl`outer\\+0x[0-9a-f]+\n *inl`main\\+0x[0-9a-f]+$")
	r = dstar(t, 60*time.Second, "-q", "-x", "noinline", "-c", prog, "-n",
		`syscall::getppid:entry /pid == $target/ { ustack(); printf("--\n"); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "(inlined)") || !plain.MatchString(r.stdout) {
		t.Errorf("-x noinline:\n%s", r.stdout)
	}

	stripped := bpftest.BuildC(t, dir, "inlnodwarf", inlineSrc, "-O2")
	if s := getppidStacks(t, stripped); len(s) == 0 || strings.Contains(strings.Join(s, "\n"), "(inlined)") {
		t.Errorf("without DWARF:\n%s", strings.Join(s, "\n--\n"))
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestUStackInlinedLibcAtExit: the functions glibc inlines, named from
// its debug file (libc6-dbg: 7 MB of DWARF, read in the background from
// the first walk), are in the aggregation printed at exit, every time,
// however soon the program ends: stdout's first write allocates its
// buffer (an fstat) through _IO_doallocbuf, inlined into puts's path.
// That printing waits for the reading is what makes it so: the program
// ends long before the reading does.
func TestUStackInlinedLibcAtExit(t *testing.T) {
	bpftest.Require(t)
	lib, err := elfsym.Open("/usr/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		t.Skip(err)
	}
	if d, err := elfsym.DebugFile(lib); err != nil || !d.HasDWARF() {
		t.Skip("libc's debug file is not installed (libc6-dbg)")
	}
	prog := bpftest.BuildC(t, t.TempDir(), "puts", "#include <stdio.h>\nint main(void) { puts(\"x\"); return 0; }\n", "-O2")
	inlined := regexp.MustCompile("(?m)^ *libc\\.so\\.6`[^ ]+ \\(inlined\\)\n *libc\\.so\\.6`[^ ]+\\+0x[0-9a-f]+$")
	for i := 0; i < 3; i++ {
		r := dstar(t, 60*time.Second, "-q", "-c", prog, "-n",
			`syscall::newfstatat:entry /pid == $target/ { @[ustack()] = count(); }`)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if !inlined.MatchString(r.stdout) || strings.Contains(r.stderr, "not read in") {
			t.Errorf("run %d: no libc function inlined in the stacks printed at exit:\n%s\nstderr:\n%s", i, r.stdout, r.stderr)
		}
	}
}
