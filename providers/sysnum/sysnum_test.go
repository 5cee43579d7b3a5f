package sysnum

import (
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/tracefs"
	"golang.org/x/sys/unix"
)

func TestLookup(t *testing.T) {
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skip("no syscall table for", runtime.GOARCH)
	}
	for name, want := range map[string]int{
		"getpid":     unix.SYS_GETPID,
		"openat":     unix.SYS_OPENAT,
		"newfstatat": unix.SYS_NEWFSTATAT,
		"newfstat":   unix.SYS_FSTAT,
		"newuname":   unix.SYS_UNAME,
		"umount":     unix.SYS_UMOUNT2,
		"sendfile64": unix.SYS_SENDFILE,
	} {
		if got, ok := Lookup(name); !ok || got != want {
			t.Errorf("Lookup(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
	for _, name := range []string{"", "fstat", "uname", "nosuchcall", "zzz"} {
		if nr, ok := Lookup(name); ok {
			t.Errorf("Lookup(%q) = %d, want not found", name, nr)
		}
	}
	if !sort.SliceIsSorted(table[:], func(i, j int) bool { return table[i].name < table[j].name }) {
		t.Error("table is not sorted")
	}
}

// TestTracefsNames checks that every syscall this kernel traces has a
// number: a miss means a kernel name needs a rename in gensysnum.
func TestTracefsNames(t *testing.T) {
	bpftest.Require(t)
	evs, err := tracefs.Events()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		name, ok := strings.CutPrefix(e.Name, "sys_enter_")
		if e.Group != "syscalls" || !ok {
			continue
		}
		n++
		if _, ok := Lookup(name); !ok {
			t.Errorf("syscall %s (tracefs) has no number", name)
		}
	}
	if n == 0 {
		t.Fatal("tracefs lists no syscalls:sys_enter_* events")
	}
	t.Logf("%d traced syscalls, all numbered; table has %d", n, Len())
}
