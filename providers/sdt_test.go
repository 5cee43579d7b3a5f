package providers

import (
	"encoding/binary"
	"os/exec"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

func TestSDTProbes(t *testing.T) {
	newHarness(t, denseLayout) // for the root check
	s := NewSDT(func() (int, error) { return 1000, nil })
	pr := oneProbe(t, s, "sdt:sched::sched_process_exec")
	if pr.Module != "sched" || pr.Function != "" || pr.ProgType != ebpf.TracePoint || pr.ID < 1000 {
		t.Errorf("probe: %+v", pr)
	}
	want := []Arg{
		{Name: "filename", Type: "char[]", Kind: ArgDataLoc, Offset: 8, Size: 4},
		{Name: "pid", Type: "pid_t", Kind: ArgInt, Offset: 12, Size: 4, Signed: true},
		{Name: "old_pid", Type: "pid_t", Kind: ArgInt, Offset: 16, Size: 4, Signed: true},
	}
	if len(pr.Args) != len(want) {
		t.Fatalf("args: %+v", pr.Args)
	}
	for i := range want {
		if pr.Args[i] != want[i] {
			t.Errorf("arg %d: %+v, want %+v", i, pr.Args[i], want[i])
		}
	}
	sw := oneProbe(t, s, ":::sched_switch")
	if a := findArg(sw.Args, "prev_comm"); a == nil || a.Kind != ArgArray || a.Size != 16 || a.Type != "char[16]" {
		t.Errorf("sched_switch prev_comm: %+v", a)
	}
	open := oneProbe(t, s, "sdt:syscalls::sys_enter_openat")
	if a := findArg(open.Args, "filename"); a == nil || a.Kind != ArgPointer || a.Type != "const char *" {
		t.Errorf("sys_enter_openat filename: %+v", a)
	}

	all, err := s.Probes(mustDesc(t, "sdt:sched::"))
	if err != nil {
		t.Fatal(err)
	}
	listed, err := s.List(mustDesc(t, "sdt:sched::"))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 10 || len(all) != len(listed) {
		t.Fatalf("sched: Probes %d, List %d", len(all), len(listed))
	}
	for i := range all {
		if all[i].ID != listed[i].ID || all[i].String() != listed[i].String() || listed[i].Args != nil || all[i].Args == nil {
			t.Errorf("probe %d: %v (%d) vs %v (%d)", i, all[i], all[i].ID, listed[i], listed[i].ID)
		}
	}
	for _, d := range []string{"sdt:sched:f:sched_switch", "tick-1s", "read:entry", "sdt:no-such::"} {
		if ps, err := s.Probes(mustDesc(t, d)); len(ps) != 0 || err != nil {
			t.Errorf("%s: %v, %v", d, ps, err)
		}
	}
}

func findArg(args []Arg, name string) *Arg {
	for i := range args {
		if args[i].Name == name {
			return &args[i]
		}
	}
	return nil
}

func TestMaybeIdent(t *testing.T) {
	for s, want := range map[string]bool{"": true, "sched": true, "sys_enter_x1": true, "*-x": true,
		"tick-1s": false, "1x": false, "a.b": false} {
		if maybeIdent(s) != want {
			t.Errorf("maybeIdent(%q) = %v", s, !want)
		}
	}
}

// TestSDTExec attaches to sched:sched_process_exec, runs a program, and
// finds its pid in arg0 (the first integer field: the __data_loc filename
// is skipped) and in arg1 (old_pid).
func TestSDTExec(t *testing.T) {
	h := newHarness(t, denseLayout)
	pids, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 8, ValueSize: 8, MaxEntries: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer pids.Close()
	s := NewSDT(func() (int, error) { return 1000, nil })
	pr := oneProbe(t, s, "sdt:sched::sched_process_exec")
	// pids[arg0] = arg1
	prog := h.program(ebpf.TracePoint, s, pr,
		asm.LoadMapPtr(asm.R1, pids.FD()),
		asm.Mov.Reg(asm.R2, regState),
		asm.Add.Imm(asm.R2, int32(denseLayout.argOff(0))),
		asm.Mov.Reg(asm.R3, regState),
		asm.Add.Imm(asm.R3, int32(denseLayout.argOff(1))),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
	)
	c, err := s.Attach(pr, prog)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		c.Close()
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	pid := uint64(cmd.Process.Pid)
	var old uint64
	if err := pids.Lookup(pid, &old); err != nil {
		t.Fatalf("exec of pid %d not seen (%d events): %v", pid, h.total(), err)
	}
	if old != pid {
		t.Errorf("old_pid %d, want %d", old, pid)
	}
}

// TestSDTSyscallArgs attaches to syscalls:sys_enter_openat, served on the
// raw sys_enter tracepoint, and checks that arg0.. are the syscall's
// arguments (__syscall_nr skipped) and that the record's fields say where
// the prologue put them.
func TestSDTSyscallArgs(t *testing.T) {
	h := newHarness(t, denseLayout)
	s := NewSDT(func() (int, error) { return 1000, nil })
	pr := oneProbe(t, s, "sdt:syscalls::sys_enter_openat")
	if pr.ProgType != ebpf.RawTracepoint {
		t.Fatalf("%s is a %v program, want %v", pr, pr.ProgType, ebpf.RawTracepoint)
	}
	for i, want := range []struct {
		name string
		slot int
	}{{"dfd", 1}, {"filename", 2}, {"flags", 3}, {"mode", 4}} {
		if a := pr.Args[i+1]; a.Name != want.name || a.Slot != want.slot {
			t.Errorf("field %d is %s in slot %d, want %s in slot %d", i+1, a.Name, a.Slot, want.name, want.slot)
		}
	}
	if a := pr.Args[0]; a.Name != "__syscall_nr" || a.Kind != ArgConst || a.Value != unix.SYS_OPENAT {
		t.Errorf("field 0 is %+v, want __syscall_nr, the constant %d", a, unix.SYS_OPENAT)
	}
	c, err := s.Attach(pr, h.program(ebpf.RawTracepoint, s, pr, threadFilter(t)...))
	if err != nil {
		t.Fatal(err)
	}
	const flags = unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW
	_, err = unix.Openat(unix.AT_FDCWD, "/nonexistent/dstar-test", flags, 0o640)
	c.Close()
	if err == nil {
		t.Fatal("opened a file that should not exist")
	}
	args, _ := h.last()
	atFDCWD := int64(unix.AT_FDCWD)
	if args[0] != uint64(atFDCWD) || args[1] == 0 || args[2] != flags || args[3] != 0o640 || args[4] != 0 {
		t.Errorf("args %x, want [AT_FDCWD, ptr, %#x, 0640, 0...]", args, flags)
	}
	if h.total() != 1 {
		t.Errorf("counted %d openat calls, want 1", h.total())
	}
}

// TestLoadCtx runs loadCtx's code in a raw-tracepoint program over a
// context we choose, to check sign extension and unaligned fields.
func TestLoadCtx(t *testing.T) {
	newHarness(t, denseLayout)
	ctx := make([]byte, 48)
	for i := range ctx {
		ctx[i] = byte(0xf0 + i)
	}
	out, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	for _, c := range []struct {
		off, size int
		signed    bool
	}{
		{8, 1, false}, {8, 1, true}, {8, 2, true}, {12, 4, false}, {12, 4, true}, {16, 8, false},
		{9, 2, false}, {9, 2, true}, {13, 4, true}, {17, 8, false}, {1, 1, true},
	} {
		insns := asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}
		insns = append(insns, loadCtx(asm.R6, asm.R7, asm.R1, c.off, c.size, c.signed)...)
		insns = append(insns,
			asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, out.FD()),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.StoreMem(asm.R0, 0, asm.R7, asm.DWord),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
			asm.Return(),
		)
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.RawTracepoint, License: "GPL", Instructions: insns})
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		var u64s [6]uint64
		for i := range u64s {
			u64s[i] = binary.NativeEndian.Uint64(ctx[8*i:])
		}
		err = Fire(prog, u64s[:]...)
		prog.Close()
		if err != nil {
			t.Fatal(err)
		}
		var got uint64
		if err := out.Lookup(uint32(0), &got); err != nil {
			t.Fatal(err)
		}
		var buf [8]byte
		copy(buf[:], ctx[c.off:c.off+c.size])
		want := binary.LittleEndian.Uint64(buf[:])
		if sh := 64 - 8*c.size; c.signed && sh > 0 {
			want = uint64(int64(want<<sh) >> sh)
		}
		if got != want {
			t.Errorf("%+v: got %#x, want %#x", c, got, want)
		}
	}
}
