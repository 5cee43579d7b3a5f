package elfsym

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// splitDebug builds cProg into dir/name and splits it as distributions
// do: the debug file (name.debug) apart, the program stripped, and a
// .gnu_debuglink to the debug file when link is set. It returns the
// program's path, the debug file's, and the address of the static
// function hidden.
func splitDebug(t *testing.T, dir, name string, link bool, flags ...string) (prog, debug string, hidden uint64) {
	t.Helper()
	prog = bpftest.BuildC(t, dir, name, cProg, append([]string{"-O1"}, flags...)...)
	full, err := Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	s, ok := full.Lookup("hidden")
	if !ok {
		t.Fatal("no hidden in the unstripped program")
	}
	return prog, bpftest.SplitDebug(t, prog, link), s.Value
}

// withDebugDir points debugDir at a fresh directory for one test.
func withDebugDir(t *testing.T) string {
	t.Helper()
	saved := debugDir
	debugDir = t.TempDir()
	t.Cleanup(func() { debugDir = saved })
	return debugDir
}

// named checks that prog's debug file names hidden at addr (and is the
// file want, when want is set).
func named(t *testing.T, prog, want string, addr uint64) {
	t.Helper()
	f, err := Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.ByAddress(addr); ok {
		t.Fatalf("%s: the stripped program names %#x itself", prog, addr)
	}
	d, err := DebugFile(f)
	if err != nil {
		t.Fatalf("DebugFile: %v", err)
	}
	if want != "" && d.Path != want {
		t.Errorf("debug file %s, want %s", d.Path, want)
	}
	if s, ok := d.ByAddress(addr + 1); !ok || s.Name != "hidden" {
		t.Errorf("%s: ByAddress(hidden+1) = %+v, %v", d.Path, s, ok)
	}
}

// TestDebugFileByBuildID: a debug file in the .build-id tree is found by
// the program's build ID, and one of another build is not.
func TestDebugFileByBuildID(t *testing.T) {
	root := withDebugDir(t)
	dir := t.TempDir()
	prog, debug, hidden := splitDebug(t, dir, "bid", false, "-Wl,--build-id")
	f, _ := Open(prog)
	if len(f.BuildID) == 0 {
		t.Fatal("no build ID")
	}
	if _, err := DebugFile(f); err == nil {
		t.Fatal("a debug file found before one is installed")
	}
	want := BuildIDPath(root, f.BuildID)
	os.MkdirAll(filepath.Dir(want), 0o755)
	if err := os.Rename(debug, want); err != nil {
		t.Fatal(err)
	}
	named(t, prog, want, hidden)

	// Another build's debug file at that path is not used.
	_, otherDebug, _ := splitDebug(t, dir, "other", false, "-Wl,--build-id", "-g")
	if err := os.Rename(otherDebug, want); err != nil {
		t.Fatal(err)
	}
	if d, err := DebugFile(f); err == nil {
		t.Errorf("the debug file of another build used: %s", d.Path)
	}
}

// TestDebugLink: .gnu_debuglink's file is found beside the program, in
// its .debug directory and under the debug root with the program's
// directory; one whose CRC differs is refused.
func TestDebugLink(t *testing.T) {
	root := withDebugDir(t)
	dir := t.TempDir()
	prog, debug, hidden := splitDebug(t, dir, "linked", true, "-Wl,--build-id=none")
	named(t, prog, debug, hidden)

	sub := filepath.Join(dir, ".debug", "linked.debug")
	os.MkdirAll(filepath.Dir(sub), 0o755)
	if err := os.Rename(debug, sub); err != nil {
		t.Fatal(err)
	}
	named(t, prog, sub, hidden)

	under := filepath.Join(root, dir, "linked.debug")
	os.MkdirAll(filepath.Dir(under), 0o755)
	if err := os.Rename(sub, under); err != nil {
		t.Fatal(err)
	}
	named(t, prog, under, hidden)

	// Changed since the link was made: its CRC no longer matches.
	b, _ := os.ReadFile(under)
	os.WriteFile(under, append(b, 0), 0o644)
	f, _ := Open(prog)
	if d, err := DebugFile(f); err == nil {
		t.Errorf("a debug file with the wrong CRC used: %s", d.Path)
	}
}
