package main

// End-to-end tests of the stack tools (profile, offcputime, stackcount):
// each traces a C program built here, busy in a known chain of functions,
// and checks that the chain comes out in the tool's folded output root
// first, and — for profile --svg — in the flame graph as a browser draws
// it.

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/engine/flamegraph"
	"github.com/dstar-trace/dstar/providers/bpftest"
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
	// A stack the walk cut above main (a marker, before the process's
	// tables loaded) still counts.
	if n := sumMatching(out, "spin;(?:[^ \n]*;)*spin`main;spin`outer;spin`middle;spin`inner(?:;vmlinux`[^ \n]*)?"); n < 100 {
		t.Errorf("%d samples in main → outer → middle → inner; output:\n%s", n, out)
	}

	// -U: user stacks only.
	out = runStackTool(t, "profile", "-p", strconv.Itoa(pid), "-d", "1s", "-U")
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
		for _, f := range s.Frames[1:] {
			// (Its last samples, as it exits, are cut short: its memory
			// is going.)
			if !strings.Contains(f, "`") && f != "[stack cut: unreadable]" {
				t.Errorf("frame %q of %v is not named, or a cut", f, s.Frames)
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
	// The whole user stack, nap and usleep's libc frames in it. (The
	// tool's first sleeps may be cut short, marked, while the process's
	// unwind tables load.)
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
	// (The first opens' user stacks may be cut short, marked, while the
	// process's unwind tables load: a key of their own.)
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

// domFrame is a frame of a rendered flame graph: its name, its first
// sample and sample count (its x-range), its depth and its fill colour.
type domFrame struct {
	name            string
	start, n, depth int
	fill            string
}

var domFrameRe = regexp.MustCompile(`<g[^>]*data-s="(\d+)" data-n="(\d+)" data-d="(\d+)"[^>]*><title>([^<]*?) \([^<]*</title><rect [^>]*fill="(#[0-9a-f]{6})"`)

// domFrames reads the frames of a flame graph's rendered DOM.
func domFrames(dom []byte) []domFrame {
	var out []domFrame
	for _, m := range domFrameRe.FindAllSubmatch(dom, -1) {
		s, _ := strconv.Atoi(string(m[1]))
		n, _ := strconv.Atoi(string(m[2]))
		d, _ := strconv.Atoi(string(m[3]))
		out = append(out, domFrame{name: string(m[4]), start: s, n: n, depth: d, fill: string(m[5])})
	}
	return out
}

// parentOf is the frame f is drawn on: one row below, its x-range
// holding f's.
func parentOf(frames []domFrame, f domFrame) (domFrame, bool) {
	for _, p := range frames {
		if p.depth == f.depth-1 && p.start <= f.start && f.start+f.n <= p.start+p.n {
			return p, true
		}
	}
	return domFrame{}, false
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

// TestGzipFlameGraphInChromium: the flame graph of Debian's gzip (stripped,
// built without frame pointers), as headless Chromium draws it, shows its
// real call tree: _start, libc's start-up, then gzip's own functions
// (named by address: Debian ships their names only in a debug package)
// several deep, each drawn on its caller; and the kernel's frames (its
// reads and writes) drawn on the user frames that made the system call,
// in the kernel's colours.
func TestGzipFlameGraphInChromium(t *testing.T) {
	bpftest.Require(t)
	bin := bpftest.Chromium(t)
	gzip, err := exec.LookPath("gzip")
	if err != nil {
		t.Skip("gzip is not installed")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	writeText(t, data, 96<<20)
	out, err := os.Create(filepath.Join(dir, "data.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command(gzip, "-9", "-c", data)
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	svg := filepath.Join(dir, "gzip.svg")
	runStackTool(t, "profile", "-p", strconv.Itoa(cmd.Process.Pid), "-F", "997", "-d", "2s", "--svg", svg)
	if cmd.ProcessState != nil {
		t.Fatal("gzip ended before the profile did")
	}

	dom := chromium(t, bin, "file://"+svg, "--dump-dom")
	if !bytes.Contains(dom, []byte(`data-ready="`)) {
		t.Fatalf("the flame graph's script did not run to its end")
	}
	frames := domFrames(dom)
	if len(frames) < 10 {
		t.Fatalf("%d frames in the rendered DOM", len(frames))
	}
	total := 0
	for _, f := range frames {
		if f.depth == 0 {
			total += f.n
		}
	}
	// The user chain: each frame drawn on its caller, from the process
	// to __libc_start_call_main and on into gzip's own code.
	var start domFrame
	for _, f := range frames {
		if f.name == "libc.so.6`__libc_start_call_main" && f.n > start.n {
			start = f
		}
	}
	if start.n*10 < total*9 {
		t.Fatalf("__libc_start_call_main holds %d of %d samples", start.n, total)
	}
	chain := []string{start.name}
	for f := start; f.name != start.name || len(chain) == 1; {
		p, ok := parentOf(frames, f)
		if !ok {
			break
		}
		chain = append([]string{p.name}, chain...)
		f = p
	}
	// (The root, then the process's name; _start is gzip's first
	// function, unnamed in a stripped file.)
	want := regexp.MustCompile("^all;gzip;gzip`0x[0-9a-f]+;libc\\.so\\.6`__libc_start_main;libc\\.so\\.6`__libc_start_call_main$")
	if !want.MatchString(strings.Join(chain, ";")) {
		t.Errorf("the chain below __libc_start_call_main is %q, want %s", chain, want)
	}
	// Above it, the widest child each time: gzip's main, its compressor,
	// its deflate loop, its match search, all gzip's.
	deepest, mine := start, 0
	for {
		var widest domFrame
		for _, f := range frames {
			if p, ok := parentOf(frames, f); ok && p == deepest && f.n > widest.n {
				widest = f
			}
		}
		if widest.n == 0 || !strings.HasPrefix(widest.name, "gzip`") {
			break
		}
		deepest = widest
		mine++
	}
	if mine < 4 {
		t.Errorf("%d of gzip's own frames above __libc_start_call_main on its widest path, want at least 4", mine)
	}
	// The kernel: frames drawn on a user frame (the system call's
	// wrapper), in the kernel's colours (teal), as user frames are warm.
	var onUser []string
	for _, f := range frames {
		if !strings.HasPrefix(f.name, "vmlinux`") {
			continue
		}
		if h := hue(f.fill); h < 150 || h > 220 {
			t.Errorf("kernel frame %s drawn in %s (hue %.0f), not a kernel colour", f.name, f.fill, h)
		}
		if p, ok := parentOf(frames, f); ok && !strings.HasPrefix(p.name, "vmlinux`") {
			if h := hue(p.fill); h > 60 {
				t.Errorf("user frame %s drawn in %s (hue %.0f), not a user colour", p.name, p.fill, h)
			}
			onUser = append(onUser, p.name+" -> "+f.name)
		}
	}
	if len(onUser) == 0 {
		t.Errorf("no kernel frame drawn on a user frame")
	}
	t.Logf("%d samples; below gzip's code: %s; %d of gzip's frames deep; kernel on user: %q", total, strings.Join(chain, ";"), mine, onUser)
	if dir := os.Getenv("DSTAR_FLAMEGRAPH_SHOTS"); dir != "" {
		chromium(t, bin, "file://"+svg, "--screenshot="+filepath.Join(dir, "gzip.png"))
	}
}
