package usym

import (
	"os/exec"

	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/elfsym"
	"github.com/dstar-trace/dstar/providers/procmaps"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// symbolMe is a function whose address the test resolves back to its name.
//
//go:noinline
func symbolMe() uintptr { return pcOf(symbolMe) }

func pcOf(f func() uintptr) uintptr {
	return reflect.ValueOf(f).Pointer()
}

func TestFrameSelf(t *testing.T) {
	s := New()
	pc := uint64(symbolMe())
	got := s.Frame(os.Getpid(), pc+1)
	if !strings.HasSuffix(got, "`github.com/dstar-trace/dstar/engine/usym.symbolMe+0x1") {
		t.Errorf("Frame = %q", got)
	}
	if got := s.Frame(os.Getpid(), 8); got != "0x8" {
		t.Errorf("unmapped address: %q", got)
	}
}

// TestFrameAfterExit: a watched process's addresses resolve after it has
// gone, from the last reading of its mappings.
func TestFrameAfterExit(t *testing.T) {
	s := New()
	stop := make(chan struct{})
	defer close(stop)
	s.Watch(os.Getpid(), 10*time.Millisecond, stop)
	// Pretend this process has gone: its reading is what remains.
	s.mu.Lock()
	s.procs[os.Getpid()].gone = true
	s.mu.Unlock()
	if got := s.Frame(os.Getpid(), uint64(symbolMe())); !strings.Contains(got, "usym.symbolMe") {
		t.Errorf("Frame = %q", got)
	}
}

// TestPrune: processes that have exited are forgotten unless a watch
// keeps them, and so are live ones not looked up for a while; a watch's
// end lets its process go.
func TestPrune(t *testing.T) {
	s := New()
	old := time.Now().Add(-2 * idle)
	s.procs[1] = &process{gone: true, used: time.Now()}
	s.procs[2] = &process{gone: true, watches: 1}
	s.procs[3] = &process{used: old}
	s.procs[os.Getpid()] = &process{used: time.Now()}
	s.prune()
	if _, ok := s.procs[1]; ok {
		t.Error("an exited process is kept")
	}
	if _, ok := s.procs[2]; !ok {
		t.Error("a watched process that exited is forgotten")
	}
	if _, ok := s.procs[3]; ok {
		t.Error("a process unused for long is kept")
	}
	if _, ok := s.procs[os.Getpid()]; !ok {
		t.Error("a live process in use is forgotten")
	}
	s.unwatch(2, nil)
	s.prune()
	if _, ok := s.procs[2]; ok {
		t.Error("a process whose watch ended is kept")
	}
}

// inlineSrc has depth3 inlined into depth2 and depth2 into outer (-O2),
// and sleeps until killed.
const inlineSrc = `
#include <unistd.h>
static int depth3(int x) { return getppid() + x; }
static int depth2(int x) { return depth3(x * 2) + 1; }
__attribute__((noinline)) int outer(int x) { return depth2(x + 1) * 3; }
int main(void) { int n = 0; for (;;) { n += outer(n); sleep(100); } }
`

// inlineTarget starts a C program built -O2 -g whose outer calls
// getppid with two functions inlined at the call, and returns its
// process and the return address of that call: a frame with two
// inlined frames before it.
func inlineTarget(tb testing.TB) (pid int, ret uint64) {
	prog := bpftest.BuildC(tb, tb.TempDir(), "inl", inlineSrc, "-O2", "-g")
	cmd := exec.Command(prog)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	f, err := elfsym.Open(prog)
	if err != nil {
		tb.Fatal(err)
	}
	outer, _ := f.Lookup("outer")
	// The return address of the call to getppid, inlined twice, is
	// the first address past the copies' start that shows both.
	v := outer.Value + 1
	for ; v < outer.Value+outer.Size && len(f.InlineChain(v-1)) != 2; v++ {
	}
	off, err := f.FileOffset(v)
	if err != nil {
		tb.Fatal(err)
	}
	for ret == 0 {
		ms, err := procmaps.Read(cmd.Process.Pid)
		if err != nil {
			tb.Fatal(err)
		}
		for _, m := range ms {
			if m.Path == prog && m.Offset <= off && off < m.Offset+(m.End-m.Start) {
				ret = m.Start + off - m.Offset
			}
		}
	}
	return cmd.Process.Pid, ret
}

// TestFramesDoNotWaitForInlines: while a file's DWARF is being read past
// frameWait, its frames are named without their inlined functions, and not
// cached so; WaitInlines gives up at its timeout, naming the module,
// and once the reading is done waits no more, and the frames have their
// inlined functions: what dstar prints at exit.
func TestFramesDoNotWaitForInlines(t *testing.T) {
	pid, ret := inlineTarget(t)
	release := make(chan struct{})
	oldChain, oldWait, oldFrameWait := inlineChain, waitInlines, frameWait
	defer func() { inlineChain, waitInlines, frameWait = oldChain, oldWait, oldFrameWait }()
	frameWait = 10 * time.Millisecond
	inlineChain = func(f *elfsym.File, v uint64) ([]string, bool) {
		select {
		case <-release:
			return oldChain(f, v)
		default:
			return nil, false
		}
	}
	waits := 0
	waitInlines = func(f *elfsym.File, timeout <-chan time.Time) bool {
		waits++
		select {
		case <-release:
			return oldWait(f, timeout)
		case <-timeout:
			return false
		}
	}
	s := New()
	before := s.Unready()
	got := s.Frames(pid, ret, true, true)
	if len(got) != 1 || strings.Contains(got[0], "(inlined)") || !strings.Contains(got[0], "inl`outer+0x") {
		t.Errorf("named while the DWARF is read: %q, want outer alone", got)
	}
	if s.Unready() == before {
		t.Error("a naming without inlined frames is not counted")
	}
	// Once a file's reading is late, its frames wait no more.
	s.Frames(pid, ret, true, true)
	if waits != 1 {
		t.Errorf("Frames waited %d times for the same late file, want once", waits)
	}
	if late := s.WaitInlines(10 * time.Millisecond); !reflect.DeepEqual(late, []string{"inl"}) {
		t.Errorf("WaitInlines with the reading held: late %q, want [inl]", late)
	}
	close(release)
	if late := s.WaitInlines(time.Minute); late != nil {
		t.Errorf("WaitInlines once read: late %q", late)
	}
	got = s.Frames(pid, ret, true, true)
	if len(got) != 3 || !strings.HasSuffix(got[0], "inl`depth3 (inlined)") || !strings.HasSuffix(got[1], "inl`depth2 (inlined)") {
		t.Errorf("named once read: %q, want depth3, depth2, outer", got)
	}
	if late := s.WaitInlines(0); late != nil {
		t.Errorf("nothing unread, yet late %q", late)
	}
}

// BenchmarkFramesInlined: symbolising a 20-frame stack whose every frame
// is the return address of a call with two functions inlined at it (a
// live C program built -O2 -g), with the inlined frames and without
// them, after the file's DWARF is read.
func BenchmarkFramesInlined(b *testing.B) {
	pid, ret := inlineTarget(b)
	s := New()
	s.Frames(pid, ret, true, true)
	s.WaitInlines(time.Minute)
	if len(s.Frames(pid, ret, true, true)) != 3 {
		b.Fatal("no address in outer has two inlined frames")
	}
	for _, inline := range []bool{false, true} {
		name := "noinline"
		if inline {
			name = "inline"
		}
		b.Run(name, func(b *testing.B) {
			n := 0
			for b.Loop() {
				n = 0
				for i := 0; i < 20; i++ {
					n += len(s.Frames(pid, ret, true, inline))
				}
			}
			b.ReportMetric(float64(n), "frames")
		})
	}
}

// TestMappingVDSO: an address in the vDSO has a mapping for profiles,
// named [vdso] as perf names it, with its range and build ID.
func TestMappingVDSO(t *testing.T) {
	ms, err := procmaps.Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if !m.IsVDSO() {
			continue
		}
		got, ok := New().Mapping(os.Getpid(), m.Start+0x10)
		if !ok || got.Path != "[vdso]" || got.Start != m.Start || got.End != m.End || got.BuildID == "" {
			t.Errorf("Mapping in the vDSO: %+v, %v; want [vdso] %#x-%#x with a build ID", got, ok, m.Start, m.End)
		}
		return
	}
	t.Skip("this process maps no vDSO")
}
