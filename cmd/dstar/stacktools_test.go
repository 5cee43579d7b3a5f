package main

// End-to-end tests of the stack tools (profile, offcputime, stackcount):
// each traces a C program built here, busy in a known chain of functions,
// and checks that the chain comes out in the tool's folded output root
// first, and — for profile --svg — in the flame graph as a browser draws
// it.

import (
	"bytes"
	"context"
	"debug/elf"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/engine/flamegraph"
	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/cfi"
)

// stackFlags build a program whose every function has a frame pointer,
// leaves included (gcc -O1 drops a leaf's even with
// -mno-omit-leaf-frame-pointer), and makes its calls as calls: the kernel
// walks user stacks by frame pointers, so each function of the chain
// shows.
var stackFlags = []string{"-O0", "-fno-omit-frame-pointer"}

// startChain builds src as name and runs it until the test ends; it
// returns its pid.
func startChain(t *testing.T, name, src string) int {
	t.Helper()
	prog := bpftest.BuildC(t, t.TempDir(), name, src, stackFlags...)
	cmd := exec.Command(prog)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// Its libraries are mapped once it runs main; until then its user
	// stacks could not be named.
	time.Sleep(200 * time.Millisecond)
	return cmd.Process.Pid
}

// spinSrc spins on the CPU in inner, called by middle, by outer, by main,
// until killed.
const spinSrc = `
volatile unsigned long sink;
__attribute__((noinline)) void inner(void) { for (int i = 0; i < 1000000; i++) sink += i; }
__attribute__((noinline)) void middle(void) { inner(); sink++; }
__attribute__((noinline)) void outer(void) { middle(); sink++; }
int main(void) { for (;;) outer(); }
`

// runStackTool runs dstar tool args... to its end (-d) and returns its
// standard output, failing on an error or anything on stderr.
func runStackTool(t *testing.T, args ...string) string {
	t.Helper()
	r := dstar(t, 60*time.Second, append([]string{"tool"}, args...)...)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s\nstdout:\n%s", r.code, r.stderr, r.stdout)
	}
	return r.stdout
}

// parseFolded parses a tool's output as folded stacks, failing the test
// when it is not.
func parseFolded(t *testing.T, out string) []flamegraph.Stack {
	t.Helper()
	stacks, err := flamegraph.ParseFolded(strings.NewReader(out))
	if err != nil {
		t.Fatalf("not folded stacks: %v\n%s", err, out)
	}
	if len(stacks) == 0 {
		t.Fatalf("no stacks in the output:\n%s", out)
	}
	return stacks
}

// sumMatching adds up the counts of the folded lines of out that match re.
func sumMatching(out, re string) uint64 {
	var n uint64
	for _, m := range regexp.MustCompile(`(?m)^(`+re+`) (\d+)$`).FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseUint(m[len(m)-1], 10, 64)
		n += v
	}
	return n
}

// wholeStacks fails the test if a stack in a tool's output was cut
// short: a tool loads its -p process's unwind tables before it samples,
// and the processes these tests trace run on throughout.
func wholeStacks(t *testing.T, out string) {
	t.Helper()
	if i := strings.Index(out, "[stack cut"); i >= 0 {
		line := out[strings.LastIndex(out[:i], "\n")+1:]
		line, _, _ = strings.Cut(line, "\n")
		t.Errorf("a stack cut short: %s", line)
	}
}

// TestToolProfile: sampling a spinning process finds it in inner, under
// middle, outer and main, root first, under its command's name; every
// line is a folded stack.
func TestToolProfile(t *testing.T) {
	bpftest.Require(t)
	pid := startChain(t, "spin", spinSrc)
	out := runStackTool(t, "profile", "-p", strconv.Itoa(pid), "-d", "2s", "-F", "199")
	stacks := parseFolded(t, out)
	for _, s := range stacks {
		if s.Frames[0] != "spin" {
			t.Errorf("a stack of another process, or without its command at the root: %v", s.Frames)
		}
	}
	// About 2 s at 199 Hz, nearly all of it in inner.
	wholeStacks(t, out)
	if n := sumMatching(out, "spin;(?:[^ \n]*;)*spin`main;spin`outer;spin`middle;spin`inner(?:;vmlinux`[^ \n]*)?"); n < 100 {
		t.Errorf("%d samples in main → outer → middle → inner; output:\n%s", n, out)
	}

	// -U: user stacks only.
	out = runStackTool(t, "profile", "-p", strconv.Itoa(pid), "-d", "1s", "-U")
	wholeStacks(t, out)
	for _, s := range parseFolded(t, out) {
		if strings.Contains(strings.Join(s.Frames, ";"), "vmlinux`") {
			t.Errorf("-U has a kernel frame: %v", s.Frames)
		}
	}
}

// TestToolProfileTargetExits: a -p process is followed as dstar -p
// follows it: its stacks are whole from the first sample (its unwind
// tables loaded before sampling starts) and named even though it exits
// before the profile ends (its mappings kept).
func TestToolProfileTargetExits(t *testing.T) {
	bpftest.Require(t)
	// spinSrc's chain, for 1.5 s.
	pid := startChain(t, "spin", `
#include <time.h>
volatile unsigned long sink;
__attribute__((noinline)) void inner(void) { for (int i = 0; i < 100000; i++) sink += i; }
__attribute__((noinline)) void middle(void) { inner(); sink++; }
__attribute__((noinline)) void outer(void) { middle(); sink++; }
int main(void) {
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do { outer(); clock_gettime(CLOCK_MONOTONIC, &t); } while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec < 1500000000L);
	return 0;
}
`)
	out := runStackTool(t, "profile", "-p", strconv.Itoa(pid), "-d", "3s", "-F", "997")
	for _, s := range parseFolded(t, out) {
		for i, f := range s.Frames[1:] {
			// Its last samples, as it exits, may be cut short, and
			// marked so at the root: its memory is going, or its exit
			// runs code without call-frame information (crt's
			// destructor stubs).
			if !strings.Contains(f, "`") && !(i == 0 && strings.HasPrefix(f, "[stack cut: ")) {
				t.Errorf("frame %q of %v is not named, or not a cut marker at the root", f, s.Frames)
			}
		}
	}
	// Well over a second of samples (it ran 1.5 s, some of it before the
	// tool started), every one a whole stack.
	if n := sumMatching(out, "spin;spin`_start;libc\\.so\\.6`__libc_start_main;libc\\.so\\.6`__libc_start_call_main;spin`main;spin`outer;spin`middle;spin`inner(?:;vmlinux`[^ \n]*)*"); n < 500 {
		t.Errorf("%d samples in main → outer → middle → inner; output:\n%s", n, out)
	}
}

// TestToolOffcputime: a program sleeping in a loop spends its time off
// CPU in nanosleep, from doze, from main: the kernel's frames (from the
// system call down to schedule) are above its own.
func TestToolOffcputime(t *testing.T) {
	bpftest.Require(t)
	pid := startChain(t, "dozer", `
#include <unistd.h>
__attribute__((noinline)) int nap(void) { usleep(20000); return 1; }
__attribute__((noinline)) int doze(void) { return nap() + 1; }
int main(void) { int n = 0; for (;;) n += doze(); return n; }
`)
	out := runStackTool(t, "offcputime", "-p", strconv.Itoa(pid), "-d", "2s")
	parseFolded(t, out)
	// The whole user stack, nap and usleep's libc frames in it.
	wholeStacks(t, out)
	re := "dozer;dozer`_start;libc\\.so\\.6`__libc_start_main;libc\\.so\\.6`__libc_start_call_main;dozer`main;dozer`doze;dozer`nap;" +
		"libc\\.so\\.6`usleep;(?:libc\\.so\\.6`[^ \n;]*;)*libc\\.so\\.6`[^ \n;]*nanosleep[^ \n]*;vmlinux`[^ \n]*do_nanosleep;vmlinux`schedule[^ \n]*"
	// Asleep nearly all of 2 s: over a second of it, in microseconds.
	if n := sumMatching(out, re); n < 1000000 {
		t.Errorf("%d µs off CPU in main → doze → nanosleep → schedule; output:\n%s", n, out)
	}
}

// openerSrc opens a file in a loop, in opener, called by main. It makes
// the system call itself: libc's open64 uses the frame pointer register
// for data, so a walk from it goes astray.
const openerSrc = `
#include <unistd.h>
__attribute__((noinline)) long opener(void) {
	long fd;
	__asm__ volatile ("syscall" : "=a"(fd) : "0"(257L), "D"(-100L), "S"("/dev/null"), "d"(0L) : "rcx", "r11", "memory");
	close(fd);
	usleep(1000);
	return fd;
}
int main(void) { for (;;) opener(); }
`

// TestToolStackcount: stacks at openat's entry, in dtrace's layout, then
// folded: opener's stack, with the kernel's system call entry above it.
func TestToolStackcount(t *testing.T) {
	bpftest.Require(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("the traced program makes an x86-64 system call")
	}
	pid := startChain(t, "opener", openerSrc)
	out := runStackTool(t, "stackcount", "-p", strconv.Itoa(pid), "-d", "1s", "syscall::openat:entry")
	if !strings.HasPrefix(out, "Tracing stacks at syscall::openat:entry... Hit Ctrl-C to end.\n") {
		t.Errorf("no header:\n%s", out)
	}
	// A kernel stack, then the user one, then the count: as dtrace prints
	// @[stack(), ustack()].
	layout := regexp.MustCompile("(?m)^ {14}vmlinux`entry_SYSCALL_64[^\n]*\n\n {14}opener`opener\\+0x[0-9a-f]+\n {14}opener`main\\+0x[0-9a-f]+\n(?: {14}[^\n]*\n)* +(\\d+)\n")
	wholeStacks(t, out)
	ms := layout.FindAllStringSubmatch(out, -1)
	n := 0
	for _, m := range ms {
		k, _ := strconv.Atoi(m[1])
		n += k
	}
	if len(ms) == 0 {
		t.Errorf("no kernel and user stack of opener's openat:\n%s", out)
	} else if n < 50 {
		t.Errorf("%d opens counted in 1s, want hundreds:\n%s", n, out)
	}

	out = runStackTool(t, "stackcount", "-p", strconv.Itoa(pid), "-d", "1s", "-f", "-P", "syscall::openat:entry")
	parseFolded(t, out)
	wholeStacks(t, out)
	re := "opener;" + strconv.Itoa(pid) + ";(?:[^ \n]*;)?opener`main;opener`opener;vmlinux`entry_SYSCALL_64[^ \n]*"
	if n := sumMatching(out, re); n < 50 {
		t.Errorf("%d opens counted in 1s, want hundreds:\n%s", n, out)
	}
}

// The stack tools' command lines: a long option's missing value, no probe.
func TestStackToolFlags(t *testing.T) {
	r := dstar(t, 20*time.Second, "tool", "profile", "-h")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: dstar tool profile [-p PID] [-d DURATION] [-F HZ] [-U] [-K] [-I] [--svg FILE]\n") {
		t.Errorf("-h: exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = dstar(t, 20*time.Second, "tool", "offcputime", "--svg")
	if r.code != 1 || !strings.Contains(r.stderr, "offcputime: option --svg needs a FILE") {
		t.Errorf("--svg: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = dstar(t, 20*time.Second, "tool", "profile", "-p", "2147483647", "-d", "1")
	if r.code != 1 || !strings.Contains(r.stderr, "process 2147483647: no such process") {
		t.Errorf("-p of no process: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = dstar(t, 20*time.Second, "tool", "stackcount")
	if r.code != 1 || !strings.Contains(r.stderr, "give a probe") {
		t.Errorf("no probe: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// chromium runs headless chromium on url with extra flags and returns
// its standard output.
func chromium(t *testing.T, bin, url string, flags ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	args := append(bpftest.ChromiumFlags(t), flags...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", flags, err, stderr.String())
	}
	return out
}

// TestToolProfileSVGInChromium: dstar tool profile --svg writes a flame
// graph whose script runs in a browser and shows the sampled program's
// functions. With DSTAR_FLAMEGRAPH_SHOTS set, the screenshot is kept
// there as profile.png, for a person to look at.
func TestToolProfileSVGInChromium(t *testing.T) {
	bpftest.Require(t)
	bin := bpftest.Chromium(t)
	pid := startChain(t, "spin", spinSrc)
	svg := filepath.Join(t.TempDir(), "out.svg")
	out := runStackTool(t, "profile", "-p", strconv.Itoa(pid), "-d", "2s", "--svg", svg)
	if !regexp.MustCompile(`(?m)^Wrote .*out\.svg: \d+ stacks, \d+ samples$`).MatchString(out) {
		t.Errorf("output:\n%s", out)
	}

	dom := chromium(t, bin, "file://"+svg, "--dump-dom")
	if !bytes.Contains(dom, []byte(`data-ready="`)) {
		t.Errorf("the flame graph's script did not run to its end")
	}
	if !bytes.Contains(dom, []byte("CPU profile: process "+strconv.Itoa(pid))) {
		t.Errorf("no title in the rendered DOM")
	}
	for _, name := range []string{"spin`main", "spin`outer", "spin`middle", "spin`inner"} {
		if !bytes.Contains(dom, []byte(name)) {
			t.Errorf("%s is not in the rendered DOM", name)
		}
	}

	shot := filepath.Join(t.TempDir(), "shot.png")
	chromium(t, bin, "file://"+svg, "--screenshot="+shot)
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if _, err := png.Decode(bytes.NewReader(data)); err != nil {
		t.Errorf("the screenshot is not a PNG: %v", err)
	}
	if dir := os.Getenv("DSTAR_FLAMEGRAPH_SHOTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "profile.png"), data, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// TestFoldedOption: -x stackfmt=folded prints a stack-keyed aggregation
// as folded stacks, root first, execname as the root frame, offsets gone,
// and nothing else: no empty line first. setopt() sets it too.
func TestFoldedOption(t *testing.T) {
	bpftest.Require(t)
	prog := bpftest.BuildC(t, t.TempDir(), "chain", chainSrc, "-O1", "-fno-omit-frame-pointer")
	const clause = `syscall::getppid:entry /pid == $target/ { @[execname, ustack()] = count(); }`
	// The whole stack, from _start to leaf (see TestUserStack).
	want := regexp.MustCompile("^chain;chain`_start;libc\\.so\\.6`__libc_start_main;libc\\.so\\.6`__libc_start_call_main;" +
		"chain`main;chain`top;chain`middle;chain`leaf;libc\\.so\\.6`getppid 20\n$")
	for _, args := range [][]string{
		{"-x", "stackfmt=folded", "-n", clause},
		{"-n", `BEGIN { setopt("stackfmt", "folded"); } ` + clause},
	} {
		r := dstar(t, 30*time.Second, append([]string{"-q", "-c", prog}, args...)...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		if !want.MatchString(r.stdout) {
			t.Errorf("%v: stdout:\n%q", args, r.stdout)
		}
	}
	r := dstar(t, 10*time.Second, "-x", "stackfmt=flat", "-n", "BEGIN { exit(0); }")
	if r.code == 0 || !strings.Contains(r.stderr, "failed to set -x stackfmt: Invalid value for specified option") {
		t.Errorf("stackfmt=flat: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// domFrame is a frame of a flame graph as the browser laid it out: its
// name, its rectangle (left edge, top, width, in pixels) and its fill
// colour.
type domFrame struct {
	name    string
	x, y, w float64
	fill    string
}

var domFrameRe = regexp.MustCompile(`<g[^>]*><title>([^<]*?) \([^<]*</title><rect x="([-0-9.]+)" y="([-0-9.]+)" width="([0-9.]+)"[^>]* fill="(#[0-9a-f]{6})"`)

// domFrames reads the frames of a flame graph's rendered DOM.
func domFrames(dom []byte) []domFrame {
	var out []domFrame
	for _, m := range domFrameRe.FindAllSubmatch(dom, -1) {
		x, _ := strconv.ParseFloat(string(m[2]), 64)
		y, _ := strconv.ParseFloat(string(m[3]), 64)
		w, _ := strconv.ParseFloat(string(m[4]), 64)
		out = append(out, domFrame{name: string(m[1]), x: x, y: y, w: w, fill: string(m[5])})
	}
	return out
}

// onTop reports whether f is drawn on p, as a callee on its caller: one
// row above it, within its width (to the rounding of the SVG's
// coordinates).
func onTop(f, p domFrame) bool {
	const eps = 0.02
	return math.Abs(p.y-f.y-16) < eps && p.x <= f.x+eps && f.x+f.w <= p.x+p.w+eps
}

// parentOf is the frame f is drawn on.
func parentOf(frames []domFrame, f domFrame) (domFrame, bool) {
	for _, p := range frames {
		if onTop(f, p) {
			return p, true
		}
	}
	return domFrame{}, false
}

// widestOn is the widest of the frames drawn on p.
func widestOn(frames []domFrame, p domFrame) (domFrame, bool) {
	var best domFrame
	for _, f := range frames {
		if onTop(f, p) && f.w > best.w {
			best = f
		}
	}
	return best, best.w > 0
}

// hue is the hue, in degrees, of a fill colour #rrggbb.
func hue(fill string) float64 {
	v, _ := strconv.ParseUint(fill[1:], 16, 32)
	r, g, b := float64(v>>16&255)/255, float64(v>>8&255)/255, float64(v&255)/255
	hi, lo := max(r, g, b), min(r, g, b)
	if hi == lo {
		return 0
	}
	var h float64
	switch hi {
	case r:
		h = (g - b) / (hi - lo)
	case g:
		h = 2 + (b-r)/(hi-lo)
	default:
		h = 4 + (r-g)/(hi-lo)
	}
	if h *= 60; h < 0 {
		h += 360
	}
	return h
}

// widestPath follows stacks from their root, each time into the callee
// with the most samples: a flame graph's widest tower.
func widestPath(stacks []flamegraph.Stack) []string {
	var path []string
	for {
		n := map[string]uint64{}
		for _, s := range stacks {
			if len(s.Frames) > len(path) && slices.Equal(s.Frames[:len(path)], path) {
				n[s.Frames[len(path)]] += s.Count
			}
		}
		best, most := "", uint64(0)
		for f, c := range n {
			if c > most || c == most && f < best {
				best, most = f, c
			}
		}
		if most == 0 {
			return path
		}
		path = append(path, best)
	}
}

// gzipFunctions are where the functions of the file at path begin,
// by its call-frame information: in a stripped file, what names them.
func gzipFunctions(t *testing.T, path string) (starts map[uint64]bool, entry uint64) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fns, err := cfi.Functions(f)
	if err != nil {
		t.Fatal(err)
	}
	starts = map[uint64]bool{}
	for _, r := range fns {
		starts[r.Start] = true
	}
	return starts, f.Entry
}

// perfUserStacks reads perf's samples of comm as user stacks, root
// first, named as dstar names them: functions of the file exe by where
// their call-frame information says they start (fns), "exe`0xSTART" with
// START in the file, the other files' by their symbols (perfName).
func perfUserStacks(t *testing.T, perf, data, comm, exe string, fns map[uint64]bool) []flamegraph.Stack {
	t.Helper()
	out, err := exec.Command(perf, "script", "-i", data, "--no-inline", "-F", "comm,ip,sym,dso").Output()
	if err != nil {
		t.Fatalf("perf script: %v", err)
	}
	var starts []uint64
	for a := range fns {
		starts = append(starts, a)
	}
	slices.Sort(starts)
	var stacks []flamegraph.Stack
	var cur []string // innermost first
	keep := false
	flush := func() {
		if keep && len(cur) > 0 {
			slices.Reverse(cur)
			stacks = append(stacks, flamegraph.Stack{Frames: cur, Count: 1})
		}
		cur = nil
	}
	for _, line := range strings.Split(string(out), "\n") {
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, " ") {
			flush()
			keep = strings.TrimSpace(line) == comm
			continue
		}
		f := strings.Fields(line)
		if !keep || len(f) < 3 {
			continue
		}
		dso := strings.Trim(f[len(f)-1], "()")
		ip, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil || strings.HasPrefix(dso, "[") {
			continue // the kernel's frames
		}
		if dso == exe {
			// The function holding ip: the last to start at or before it.
			i, found := slices.BinarySearch(starts, ip)
			if !found {
				i--
			}
			if i < 0 {
				t.Fatalf("perf's %s frame %#x is before its first function", exe, ip)
			}
			cur = append(cur, filepath.Base(exe)+"`"+"0x"+strconv.FormatUint(starts[i], 16))
			continue
		}
		p := perfName(dso, ip, strings.Join(f[1:len(f)-1], " "))
		cur = append(cur, p.module+"`"+p.function)
	}
	flush()
	if len(stacks) == 0 {
		t.Fatalf("no user stacks of %s in perf's samples", comm)
	}
	return stacks
}

// TestGzipFlameGraphInChromium: the flame graph dstar tool profile draws
// of Debian's gzip (stripped, built without frame pointers) compressing
// 48 MiB of text, as headless Chromium lays it out, shows gzip's real
// call tree, each frame drawn on its caller: _start, libc's start-up,
// then gzip's own functions (named by where their call-frame information
// says they start: Debian ships their names only in a debug package)
// down to its match search, the same functions perf's own unwinding
// (--call-graph dwarf) finds on the same run; and the kernel's frames
// drawn on the user frames that entered it — a system call's on libc's
// wrapper, called by gzip — in the kernel's colours. With
// DSTAR_FLAMEGRAPH_SHOTS set, the screenshot is kept there as gzip.png.
func TestGzipFlameGraphInChromium(t *testing.T) {
	bpftest.Require(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("gzip, built without frame pointers, is walked by its call-frame information on x86-64 only")
	}
	bin := bpftest.Chromium(t)
	gzip, err := exec.LookPath("gzip")
	if err != nil {
		bpftest.Skip(t, "needs gzip, the program profiled")
	}
	perf, err := exec.LookPath("perf")
	if err != nil {
		bpftest.Skip(t, "needs perf (apt-get install linux-perf): its call tree is the reference")
	}
	gzip, _ = filepath.EvalSymlinks(gzip)
	fns, entry := gzipFunctions(t, gzip)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	writeText(t, data, 48<<20)
	out, err := os.Create(filepath.Join(dir, "data.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// At its default level, 48 MiB take gzip some 4 s here: the profile
	// sees it working throughout, reading its input and writing to a
	// file.
	cmd := exec.Command(gzip, "-c", data)
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	pid := strconv.Itoa(cmd.Process.Pid)
	perfData := filepath.Join(dir, "perf.data")
	pcmd := exec.Command(perf, "record", "-q", "-F", "199", "--call-graph", "dwarf", "-p", pid, "-o", perfData, "--", "sleep", "2")
	var perfOut bytes.Buffer
	pcmd.Stdout, pcmd.Stderr = &perfOut, &perfOut
	if err := pcmd.Start(); err != nil {
		t.Fatal(err)
	}
	svg := filepath.Join(dir, "gzip.svg")
	runStackTool(t, "profile", "-p", pid, "-F", "997", "-d", "2s", "--svg", svg)
	if err := pcmd.Wait(); err != nil {
		t.Fatalf("perf record: %v\n%s", err, perfOut.String())
	}

	dom := chromium(t, bin, "file://"+svg, "--dump-dom")
	if !bytes.Contains(dom, []byte(`data-ready="`)) {
		t.Fatalf("the flame graph's script did not run to its end")
	}
	frames := domFrames(dom)
	if len(frames) < 10 || frames[0].name != "all" {
		t.Fatalf("%d frames in the rendered DOM", len(frames))
	}
	isKernel := func(f domFrame) bool { return strings.HasPrefix(f.name, "vmlinux`") }

	// The widest tower, from the root up to its last user frame: gzip's
	// hot path.
	path := []domFrame{frames[0]}
	for {
		f, ok := widestOn(frames, path[len(path)-1])
		if !ok || isKernel(f) {
			break
		}
		path = append(path, f)
	}
	var names []string
	for _, f := range path {
		names = append(names, f.name)
	}
	chain := strings.Join(names, ";")
	// The root, the process's name, _start (gzip's entry point), libc's
	// start-up, then gzip's own code, main first.
	want := regexp.MustCompile("^all;gzip;gzip`0x[0-9a-f]+;libc\\.so\\.6`__libc_start_main;libc\\.so\\.6`__libc_start_call_main(;gzip`0x[0-9a-f]+){4,}$")
	if !want.MatchString(chain) {
		t.Fatalf("the widest tower is %s, want %s", chain, want)
	}
	if path[4].w < 0.9*frames[0].w {
		t.Errorf("__libc_start_call_main is %.0f of the %.0f pixels: most stacks are not whole", path[4].w, frames[0].w)
	}
	// gzip's frames by their address in the file: dstar's are at run
	// time, _start's at the entry point.
	base := uint64(0)
	inFile := func(name string) string {
		a, err := strconv.ParseUint(strings.TrimPrefix(name, "gzip`0x"), 16, 64)
		if err != nil || !strings.HasPrefix(name, "gzip`0x") {
			return name
		}
		return "gzip`0x" + strconv.FormatUint(a-base, 16)
	}
	start, _ := strconv.ParseUint(strings.TrimPrefix(names[2], "gzip`0x"), 16, 64)
	base = start - entry
	var ours []string
	for _, n := range names[2:] {
		f := inFile(n)
		if a, err := strconv.ParseUint(strings.TrimPrefix(f, "gzip`0x"), 16, 64); err == nil && !fns[a] {
			t.Errorf("%s (%s in the file) is not where a function of gzip starts", n, f)
		}
		ours = append(ours, f)
	}
	// perf's widest tower on the same run, the same functions.
	theirs := widestPath(perfUserStacks(t, perf, perfData, "gzip", gzip, fns))
	if !slices.Equal(ours, theirs) {
		t.Errorf("dstar's widest tower of gzip's frames is\n\t%s\nperf's is\n\t%s", strings.Join(ours, ";"), strings.Join(theirs, ";"))
	}

	// The kernel: frames drawn on user frames, in the kernel's colours
	// (teal) where user frames are warm; among them a system call's
	// entry drawn on libc's wrapper, drawn on gzip's code, on down to
	// main, and up from the entry the kernel's own path to the file.
	var onUser []string
	var syscall []string
	for _, f := range frames {
		if h := hue(f.fill); isKernel(f) && (h < 150 || h > 220) {
			t.Errorf("kernel frame %s drawn in %s (hue %.0f), not a kernel colour", f.name, f.fill, h)
		} else if !isKernel(f) && h > 60 {
			t.Errorf("user frame %s drawn in %s (hue %.0f), not a user colour", f.name, f.fill, h)
		}
		p, ok := parentOf(frames, f)
		if !isKernel(f) || !ok || isKernel(p) {
			continue
		}
		onUser = append(onUser, p.name+" -> "+f.name)
		if !strings.HasPrefix(f.name, "vmlinux`entry_SYSCALL_64") || !strings.HasPrefix(p.name, "libc.so.6`") {
			continue
		}
		// Down from the wrapper to main, on the hot path.
		down := []string{f.name, p.name}
		q, ok := parentOf(frames, p)
		for ; ok && q != path[5]; q, ok = parentOf(frames, q) {
			down = append(down, q.name)
		}
		if !ok {
			continue
		}
		down = append(down, q.name)
		slices.Reverse(down)
		// Up from the entry, the widest way.
		for q, ok := widestOn(frames, f); ok; q, ok = widestOn(frames, q) {
			down = append(down, q.name)
		}
		syscall = append(syscall, strings.Join(down, " -> "))
	}
	var file bool
	for _, s := range syscall {
		file = file || regexp.MustCompile("^(gzip`0x[0-9a-f]+ -> )+libc\\.so\\.6`(read|write) -> vmlinux`entry_SYSCALL_64[^ ]* -> vmlinux`do_syscall_64 -> .*vmlinux`vfs_(read|write)( |$)").MatchString(s)
	}
	if !file {
		t.Errorf("no read or write system call of gzip's drawn above main, through libc to vfs_read or vfs_write; system calls: %q; kernel on user: %q", syscall, onUser)
	}
	t.Logf("%.0f pixels; widest tower: %s (in the file: %s)", frames[0].w, chain, strings.Join(ours, ";"))
	t.Logf("system calls drawn from main: %q", syscall)
	t.Logf("kernel frames drawn on user frames: %q", onUser)
	if dir := os.Getenv("DSTAR_FLAMEGRAPH_SHOTS"); dir != "" {
		chromium(t, bin, "file://"+svg, "--screenshot="+filepath.Join(dir, "gzip.png"))
	}
}
