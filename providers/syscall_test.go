package providers

import (
	"os"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// oneProbe returns the one probe desc matches.
func oneProbe(t *testing.T, prov Provider, desc string) *Probe {
	t.Helper()
	ps, err := prov.Probes(mustDesc(t, desc))
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 {
		t.Fatalf("%s: %d probes, want 1", desc, len(ps))
	}
	return ps[0]
}

func TestSyscallProbes(t *testing.T) {
	newHarness(t, denseLayout) // for the root check
	s := NewSyscall(100)
	entry := oneProbe(t, s, "syscall:vmlinux:getpid:entry")
	ret := oneProbe(t, s, "syscall::getpid:return")
	if entry.ID < 100 || entry.ID%2 != 0 || ret.ID != entry.ID+1 {
		t.Errorf("IDs: entry %d, return %d", entry.ID, ret.ID)
	}
	if entry.ProgType != ebpf.RawTracepoint || entry.String() != "syscall:vmlinux:getpid:entry" {
		t.Errorf("entry probe: %+v", entry)
	}
	if sp := entry.Private.(syscallProbe); sp.nr != unix.SYS_GETPID || !sp.entry {
		t.Errorf("private: %+v", sp)
	}

	open := oneProbe(t, s, "syscall::openat:entry")
	want := []Arg{
		{Type: "int", Kind: ArgInt, Size: 4, Signed: true},
		{Type: "const char *", Kind: ArgPointer, Size: 8},
		{Type: "int", Kind: ArgInt, Size: 4, Signed: true},
		{Type: "umode_t", Kind: ArgInt, Size: 2},
	}
	if len(open.Args) != len(want) {
		t.Fatalf("openat args: %+v", open.Args)
	}
	for i := range want {
		if open.Args[i] != want[i] {
			t.Errorf("openat arg %d: %+v, want %+v", i, open.Args[i], want[i])
		}
	}
	if r := oneProbe(t, s, "syscall::openat:return"); len(r.Args) != 2 || !r.Args[0].Signed {
		t.Errorf("openat return args: %+v", r.Args)
	}

	all, err := s.Probes(Desc{})
	if err != nil {
		t.Fatal(err)
	}
	listed, err := s.List(Desc{})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := s.NumProbes()
	if len(all) != n || len(listed) != n || n < 600 {
		t.Fatalf("Probes %d, List %d, NumProbes %d", len(all), len(listed), n)
	}
	for i := range all {
		if all[i].ID != 100+i || listed[i].ID != all[i].ID || listed[i].String() != all[i].String() || listed[i].Args != nil {
			t.Fatalf("probe %d: Probes %v (%d), List %v (%d)", i, all[i], all[i].ID, listed[i], listed[i].ID)
		}
	}
	for _, d := range []string{"syscall::getpid:exit", "syscall:kernel::", "tick-1s"} {
		if ps, _ := s.Probes(mustDesc(t, d)); len(ps) != 0 {
			t.Errorf("%s matched %d probes", d, len(ps))
		}
	}
}

// TestSyscallEntry attaches to getpid's entry through the raw sys_enter
// tracepoint, calls getpid with recognisable (ignored) arguments, and checks
// the prologue's arguments and that other syscalls are filtered out.
func TestSyscallEntry(t *testing.T) {
	for _, l := range []layout{denseLayout, sparseLayout} {
		h := newHarness(t, l)
		s := NewSyscall(1)
		pr := oneProbe(t, s, "syscall::getpid:entry")
		prog := h.program(ebpf.RawTracepoint, s, pr, threadFilter(t)...)
		c, err := s.Attach(pr, prog)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			unix.RawSyscall6(unix.SYS_GETPID, 11, 22, 33, 44, 55, 66)
		}
		syscall.Getppid()
		unix.RawSyscall6(unix.SYS_GETTID, 1, 2, 3, 4, 5, 6)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		syscall.Getpid()
		if n := h.total(); n != 3 {
			t.Errorf("counted %d getpid entries, want 3", n)
		}
		args, errno := h.last()
		if want := [NumArgs]uint64{11, 22, 33, 44, 55, 66}; args != want || errno != 0 {
			t.Errorf("args %v errno %d, want %v errno 0", args, errno, want)
		}
	}
}

// TestSyscallReturn checks return values and errno on sys_exit.
func TestSyscallReturn(t *testing.T) {
	for _, l := range []layout{denseLayout, sparseLayout} {
		h := newHarness(t, l)
		s := NewSyscall(1)

		pr := oneProbe(t, s, "syscall::close:return")
		prog := h.program(ebpf.RawTracepoint, s, pr, threadFilter(t)...)
		c, err := s.Attach(pr, prog)
		if err != nil {
			t.Fatal(err)
		}
		_, _, e := unix.RawSyscall(unix.SYS_CLOSE, ^uintptr(0), 0, 0)
		syscall.Getpid()
		c.Close()
		if e != unix.EBADF {
			t.Fatalf("close(-1): %v", e)
		}
		args, errno := h.last()
		ebadf := uint64(unix.EBADF)
		if want := [NumArgs]uint64{-ebadf, -ebadf}; args != want || errno != ebadf || h.total() != 1 {
			t.Errorf("close(-1): args %v errno %d count %d, want %v errno %d count 1", args, errno, h.total(), want, ebadf)
		}

		pr = oneProbe(t, s, "syscall::getpid:return")
		prog = h.program(ebpf.RawTracepoint, s, pr, threadFilter(t)...)
		c, err = s.Attach(pr, prog)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Getpid()
		c.Close()
		args, errno = h.last()
		pid := uint64(os.Getpid())
		if want := [NumArgs]uint64{pid, pid}; args != want || errno != 0 || h.total() != 2 {
			t.Errorf("getpid: args %v errno %d count %d, want %v errno 0 count 2", args, errno, h.total(), want)
		}
	}
}

func TestSyscallAttachWrongType(t *testing.T) {
	newHarness(t, denseLayout)
	s := NewSyscall(1)
	pr := oneProbe(t, s, "syscall::getpid:entry")
	if _, err := s.Attach(pr, trivialProgram(t, ebpf.TracePoint)); err == nil {
		t.Error("attaching a tracepoint program to a syscall probe: no error")
	}
}

// trivialProgram loads "return 0" as typ.
func trivialProgram(t *testing.T, typ ebpf.ProgramType) *ebpf.Program {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: typ, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	return prog
}
