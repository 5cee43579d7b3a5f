package elfsym

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// run runs a command in dir, failing the test on error.
func run(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
	}
}

// AddMiniDebugInfo strips the program at path and gives it a
// .gnu_debugdata section the way Fedora's and Debian's packaging does:
// the debug file's symbol table, cut to the functions .dynsym lacks
// (here: keep, a static function's name), xz-compressed.
func addMiniDebugInfo(t *testing.T, path string, keep ...string) {
	t.Helper()
	for _, tool := range []string{"objcopy", "strip", "xz"} {
		if _, err := exec.LookPath(tool); err != nil {
			bpftest.Skip(t, tool+" is not installed (binutils, xz-utils)")
		}
	}
	dir, base := filepath.Dir(path), filepath.Base(path)
	run(t, dir, "objcopy", "--only-keep-debug", base, base+".debug")
	args := []string{"-S", "--remove-section", ".gdb_index", "--remove-section", ".comment"}
	for _, k := range keep {
		args = append(args, "--keep-symbol="+k)
	}
	run(t, dir, "objcopy", append(args, base+".debug", base+".mini")...)
	run(t, dir, "xz", "-f", base+".mini")
	run(t, dir, "strip", "--strip-all", base)
	run(t, dir, "objcopy", "--add-section", ".gnu_debugdata="+base+".mini.xz", base)
	os.Remove(filepath.Join(dir, base+".debug"))
}

// TestMiniDebugInfo: a stripped program with MiniDebugInfo has its static
// function named, at the address it runs at, and its exported ones still
// come from .dynsym.
func TestMiniDebugInfo(t *testing.T) {
	dir := t.TempDir()
	path := bpftest.BuildC(t, dir, "mini", cProg, "-O1", "-rdynamic")
	full, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want, ok := full.Lookup("hidden")
	if !ok {
		t.Fatal("the unstripped program has no hidden")
	}
	addMiniDebugInfo(t, path, "hidden")
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Stripped() || !f.MiniDebug {
		t.Errorf("Stripped %v, MiniDebug %v; want both", f.Stripped(), f.MiniDebug)
	}
	got, ok := f.ByAddress(want.Value + 1)
	if !ok || got.Name != "hidden" || got.Value != want.Value || got.Source != MiniDebug || got.Global {
		t.Errorf("ByAddress(hidden+1) = %+v, %v; want hidden from .gnu_debugdata at %#x", got, ok, want.Value)
	}
	if s, ok := f.Lookup("foo"); !ok || s.Source != DynSym {
		t.Errorf("Lookup(foo) = %+v, %v; want it from .dynsym", s, ok)
	}

	// A corrupt section costs only its own symbols.
	bad := filepath.Join(dir, "bad")
	run(t, dir, "objcopy", "--update-section", ".gnu_debugdata=/dev/null", "--set-section-flags", ".gnu_debugdata=readonly", path, bad)
	b, err := Open(bad)
	if err != nil {
		t.Fatalf("a corrupt .gnu_debugdata makes the file unreadable: %v", err)
	}
	if _, ok := b.Lookup("hidden"); ok || b.MiniDebug {
		t.Error("hidden named from an empty .gnu_debugdata")
	}
	if _, ok := b.Lookup("foo"); !ok {
		t.Error("a corrupt .gnu_debugdata loses .dynsym's functions")
	}
}
