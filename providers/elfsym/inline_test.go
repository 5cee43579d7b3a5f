package elfsym

import (
	"debug/elf"
	"os/exec"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// inlineSrc has depth3 inlined into depth2, and depth2 into outer, at
// -O2: the getppid call lies in all three.
const inlineSrc = `
#include <unistd.h>
static int depth3(int x) { return getppid() + x; }
static int depth2(int x) { return depth3(x * 2) + 1; }
__attribute__((noinline)) int outer(int x) { return depth2(x + 1) * 3; }
int main(void) { return outer(1) == 0; }
`

// TestInlineChain: the address of the call inlined twice expands to
// depth3 then depth2, and outer's own code outside them to nothing; a
// file without DWARF expands nothing, and so does its table's absence.
func TestInlineChain(t *testing.T) {
	dir := t.TempDir()
	prog := bpftest.BuildC(t, dir, "inl", inlineSrc, "-O2", "-g")
	f, err := Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	if !f.HasDWARF() {
		t.Fatal("a -g build has no DWARF")
	}
	call := firstCall(t, prog, "outer")
	if got, want := f.InlineChain(call), []string{"depth3", "depth2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("InlineChain(call in outer) = %q, want %q", got, want)
	}
	outer, _ := f.Lookup("outer")
	if got := f.InlineChain(outer.Value + outer.Size - 1); got != nil {
		t.Errorf("InlineChain(outer's last byte) = %q, want none", got)
	}
	if got := f.InlineChain(0); got != nil {
		t.Errorf("InlineChain(0) = %q", got)
	}

	plain := bpftest.BuildC(t, dir, "plain", inlineSrc, "-O2")
	p, err := Open(plain)
	if err != nil {
		t.Fatal(err)
	}
	if p.HasDWARF() || p.InlineChain(firstCall(t, plain, "outer")) != nil {
		t.Error("a build without -g has inlined frames")
	}
}

// firstCall returns the address of the first call instruction (e8
// rel32, the x86-64 near call) in function fn of the program at path:
// outer's, built -O2, opens with it.
func firstCall(t *testing.T, path, fn string) uint64 {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := f.Lookup(fn)
	if !ok {
		t.Fatalf("no %s", fn)
	}
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	b, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	code := b[s.Value-text.Addr : s.Value-text.Addr+s.Size]
	for i := 0; i+5 <= len(code); i++ {
		if code[i] == 0xe8 {
			return s.Value + uint64(i)
		}
	}
	t.Fatalf("no call in %s", fn)
	return 0
}

// TestInlineCacheBounded: past its budget the cache lets the least
// recently used index go, and a file asked for again is read again.
func TestInlineCacheBounded(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(bpftest.BuildC(t, dir, "a", inlineSrc, "-O2", "-g"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(bpftest.BuildC(t, dir, "b", inlineSrc, "-O2", "-g"))
	if err != nil {
		t.Fatal(err)
	}
	weight := func(f *File) (int, bool) {
		inlineCache.Lock()
		defer inlineCache.Unlock()
		ix, ok := inlineCache.tabs[f.key]
		if !ok {
			return 0, false
		}
		return ix.weight, true
	}
	if got := a.InlineChain(firstCall(t, a.Path, "outer")); len(got) != 2 {
		t.Fatalf("a: %q", got)
	}
	w, _ := weight(a)
	if w == 0 {
		t.Fatal("a read weighs nothing")
	}
	old := inlineBudget
	inlineBudget = w + w/2
	defer func() { inlineBudget = old }()
	b.InlineChain(firstCall(t, b.Path, "outer"))
	_, hasA := weight(a)
	_, hasB := weight(b)
	inlineCache.Lock()
	total := inlineCache.weight
	inlineCache.Unlock()
	if hasA || !hasB || total > inlineBudget {
		t.Errorf("over budget: a kept %v, b kept %v, %d bytes held of %d; want only b", hasA, hasB, total, inlineBudget)
	}
	if got := a.InlineChain(firstCall(t, a.Path, "outer")); len(got) != 2 {
		t.Errorf("a, read again: %q", got)
	}
}

// TestInlineUnitsMatchWhole: read a unit at a time, as asked for, the
// inlined copies are those read whole, at every address where one
// starts or ends: in the test program, and in libc when its debug file
// is installed.
func TestInlineUnitsMatchWhole(t *testing.T) {
	paths := []string{bpftest.BuildC(t, t.TempDir(), "inl", inlineSrc, "-O2", "-g")}
	if lib, err := Open("/usr/lib/x86_64-linux-gnu/libc.so.6"); err == nil {
		if d, err := DebugFile(lib); err == nil && d.HasDWARF() {
			paths = append(paths, d.Path)
		}
	}
	for _, path := range paths {
		whole := readInlines(path)
		secs, w := loadInlines(path)
		if whole == nil || secs == nil || w != nil {
			t.Fatalf("%s: read whole %v, by units %v", path, whole != nil, secs != nil)
		}
		ix := &inlineIndex{path: path, units: map[uint64]*inlineTable{}}
		var addrs []uint64
		for _, r := range whole.ranges {
			addrs = append(addrs, r.lo, r.hi-1, r.hi)
		}
		for _, a := range addrs {
			ix.chain(a)
		}
		ix.wait(nil)
		bad := 0
		for _, a := range addrs {
			got, ok := ix.chain(a)
			if want := whole.chain(a); !ok || !reflect.DeepEqual(got, want) {
				if bad++; bad <= 5 {
					t.Errorf("%s: %#x: by units %q (%v), whole %q", path, a, got, ok, want)
				}
			}
		}
		if bad > 0 || len(addrs) == 0 {
			t.Errorf("%s: %d of %d addresses differ", path, bad, len(addrs))
		}
		t.Logf("%s: %d addresses, %d units read", path, len(addrs), len(ix.units))
	}
}

// TestInlineChainReadyDoesNotWait: a lookup while the file's DWARF is
// unread answers at once that it is not ready, and has it read in the
// background; once WaitInlines says it is done, it answers in full.
func TestInlineChainReadyDoesNotWait(t *testing.T) {
	prog := bpftest.BuildC(t, t.TempDir(), "inl", inlineSrc, "-O2", "-g")
	f, err := Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	call := firstCall(t, prog, "outer")
	// A reader held back until the lookup has answered.
	release := make(chan struct{})
	defer func(old func(string) (*unitSections, *inlineTable)) { inlineLoad = old }(inlineLoad)
	inlineLoad = func(path string) (*unitSections, *inlineTable) {
		<-release
		return loadInlines(path)
	}
	got, ok := f.InlineChainReady(call)
	if ok || got != nil {
		t.Errorf("unread: %q, ready %v; want not ready", got, ok)
	}
	if f.WaitInlines(time.After(10 * time.Millisecond)) {
		t.Error("WaitInlines says a held reader is done")
	}
	close(release)
	if !f.WaitInlines(nil) {
		t.Fatal("WaitInlines without a timeout gave up")
	}
	if got, ok := f.InlineChainReady(call); !ok || !reflect.DeepEqual(got, []string{"depth3", "depth2"}) {
		t.Errorf("once read: %q, ready %v", got, ok)
	}
}

// TestPreloadOnlyWithAranges: PreloadInlines starts reading a file whose
// units .debug_aranges finds (gcc's), and leaves a file that would be
// read whole (Go's, clang's: here gcc's with .debug_aranges removed)
// until a frame is named.
func TestPreloadOnlyWithAranges(t *testing.T) {
	reading := func(f *File) bool {
		inlineCache.Lock()
		ix := inlineCache.tabs[f.key]
		inlineCache.Unlock()
		if ix == nil {
			return false
		}
		ix.mu.Lock()
		defer ix.mu.Unlock()
		return ix.reading || ix.loaded
	}
	prog := bpftest.BuildC(t, t.TempDir(), "inl", inlineSrc, "-O2", "-g")
	c, err := Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	whole := prog + ".noaranges"
	if out, err := exec.Command("objcopy", "--remove-section", ".debug_aranges", prog, whole).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	g, err := Open(whole)
	if err != nil {
		t.Fatal(err)
	}
	if !c.HasDWARF() || !c.aranges || !g.HasDWARF() || g.aranges {
		t.Fatalf("gcc -g: DWARF %v, aranges %v; without aranges: DWARF %v, aranges %v", c.HasDWARF(), c.aranges, g.HasDWARF(), g.aranges)
	}
	c.PreloadInlines()
	g.PreloadInlines()
	if !reading(c) {
		t.Error("a gcc -g file is not read by PreloadInlines")
	}
	if reading(g) {
		t.Error("a file without .debug_aranges, read whole, is read by PreloadInlines")
	}
	c.WaitInlines(nil)
}

// libcDebug returns libc's separate debug file, or skips.
func libcDebug(b *testing.B) *File {
	lib, err := Open("/usr/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		b.Skip(err)
	}
	d, err := DebugFile(lib)
	if err != nil || !d.HasDWARF() {
		b.Skip("libc's debug file is not installed (libc6-dbg)")
	}
	return d
}

// BenchmarkReadInlinesLibc: reading libc's inline table from its debug
// file (libc6-dbg), once per iteration. dwarfbytes are the sections read
// (what a reading allocates is B/op), heldbytes the heap the table keeps
// once the DWARF is let go.
func BenchmarkReadInlinesLibc(b *testing.B) {
	d := libcDebug(b)
	var t *inlineTable
	for b.Loop() {
		t = readInlines(d.Path)
	}
	var before, after runtime.MemStats
	t = nil
	runtime.GC()
	runtime.ReadMemStats(&before)
	t = readInlines(d.Path)
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "heldbytes")
	ef, err := elf.Open(d.Path)
	if err != nil {
		b.Fatal(err)
	}
	defer ef.Close()
	_, size, _ := inlineDWARF(ef)
	b.ReportMetric(float64(size), "dwarfbytes")
	b.ReportMetric(float64(len(t.ranges)), "ranges")
	b.ReportMetric(float64(t.weight()), "weight")
}

// BenchmarkFirstChainLibc: a first lookup in libc, from nothing read:
// its sections read and the unit holding the address walked, once per
// iteration. heldbytes is what the index keeps after it.
func BenchmarkFirstChainLibc(b *testing.B) {
	d := libcDebug(b)
	whole := readInlines(d.Path)
	if whole == nil || len(whole.ranges) == 0 {
		b.Skip("no inline ranges")
	}
	addr := whole.ranges[len(whole.ranges)/2].lo
	whole = nil
	first := func() *inlineIndex {
		ix := &inlineIndex{path: d.Path, units: map[uint64]*inlineTable{}}
		for {
			if _, ok := ix.chain(addr); ok {
				return ix
			}
			ix.wait(nil)
		}
	}
	for b.Loop() {
		first()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ix := first()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "heldbytes")
	runtime.KeepAlive(ix)
}

// BenchmarkInlineChainLibc: one lookup in libc's table, once read.
func BenchmarkInlineChainLibc(b *testing.B) {
	d := libcDebug(b)
	t := readInlines(d.Path)
	if t == nil || len(t.ranges) == 0 {
		b.Skip("no inline ranges")
	}
	for _, r := range t.ranges {
		d.InlineChainReady(r.lo)
	}
	d.WaitInlines(nil)
	i := 0
	for b.Loop() {
		d.InlineChain(t.ranges[i%len(t.ranges)].lo)
		i += 7
	}
}
