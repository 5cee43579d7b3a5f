package elfsym

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/procmaps"
)

const cProg = `
__attribute__((noinline, noipa)) int foo(int x) { return x * 2; }
static __attribute__((noinline, noipa)) int hidden(int x) { return x + 1; }
int main(void) { return foo(1) + hidden(2) - 7; }
`

// sectionOffset computes a virtual address's file offset through the
// section headers: an independent check of FileOffset, which uses the
// program headers.
func sectionOffset(t *testing.T, path string, vaddr uint64) uint64 {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	for _, s := range ef.Sections {
		if s.Type == elf.SHT_PROGBITS && s.Addr <= vaddr && vaddr < s.Addr+s.Size {
			return vaddr - s.Addr + s.Offset
		}
	}
	t.Fatalf("%s: %#x in no section", path, vaddr)
	return 0
}

func TestCProgram(t *testing.T) {
	dir := t.TempDir()
	for _, pie := range []bool{true, false} {
		flags := []string{"-O1", "-pie", "-fPIE"}
		name := "pie"
		if !pie {
			flags, name = []string{"-O1", "-no-pie"}, "nopie"
		}
		path := bpftest.BuildC(t, dir, name, cProg, flags...)
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]elf.Type{true: elf.ET_DYN, false: elf.ET_EXEC}[pie]; f.Type != want {
			t.Errorf("%s: type %v, want %v", name, f.Type, want)
		}
		if f.Stripped() || f.Sym != Full || f.Go {
			t.Errorf("%s: Sym %v, Go %v", name, f.Sym, f.Go)
		}
		for _, fn := range []string{"foo", "hidden", "main"} {
			s, ok := f.Lookup(fn)
			if !ok || s.Size == 0 {
				t.Errorf("%s: Lookup(%s) = %+v, %v", name, fn, s, ok)
				continue
			}
			if s.Global == (fn == "hidden") {
				t.Errorf("%s: %s Global = %v", name, fn, s.Global)
			}
			off, err := f.FileOffset(s.Value)
			if want := sectionOffset(t, path, s.Value); err != nil || off != want {
				t.Errorf("%s: FileOffset(%s) = %#x, %v; want %#x", name, fn, off, err, want)
			}
			if back, err := f.Address(off); err != nil || back != s.Value {
				t.Errorf("%s: Address(%#x) = %#x, %v; want %#x", name, off, back, err, s.Value)
			}
			if got, ok := f.ByAddress(s.Value + s.Size - 1); !ok || got.Name != fn {
				t.Errorf("%s: ByAddress(end of %s) = %+v, %v", name, fn, got, ok)
			}
		}
		if _, ok := f.Lookup("nosuch"); ok {
			t.Errorf("%s: Lookup(nosuch) succeeded", name)
		}
		if _, ok := f.ByAddress(0); ok {
			t.Errorf("%s: ByAddress(0) succeeded", name)
		}
		for i := 1; i < len(f.Symbols()); i++ {
			if f.Symbols()[i].Value < f.Symbols()[i-1].Value {
				t.Fatalf("%s: Symbols not in address order", name)
			}
		}

		// Stripped: no .symtab; the non-PIE one exports no function.
		stripped := path + ".stripped"
		if b, err := exec.Command("strip", "-o", stripped, path).CombinedOutput(); err != nil {
			bpftest.Skip(t, "strip: "+err.Error()+" "+string(b))
		}
		sf, err := Open(stripped)
		if err != nil {
			t.Fatal(err)
		}
		if !sf.Stripped() {
			t.Errorf("%s: stripped file not Stripped", name)
		}
		if _, ok := sf.Lookup("foo"); ok {
			t.Errorf("%s: stripped file names foo", name)
		}
		if !pie && sf.Sym != None {
			t.Errorf("%s: stripped non-PIE has Sym %v (%d symbols), want None", name, sf.Sym, len(sf.Symbols()))
		}
	}
}

// TestValue checks that data objects, which are not functions, are found
// by Value (USDT operands name them), and functions too.
func TestValue(t *testing.T) {
	path := bpftest.BuildC(t, t.TempDir(), "v", `
long counter = 5;
static int tab[2] __attribute__((used)) = {1, 2};
int main(void) { return counter + tab[1]; }
`, "-O1")
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, _ := ef.Symbols()
	for _, name := range []string{"counter", "tab", "main"} {
		want := uint64(0)
		for _, s := range syms {
			if s.Name == name {
				want = s.Value
			}
		}
		if v, ok := f.Value(name); !ok || v != want || want == 0 {
			t.Errorf("Value(%q) = %#x, %v; want %#x", name, v, ok, want)
		}
	}
	if _, ok := f.Lookup("counter"); ok {
		t.Error("Lookup(counter): a data object among the functions")
	}
	if _, ok := f.Value("nosuch"); ok {
		t.Error("Value(nosuch) found")
	}
}

func TestCache(t *testing.T) {
	dir := t.TempDir()
	path := bpftest.BuildC(t, dir, "p", cProg)
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Open(path)
	if a != b {
		t.Error("second Open parsed the file again")
	}
	// A changed file is parsed again.
	later := time.Now().Add(time.Hour)
	os.Chtimes(path, later, later)
	c, _ := Open(path)
	if c == a {
		t.Error("Open after a change returned the stale parse")
	}
}

func TestNotELF(t *testing.T) {
	path := filepath.Join(t.TempDir(), "text")
	os.WriteFile(path, []byte("not an ELF file\n"), 0o644)
	if _, err := Open(path); err == nil {
		t.Error("no error for a text file")
	}
	if _, err := Open(path + ".missing"); err == nil {
		t.Error("no error for a missing file")
	}
}

const goProg = `package main

//go:noinline
func work(n int) int { return n * 3 }

func main() { println(work(2)) }
`

func TestGoProgram(t *testing.T) {
	dir := t.TempDir()
	for _, strip := range []bool{false, true} {
		var flags []string
		if strip {
			flags = []string{"-ldflags=-s"}
		}
		path := bpftest.BuildGo(t, dir, map[bool]string{false: "full", true: "stripped"}[strip], goProg, flags...)
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if !f.Go || f.Stripped() != strip {
			t.Errorf("strip=%v: Go %v, Stripped %v", strip, f.Go, f.Stripped())
		}
		s, ok := f.Lookup("main.work")
		if !ok || s.Size == 0 {
			t.Fatalf("strip=%v: Lookup(main.work) = %+v, %v", strip, s, ok)
		}
		if want := map[bool]Source{false: SymTab, true: GoPCLNTab}[strip]; s.Source != want {
			t.Errorf("strip=%v: main.work from %v, want %v", strip, s.Source, want)
		}
		off, err := f.FileOffset(s.Value)
		if want := sectionOffset(t, path, s.Value); err != nil || off != want {
			t.Errorf("strip=%v: FileOffset = %#x, %v; want %#x", strip, off, err, want)
		}
	}
}

// TestGoStripped: a Go binary built with -ldflags='-s -w' (no .symtab,
// no DWARF) has its functions named from .gopclntab, and so has one
// stripped of its section headers too, where the table is found in its
// read-only segment.
func TestGoStripped(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"sw", nil},
		{"swpie", []string{"-buildmode=pie"}},
	} {
		path := bpftest.BuildGo(t, dir, tc.name, goProg, append([]string{"-ldflags=-s -w"}, tc.flags...)...)
		headerless := path + ".noshdr"
		b, _ := os.ReadFile(path)
		os.WriteFile(headerless, b, 0o755)
		bpftest.StripSectionHeaders(t, headerless)
		for _, p := range []string{path, headerless} {
			f, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			s, ok := f.Lookup("main.work")
			if !f.Go || !ok || s.Source != GoPCLNTab || s.Size == 0 {
				t.Fatalf("%s: Go %v, Lookup(main.work) = %+v, %v", filepath.Base(p), f.Go, s, ok)
			}
			if want := sectionOffset(t, path, s.Value); mustOffset(t, f, s.Value) != want {
				t.Errorf("%s: main.work at file offset %#x, want %#x", filepath.Base(p), mustOffset(t, f, s.Value), want)
			}
			if got, ok := f.ByAddress(s.Value + 1); !ok || got.Name != "main.work" {
				t.Errorf("%s: ByAddress(main.work+1) = %+v, %v", filepath.Base(p), got, ok)
			}
			if _, ok := f.Lookup("runtime.main"); !ok {
				t.Errorf("%s: no runtime.main", filepath.Base(p))
			}
		}
	}
}

// TestNotGo: a C program has no Go function table, with its section
// headers or without.
func TestNotGo(t *testing.T) {
	path := bpftest.BuildC(t, t.TempDir(), "c", cProg)
	bpftest.StripSectionHeaders(t, path)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Go {
		t.Error("a C program without section headers taken for a Go one")
	}
}

func mustOffset(t *testing.T, f *File, v uint64) uint64 {
	t.Helper()
	off, err := f.FileOffset(v)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

// TestSymboliseSelf names a run-time address of this test binary the way
// stack symbolisation will: mapping, file offset, virtual address, symbol.
func TestSymboliseSelf(t *testing.T) {
	pc := uint64(reflect.ValueOf(TestSymboliseSelf).Pointer())
	ms, err := procmaps.Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	m, ok := procmaps.Find(ms, pc)
	if !ok {
		t.Fatalf("%#x is in no mapping", pc)
	}
	f, err := Open(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	vaddr, err := f.Address(m.FileOffset(pc))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := f.ByAddress(vaddr)
	if want := "github.com/dstar-trace/dstar/providers/elfsym.TestSymboliseSelf"; !ok || s.Name != want {
		t.Errorf("ByAddress(%#x) = %q, %v; want %q", vaddr, s.Name, ok, want)
	}
}

// TestDebugFile: a stripped libc's build ID leads to its debug file (when
// the distribution's debug package is installed), which names the local
// functions .dynsym does not, at the library's own addresses.
func TestDebugFile(t *testing.T) {
	const libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	f, err := Open(libc)
	if err != nil {
		t.Skipf("no %s: %v", libc, err)
	}
	if len(f.BuildID) != 20 {
		t.Fatalf("build ID %x, want 20 bytes", f.BuildID)
	}
	d, err := DebugFile(f)
	if err != nil {
		t.Skipf("no debug file for libc: %v", err)
	}
	s, ok := d.Lookup("__libc_start_call_main")
	if !ok {
		t.Fatalf("%s has no __libc_start_call_main", d.Path)
	}
	if _, ok := f.ByAddress(s.Value); ok && !f.Stripped() {
		t.Skip("libc is not stripped here")
	}
	if got, ok := d.ByAddress(s.Value + 1); !ok || got.Name != "__libc_start_call_main" {
		t.Errorf("ByAddress(%#x) = %v, %v", s.Value+1, got, ok)
	}
}

// TestCacheBudget: past its budget the cache lets the least recently
// used file go, and keeps the one just used.
func TestCacheBudget(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(libc); err != nil {
		t.Skipf("no %s", libc)
	}
	saved := cacheBudget
	defer func() { cacheBudget = saved }()
	cache.Lock()
	clear(cache.files)
	cache.syms = 0
	cache.Unlock()
	a, err := Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	cacheBudget = a.weight() // room for one file
	if _, err := Open(libc); err != nil {
		t.Fatal(err)
	}
	cache.Lock()
	n, syms := len(cache.files), cache.syms
	cache.Unlock()
	if n != 1 {
		t.Errorf("%d files cached past the budget, want 1", n)
	}
	if b, _ := Open(libc); syms != b.weight() {
		t.Errorf("cache counts %d symbols, holds %d", syms, b.weight())
	}
	if b, _ := Open(exe); b == a {
		t.Error("the file evicted was not parsed again")
	}
}
