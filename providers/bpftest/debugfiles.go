package bpftest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Programs stripped as distributions strip them, for the tests of
// symbols from debug information.

// binutils runs one of binutils' (or xz's) tools in dir, skipping the
// test when it is missing and failing it when the tool fails.
func binutils(t testing.TB, dir, name string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		Skip(t, name+" is not installed (apt-get install binutils xz-utils)")
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
	}
}

// SplitDebug splits the program at path as a distribution's packaging
// does: its debug file apart, as path.debug, whose path it returns, and
// the program stripped of every symbol table; with link, the program
// gets a .gnu_debuglink to the debug file.
func SplitDebug(t testing.TB, path string, link bool) string {
	t.Helper()
	dir, base := filepath.Dir(path), filepath.Base(path)
	binutils(t, dir, "objcopy", "--only-keep-debug", base, base+".debug")
	binutils(t, dir, "strip", "--strip-all", base)
	if link {
		binutils(t, dir, "objcopy", "--add-gnu-debuglink="+base+".debug", base)
	}
	return path + ".debug"
}

// AddMiniDebugInfo strips the program at path and gives it a
// .gnu_debugdata section as Fedora's and Debian's packaging does: the
// debug file's symbol table, cut to the functions .dynsym lacks (here
// keep, the names given), xz-compressed.
func AddMiniDebugInfo(t testing.TB, path string, keep ...string) {
	t.Helper()
	dir, base := filepath.Dir(path), filepath.Base(path)
	debug := SplitDebug(t, path, false)
	args := []string{"-S", "--remove-section", ".gdb_index", "--remove-section", ".comment"}
	for _, k := range keep {
		args = append(args, "--keep-symbol="+k)
	}
	binutils(t, dir, "objcopy", append(args, base+".debug", base+".mini")...)
	binutils(t, dir, "xz", "-f", base+".mini")
	binutils(t, dir, "objcopy", "--add-section", ".gnu_debugdata="+base+".mini.xz", base)
	os.Remove(debug)
	os.Remove(path + ".mini.xz")
}

// StripSectionHeaders removes the section headers of the 64-bit
// little-endian ELF file at path, as sstrip does: the program still
// runs (the kernel loads segments), but no section can be found by name.
func StripSectionHeaders(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 64 || string(b[:4]) != "\x7fELF" || b[4] != 2 || b[5] != 1 {
		t.Fatalf("%s is not a 64-bit little-endian ELF file", path)
	}
	// e_shoff (8 bytes at 0x28), e_shnum (0x3c), e_shstrndx (0x3e).
	clear(b[0x28:0x30])
	clear(b[0x3c:0x40])
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
