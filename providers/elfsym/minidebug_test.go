package elfsym

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

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
	bpftest.AddMiniDebugInfo(t, path, "hidden")
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
	if b, err := exec.Command("objcopy", "--update-section", ".gnu_debugdata=/dev/null", path, bad).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, b)
	}
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
