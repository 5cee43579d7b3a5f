package main

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/engine/usym"
	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/elfsym"
)

// The user stacks dstar walks by call-frame information are checked
// against perf's (perf record --call-graph dwarf, which copies the stack
// and unwinds it afterwards with libdw) on the same run of the same
// program: dstar runs perf, which runs the workload, and both sample it at
// 997 Hz. Samples are not the same instants, so stacks are compared as
// sets: the fraction of dstar's samples whose stack, frame by frame (module
// and function), is one perf saw.

// perfFrame is a frame as both sides are compared: the module's base name
// and the function, "?" where neither has a name for it.
type perfFrame struct{ module, function string }

// perfStack is a stack, innermost first, joined for use as a key.
type perfStack []perfFrame

// key joins the frames up to root (__libc_start_call_main, a thread's
// clone3): what lies below it (__libc_start_main, _start) is the same in
// every stack, and perf's unwinding, in some runs, stops short of it
// for every sample.
func (s perfStack) key(root string) string {
	var b strings.Builder
	for _, f := range s {
		b.WriteString(f.module + "`" + f.function + ";")
		if f.function == root {
			break
		}
	}
	return b.String()
}

func (s perfStack) reaches(fn string) bool {
	for _, f := range s {
		if f.function == fn {
			return true
		}
	}
	return false
}

// stackSample is a stack and how many samples had it.
type stackSample struct {
	stack perfStack
	count int
}

// unwindWorkloads are what the comparison runs: a C program built without
// frame pointers whose leaves keep no frame (one reached through libc's
// qsort, calling back into the program), Debian's gzip, a C++ program
// (inlining, exceptions, std::sort), a program of four threads, a Go
// program, a Rust program and Debian's python3 on a pure-Python loop.
var unwindWorkloads = []struct {
	name, comm string
	build      func(t *testing.T, dir string) string // the command line
	// root is the function every whole stack reaches ("" for
	// __libc_start_call_main); perfDump is perf's stack copy (bytes, 0
	// for perf's default of 8 KiB), or -1 where perf walks frame
	// pointers instead: a Go program, which keeps them and whose
	// .debug_frame perf's DWARF unwinder does not read (its stacks
	// are one frame).
	root     string
	perfDump int
}{
	{"frameless", "frameless", func(t *testing.T, dir string) string {
		return bpftest.BuildC(t, dir, "frameless", framelessSrc, "-O2", "-fomit-frame-pointer")
	}, "", 0},
	{"gzip", "gzip", func(t *testing.T, dir string) string {
		gzip, err := exec.LookPath("gzip")
		if err != nil {
			t.Skip("gzip is not installed")
		}
		data := filepath.Join(dir, "data")
		writeText(t, data, 24<<20)
		return fmt.Sprintf("sh -c '%s -c %s > /dev/null'", gzip, data)
	}, "", 0},
	{"c++", "cxxwork", func(t *testing.T, dir string) string {
		if _, err := exec.LookPath("g++"); err != nil {
			bpftest.Skip(t, "g++ is not installed (apt-get install g++)")
		}
		src := filepath.Join(dir, "cxxwork.cc")
		os.WriteFile(src, []byte(cxxSrc), 0o644)
		bin := filepath.Join(dir, "cxxwork")
		if out, err := exec.Command("g++", "-O2", "-fomit-frame-pointer", "-o", bin, src).CombinedOutput(); err != nil {
			t.Fatalf("g++: %v\n%s", err, out)
		}
		return bin
	}, "", 0},
	{"threads", "threads", func(t *testing.T, dir string) string {
		return bpftest.BuildC(t, dir, "threads", threadsSrc, "-O2", "-fomit-frame-pointer", "-pthread")
	}, "clone3", 0},
	{"go", "gowork", func(t *testing.T, dir string) string {
		goBin, err := exec.LookPath("go")
		if err != nil {
			t.Skip("no go command to build the Go workload")
		}
		os.WriteFile(filepath.Join(dir, "main.go"), []byte(goSrc), 0o644)
		os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module gowork\n\ngo 1.21\n"), 0o644)
		// Uncompressed DWARF: perf's unwinder reads .debug_frame (Go
		// writes no .eh_frame), and not compressed.
		cmd := exec.Command(goBin, "build", "-ldflags=-compressdwarf=false", "-o", "gowork", ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		return filepath.Join(dir, "gowork")
	}, "runtime.main", -1},
	{"rust", "rustwork", func(t *testing.T, dir string) string {
		rustc, err := exec.LookPath("rustc")
		if err != nil {
			home, _ := os.UserHomeDir()
			if rustc = filepath.Join(home, ".cargo", "bin", "rustc"); !isFile(rustc) {
				bpftest.Skip(t, "rustc is not installed (apt-get install rustc)")
			}
		}
		src := filepath.Join(dir, "main.rs")
		os.WriteFile(src, []byte(rustLoopSrc), 0o644)
		bin := filepath.Join(dir, "rustwork")
		// Linked by GNU ld, not rustc's lld: perf 6.1 names no frame of
		// lld's layout (the text sharing a page with the data before
		// it), which dstar walks too (see unwind's TestAddressSharedPage).
		if out, err := exec.Command(rustc, "-O", "-g", "-C", "link-arg=-fuse-ld=bfd", "-o", bin, src).CombinedOutput(); err != nil {
			t.Fatalf("rustc: %v\n%s", err, out)
		}
		return bin
	}, "", 0},
	{"python3", "python3", func(t *testing.T, dir string) string {
		// Debian's, not a shim on PATH: its stacks are the issue's.
		py := "/usr/bin/python3"
		if _, err := os.Stat(py); err != nil {
			bpftest.Skip(t, "no /usr/bin/python3")
		}
		src := filepath.Join(dir, "loop.py")
		os.WriteFile(src, []byte(pythonSrc), 0o644)
		return py + " " + src
	}, "", 65528},
}

// rustLoopSrc: generic code monomorphised and inlined into a closure
// over an iterator, under Rust's runtime start-up (lang_start) and its
// v0- or legacy-mangled names.
const rustLoopSrc = `
use std::hint::black_box;
#[inline(never)]
fn leaf(n: u64) -> u64 {
    let mut s = 0u64;
    for i in 0..n { s = s.wrapping_add(i.wrapping_mul(i) ^ (s >> 3)); }
    s
}
#[inline(never)]
fn middle<T: Into<u64>>(n: T) -> u64 { leaf(n.into()) + 1 }
fn main() {
    let t: u64 = (0..400u32).map(|_| middle(black_box(1_000_000u32))).fold(0, |a, b| a.wrapping_add(b));
    println!("{}", t);
}
`

// cxxSrc: a std::sort with a comparator (inlined into the sort's
// instantiation), exceptions thrown through a frame and caught, and a
// virtual call.
const cxxSrc = `
#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <vector>
struct Shape { virtual ~Shape() {} virtual long area(long x) const = 0; };
struct Square : Shape { long area(long x) const override { long s = 0; for (long i = 0; i < 200; i++) s += (x + i) * (x ^ i); return s; } };
__attribute__((noinline)) long thrower(long n) { if (n % 3 == 0) throw std::runtime_error("three"); return n; }
__attribute__((noinline)) long catcher(long n) { try { return thrower(n); } catch (const std::exception &) { return -1; } }
__attribute__((noinline)) long sorter(long n) {
	std::vector<long> v(64);
	for (long i = 0; i < 64; i++) v[i] = (i * 2654435761u + n) % 100003;
	std::sort(v.begin(), v.end(), [](long a, long b) { return (a % 1000) < (b % 1000); });
	return v[n % 64];
}
int main() {
	Square sq; const Shape *s = &sq; long t = 0;
	for (long i = 0; i < 1000000; i++) { t += sorter(i); t += catcher(i); t += s->area(i); }
	std::printf("%ld\n", t);
	return 0;
}
`

// threadsSrc: four threads, each main → work → step (a leaf without a
// frame), and the main thread waiting.
const threadsSrc = `
#include <pthread.h>
#include <stdio.h>
__attribute__((noinline)) long step(long *v, int n) { long s = 0; for (int i = 0; i < n; i++) s += v[i] * 5 + (s >> 2); return s; }
__attribute__((noinline)) long work(long seed) { long v[512], s = 0; for (int r = 0; r < 300000; r++) { for (int i = 0; i < 512; i++) v[i] = i ^ (seed + r); s += step(v, 512); } return s; }
static void *worker(void *arg) { long s = work((long)arg); return (void *)s; }
int main(void) {
	pthread_t th[4]; long sum = 0;
	for (long i = 0; i < 4; i++) pthread_create(&th[i], 0, worker, (void *)i);
	for (int i = 0; i < 4; i++) { void *r; pthread_join(th[i], &r); sum += (long)r; }
	printf("%ld\n", sum);
	return 0;
}
`

// goSrc: a Go program whose goroutine computes through three frames.
const goSrc = `package main

import "fmt"

// (leaf has a frame, its array on the stack: a frame-pointer walk,
// perf's here, skips the caller of a Go function that has none.)
//
//go:noinline
func leaf(v []int64) int64 { var w [8]int64; var s int64; for i := range v { w[i&7] += v[i]; s += v[i]*3 + s>>3 + w[(i+1)&7] }; return s }

//go:noinline
func middle(n int64) int64 { v := make([]int64, 256); for i := range v { v[i] = int64(i) ^ n }; return leaf(v) }

//go:noinline
func outer(n int64) int64 { var s int64; for i := int64(0); i < 100; i++ { s += middle(n + i) }; return s }

func main() {
	var s int64
	for i := int64(0); i < 30000; i++ { s += outer(i) }
	fmt.Println(s)
}
`

// pythonSrc: a pure-Python loop of about three seconds (its first
// 50-100 ms, while its tables load, are cut).
const pythonSrc = `
def inner(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

def outer(k):
    return sum(inner(1000) for _ in range(k))

for _ in range(200):
    outer(300)
`

// framelessSrc: main → outer → middle → inner, inner a leaf without a
// frame; and main → sorter → qsort (libc) → cmp, on arrays short enough
// that its recursion stays shallow: few distinct stacks, so that the
// samples of each side show the other's.
const framelessSrc = `
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) long inner(long *v, int n) { long s = 0; for (int i = 0; i < n; i++) s += v[i] * 3 + (s >> 3); return s; }
__attribute__((noinline)) long middle(int n) { long v[256]; for (int i = 0; i < 256; i++) v[i] = i ^ n; return inner(v, 256) + n; }
__attribute__((noinline)) long outer(int n) { long s = 0; for (int i = 0; i < 100; i++) s += middle(n + i); return s; }
__attribute__((noinline)) int cmp(const void *a, const void *b) { long x = *(const long *)a, y = *(const long *)b; return (x > y) - (x < y); }
__attribute__((noinline)) long sorter(int n) { long v[8]; for (int i = 0; i < 8; i++) v[i] = (i * 2654435761u + n) % 100003; qsort(v, 8, sizeof v[0], cmp); return v[n % 8]; }
int main(int argc, char **argv) {
	long s = 0;
	for (int i = 0; i < 6000; i++) s += outer(i);
	for (int i = 0; i < 1000000; i++) s += sorter(i);
	printf("%ld\n", s);
	return 0;
}
`

// writeText writes n bytes of words drawn at random (a fixed seed): text
// gzip has work to do on.
func writeText(t *testing.T, path string, n int) {
	t.Helper()
	words := strings.Fields("the of and to in is was that for on with as by at from his her it an were are which this be or have had not but one all their been has more when there who will would can out up into so some about no time only other its could than them these then two may new first any like our over such")
	r := rand.New(rand.NewSource(1))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for size := 0; size < n; {
		word := words[r.Intn(len(words))]
		if r.Intn(10) == 0 {
			word = strconv.Itoa(r.Intn(100000))
		}
		k, _ := w.WriteString(word + " ")
		size += k
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestUStackAgainstPerf(t *testing.T) {
	bpftest.Require(t)
	perf, err := exec.LookPath("perf")
	if err != nil {
		bpftest.Skip(t, "perf is not installed (apt-get install linux-perf): it is the reference user stacks are checked against")
	}
	for _, w := range unwindWorkloads {
		t.Run(w.name, func(t *testing.T) {
			dir := t.TempDir()
			cmdline := w.build(t, dir)
			data := filepath.Join(dir, "perf.data")
			callGraph := "dwarf"
			switch {
			case w.perfDump > 0:
				callGraph = "dwarf," + strconv.Itoa(w.perfDump)
			case w.perfDump < 0:
				callGraph = "fp"
			}
			root := w.root
			if root == "" {
				root = "__libc_start_call_main"
			}
			// perf script runs --no-inline: so does dstar.
			r := dstar(t, 120*time.Second, "-q", "-x", "outputformat=json", "-x", "noinline", "-c",
				fmt.Sprintf("%s record -q -F 997 --call-graph %s -o %s -- %s", perf, callGraph, data, cmdline), "-n",
				fmt.Sprintf(`profile-997 /execname == "%s" && progenyof($target)/ { @[ustack()] = count(); }`, w.comm))
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			ours := dstarStacks(t, r.stdout)
			theirs := perfStacks(t, perf, data, w.comm)
			cmp := compareStacks(ours, theirs, root)
			t.Logf("%s: dstar %d samples, mean %.1f frames, %.1f%% reach %s, %.1f%% cut (marked); "+
				"perf %d samples, mean %.1f frames, %.1f%% reach it; %.1f%% of dstar's samples have a stack perf saw",
				w.name, cmp.ours.samples, cmp.ours.mean, 100*cmp.ours.reach, root, 100*cmp.ours.cut,
				cmp.theirs.samples, cmp.theirs.mean, 100*cmp.theirs.reach, 100*cmp.match)
			if cmp.ours.samples < 200 || cmp.theirs.samples < 200 {
				t.Fatalf("too few samples to compare (dstar %d, perf %d)", cmp.ours.samples, cmp.theirs.samples)
			}
			if cmp.match < 0.95 {
				counts := map[string]int{}
				for _, s := range theirs {
					counts[s.stack.key(root)]++
				}
				for k, n := range counts {
					if n > 5 {
						t.Logf("perf's: %d %s", n, k)
					}
				}
				t.Errorf("%.1f%% of dstar's stacks are ones perf saw, want at least 95%%; the commonest others:\n%s",
					100*cmp.match, strings.Join(cmp.unmatched, "\n"))
			}
			if cmp.ours.reach < 0.95 {
				t.Errorf("%.1f%% of dstar's stacks reach %s, want at least 95%%", 100*cmp.ours.reach, root)
			}
		})
	}
}

// dstarStacks reads the stacks of dstar's JSON aggregation @[ustack()].
func dstarStacks(t *testing.T, out string) []stackSample {
	t.Helper()
	var got []stackSample
	for _, line := range strings.Split(out, "\n") {
		var agg struct {
			Type string `json:"type"`
			Rows []struct {
				Keys  [][]string `json:"keys"`
				Value int        `json:"value"`
			} `json:"rows"`
		}
		if json.Unmarshal([]byte(line), &agg) != nil || agg.Type != "aggregation" {
			continue
		}
		for _, row := range agg.Rows {
			var s perfStack
			for _, fr := range row.Keys[0] {
				s = append(s, dstarFrame(fr))
			}
			got = append(got, stackSample{s, row.Value})
		}
	}
	if len(got) == 0 {
		t.Fatalf("no stacks in dstar's output:\n%s", out)
	}
	return got
}

// dstarFrame parses "module`function+0xoff", "module`0xaddr" or a marker.
func dstarFrame(s string) perfFrame {
	mod, fn, ok := strings.Cut(s, "`")
	if !ok {
		return perfFrame{"", s} // a marker, or an address in no module
	}
	if strings.HasPrefix(fn, "0x") {
		return perfFrame{mod, "?"}
	}
	fn, _, _ = strings.Cut(fn, "+")
	return perfFrame{mod, fn}
}

// perfStacks reads perf's samples of command comm, their user frames
// named as dstar names them: by the symbol tables (elfsym) at perf's
// address in the module, so that an alias (__libc_start_main_impl for
// __libc_start_main) does not count as a difference.
func perfStacks(t *testing.T, perf, data, comm string) []stackSample {
	t.Helper()
	out, err := exec.Command(perf, "script", "-i", data, "--no-inline", "-F", "comm,ip,sym,dso").Output()
	if err != nil {
		t.Fatalf("perf script: %v", err)
	}
	var got []stackSample
	var cur *stackSample
	keep := false
	for _, line := range strings.Split(string(out), "\n") {
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, " ") {
			keep = strings.TrimSpace(line) == comm
			if keep {
				got = append(got, stackSample{count: 1})
				cur = &got[len(got)-1]
			}
			continue
		}
		if !keep {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		dso := strings.Trim(f[len(f)-1], "()")
		if dso == "[kernel.kallsyms]" || strings.HasPrefix(dso, "[") && dso != "[unknown]" {
			continue // the kernel's frames, [vdso]'s
		}
		ip, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			continue
		}
		cur.stack = append(cur.stack, perfName(dso, ip, strings.Join(f[1:len(f)-1], " ")))
	}
	var nonEmpty []stackSample
	for _, s := range got {
		if len(s.stack) > 0 {
			nonEmpty = append(nonEmpty, s)
		}
	}
	if len(nonEmpty) == 0 {
		t.Fatalf("no user stacks of %s in perf's samples", comm)
	}
	return nonEmpty
}

// perfName names a frame of perf's: ip is its address in the module
// (a return address less one for a caller, as perf prints it); sym is
// perf's name, for a module that cannot be read.
func perfName(dso string, ip uint64, sym string) perfFrame {
	mod := filepath.Base(dso)
	if f, err := elfsym.Open(dso); err == nil {
		// perf gives an address in the file (an offset) for an
		// executable not built as PIE, whose symbols are at its
		// link-time addresses.
		if ef, err := elf.Open(dso); err == nil {
			if ef.Type == elf.ET_EXEC {
				if a, err := f.Address(ip); err == nil {
					ip = a
				}
			}
			ef.Close()
		}
		// As usym names them: a stripped file's local functions from
		// its debug file, when one is installed, and demangled.
		s, ok := f.ByAddress(ip)
		if !ok && f.Stripped() {
			if d, err := elfsym.DebugFile(f); err == nil && d != nil {
				s, ok = d.ByAddress(ip)
			}
		}
		if ok {
			return perfFrame{mod, usym.Demangle(s.Name)}
		}
		return perfFrame{mod, "?"}
	}
	if sym == "[unknown]" {
		sym = "?"
	}
	if i := strings.Index(sym, "+0x"); i >= 0 {
		sym = sym[:i]
	}
	return perfFrame{mod, sym}
}

type stackStats struct {
	samples          int
	mean, reach, cut float64
}

type stackComparison struct {
	ours, theirs stackStats
	match        float64
	unmatched    []string
}

func stats(ss []stackSample, root string) stackStats {
	var st stackStats
	frames, reach, cut := 0, 0, 0
	for _, s := range ss {
		st.samples += s.count
		n := len(s.stack)
		if n > 0 && s.stack[n-1].module == "" && strings.HasPrefix(s.stack[n-1].function, "[stack cut") {
			cut += s.count
			n--
		}
		frames += n * s.count
		if s.stack.reaches(root) {
			reach += s.count
		}
	}
	if st.samples > 0 {
		st.mean = float64(frames) / float64(st.samples)
		st.reach = float64(reach) / float64(st.samples)
		st.cut = float64(cut) / float64(st.samples)
	}
	return st
}

func compareStacks(ours, theirs []stackSample, root string) stackComparison {
	seen := map[string]bool{}
	for _, s := range theirs {
		seen[s.stack.key(root)] = true
	}
	c := stackComparison{ours: stats(ours, root), theirs: stats(theirs, root)}
	matched := 0
	other := map[string]int{}
	for _, s := range ours {
		// A cut stack's marker is no frame: its frames match perf's
		// when perf found no more either.
		frames := s.stack
		if n := len(frames); n > 0 && frames[n-1].module == "" {
			frames = frames[:n-1]
		}
		if seen[frames.key(root)] {
			matched += s.count
		} else {
			other[s.stack.key(root)] += s.count
		}
	}
	if c.ours.samples > 0 {
		c.match = float64(matched) / float64(c.ours.samples)
	}
	for k, n := range other {
		if n > 1 || len(c.unmatched) < 10 {
			c.unmatched = append(c.unmatched, fmt.Sprintf("%d %s", n, k))
		}
		if len(c.unmatched) >= 20 {
			break
		}
	}
	return c
}
