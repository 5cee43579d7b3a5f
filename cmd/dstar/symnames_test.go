package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// cxxSrc calls getppid from a member function of a class template in a
// namespace, reached through a lambda std::for_each calls: 20 times, 20
// ms apart. Frame pointers let the kernel's walk reach every frame.
const cxxSrc = `
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

// cxxFrames are the functions perf script names in cxxSrc's stacks at
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
	prog := bpftest.BuildCXX(t, t.TempDir(), "cxxprog", cxxSrc, "-O0", "-fno-omit-frame-pointer")
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
