package procmaps

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `55aa3ef1d000-55aa3ef1f000 r--p 00000000 fe:00 247278                     /usr/bin/head
55aa3ef1f000-55aa3ef25000 r-xp 00002000 fe:00 247278                     /usr/bin/head
55aa3ef2a000-55aa3ef4b000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000001000 r-xp 00001000 fe:00 99                         /tmp/my lib.so (deleted)
7f0000002000-7f0000003000 r-xp 00003000 fe:00 12                         /lib/libc.so.6
7f0000004000-7f0000005000 rw-p 00000000 00:00 0 
7ffd1000000-7ffd1002000 r-xp 00000000 00:00 0                          [vdso]
`

func TestParse(t *testing.T) {
	ms, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 7 {
		t.Fatalf("%d mappings, want 7", len(ms))
	}
	m := ms[1]
	if m.Start != 0x55aa3ef1f000 || m.End != 0x55aa3ef25000 || m.Offset != 0x2000 ||
		m.Perms != "r-xp" || m.Dev != "fe:00" || m.Inode != 247278 || m.Path != "/usr/bin/head" || !m.Exec() || !m.IsFile() {
		t.Errorf("mapping 1: %+v", m)
	}
	if got := m.FileOffset(0x55aa3ef1f010); got != 0x2010 {
		t.Errorf("FileOffset = %#x, want 0x2010", got)
	}
	if d := ms[3]; d.Path != "/tmp/my lib.so" || !d.Deleted {
		t.Errorf("deleted mapping: %+v", d)
	}
	if a := ms[5]; a.Path != "" || a.IsFile() {
		t.Errorf("anonymous mapping: %+v", a)
	}
	if ms[2].IsFile() || ms[6].IsFile() {
		t.Errorf("[heap] or [vdso] taken for files")
	}
	var names []string
	for _, mod := range Modules(ms) {
		names = append(names, mod.Name())
	}
	if got := strings.Join(names, ","); got != "head,libc.so.6" {
		t.Errorf("modules: %s", got)
	}
	if m, ok := Find(ms, 0x7f0000002800); !ok || m.Path != "/lib/libc.so.6" {
		t.Errorf("Find: %+v, %v", m, ok)
	}
	if _, err := Parse(strings.NewReader("zzz r-xp\n")); err == nil {
		t.Error("malformed line: no error")
	}
}

func TestReadSelf(t *testing.T) {
	ms, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := Executable(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil || self != exe {
		t.Fatalf("Executable = %q, os.Executable = %q (%v)", exe, self, err)
	}
	// The code running this test is in an executable mapping of the
	// test binary.
	found := false
	for _, mod := range Modules(ms) {
		if mod.Path == exe {
			found = true
		}
	}
	if !found {
		t.Errorf("test binary %s not among the modules of /proc/self/maps", exe)
	}
}

func TestReadNoProcess(t *testing.T) {
	_, err := Read(1 << 30)
	if !errors.Is(err, ErrNoProcess) {
		t.Errorf("err = %v, want ErrNoProcess", err)
	}
	if _, err := Executable(1 << 30); !errors.Is(err, ErrNoProcess) {
		t.Errorf("Executable: err = %v, want ErrNoProcess", err)
	}
}

func TestNeeded(t *testing.T) {
	exe := "/bin/true"
	if _, err := os.Stat(exe); err != nil {
		t.Skip(err)
	}
	libs := Needed(os.Getpid(), exe)
	found := false
	for _, l := range libs {
		found = found || strings.HasPrefix(filepath.Base(l), "libc.so")
	}
	if !found {
		t.Errorf("Needed(%s) = %q, want libc among them", exe, libs)
	}
}

func TestExists(t *testing.T) {
	if !Exists(os.Getpid()) {
		t.Error("Exists(self) = false")
	}
	if Exists(1 << 30) {
		t.Error("Exists(1<<30) = true")
	}
}
