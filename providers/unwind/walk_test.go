package unwind

import (
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/cfi"
	"github.com/dstar-trace/dstar/providers/cfi/cfitest"
)

// The walker is tested with BPF_PROG_TEST_RUN on stacks recorded by
// cfitest: the recorded stack's bytes are mapped at their own addresses
// in this process, so that the walker's bpf_probe_read_user reads them
// for real, and the recorder's mappings are entered for this process.

// harness is a loaded test program: it starts a walk from the registers
// in its context (pc, sp, fp, pid, limit) and leaves the Walk record in
// a one-element array.
type harness struct {
	prog   *ebpf.Program
	walk   *ebpf.Map
	coll   *ebpf.Collection
	tables *Tables
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	bpftest.Require(t)
	maps := MapSpecs()
	maps["walk"] = &ebpf.MapSpec{Name: "walk", Type: ebpf.Array, KeySize: 4, ValueSize: WalkSize, MaxEntries: 1}
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		storeImm(asm.RFP, -8, 0, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference("walk"),
		asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Reg(asm.R7, asm.R0),
	}
	for i, off := range []int16{WalkPC, WalkSP, WalkFP, WalkPid, WalkLimit} {
		insns = append(insns, asm.LoadMem(asm.R1, asm.R6, int16(8*i), asm.DWord), asm.StoreMem(asm.R7, off, asm.R1, asm.DWord))
	}
	for _, off := range []int16{WalkFlags, WalkN, WalkStop} {
		insns = append(insns, storeImm(asm.R7, off, 0, asm.DWord))
	}
	insns = append(insns,
		asm.StoreMem(asm.RFP, -8, asm.R7, asm.DWord),
		asm.LoadMem(asm.R1, asm.R7, WalkLimit, asm.DWord), asm.Add.Imm(asm.R1, 1),
		asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc, Constant: -1}.WithReference("walk_frame"),
		asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, -8),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnLoop.Call(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	)
	insns[0] = btf.WithFuncMetadata(insns[0], &btf.Func{Name: "walk_test", Linkage: btf.GlobalFunc, Type: &btf.FuncProto{
		Return: &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed},
		Params: []btf.FuncParam{{Name: "ctx", Type: &btf.Pointer{Target: &btf.Void{}}}},
	}})
	insns = append(insns, Callback("walk_frame")...)
	spec := &ebpf.CollectionSpec{Maps: maps, Programs: map[string]*ebpf.ProgramSpec{
		"walk_test": {Name: "walk_test", Type: ebpf.RawTracepoint, License: "GPL", Instructions: insns},
	}}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("%+v", ve)
		}
		t.Fatal(err)
	}
	t.Cleanup(coll.Close)
	return &harness{prog: coll.Programs["walk_test"], walk: coll.Maps["walk"], coll: coll,
		tables: NewTables(coll.Maps[MappingsMap], coll.Maps[RowsMap])}
}

// run walks from the registers and returns the frames and the stop.
func (h *harness) run(t *testing.T, pc, sp, fp uint64, limit int) ([]uint64, cfi.Stop) {
	t.Helper()
	ctx := make([]byte, 40)
	for i, v := range []uint64{pc, sp, fp, uint64(os.Getpid()), uint64(limit)} {
		binary.LittleEndian.PutUint64(ctx[8*i:], v)
	}
	if _, err := h.prog.Run(&ebpf.RunOptions{Context: ctx}); err != nil {
		t.Fatal(err)
	}
	var w [WalkSize]byte
	if err := h.walk.Lookup(uint32(0), &w); err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(w[WalkN:])
	pcs := make([]uint64, n)
	for i := range pcs {
		pcs[i] = binary.LittleEndian.Uint64(w[WalkFrames+8*i:])
	}
	return pcs, cfi.Stop(binary.LittleEndian.Uint64(w[WalkStop:]))
}

// mapStack maps the recorded stack at its own addresses in this process
// and returns the end of the mapping (past it, nothing is readable).
func mapStack(t testing.TB, rec cfitest.Recording) uint64 {
	t.Helper()
	page := uint64(os.Getpagesize())
	lo := rec.SP &^ (page - 1)
	hi := (rec.SP + uint64(len(rec.Stack)) + page - 1) &^ (page - 1)
	addr, _, errno := unix.Syscall6(unix.SYS_MMAP, uintptr(lo), uintptr(hi-lo), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE, ^uintptr(0), 0)
	if errno != 0 || uint64(addr) != lo {
		t.Skipf("the recorded stack's addresses [%#x, %#x) are taken in this process (%v)", lo, hi, errno)
	}
	t.Cleanup(func() { unix.Syscall(unix.SYS_MUNMAP, addr, uintptr(hi-lo), 0) })
	// The mapping is not Go memory: its address is only converted.
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	mem := unsafe.Slice((*byte)(p), hi-lo)
	copy(mem[rec.SP-lo:], rec.Stack)
	return hi
}

func TestWalkRecorded(t *testing.T) {
	h := newHarness(t)
	for _, flags := range [][]string{
		{"-O2", "-fomit-frame-pointer"},
		{"-O1", "-fno-omit-frame-pointer"},
		{"-O2", "-g", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"},
	} {
		rec := cfitest.Record(t, flags...)
		// Entered twice: what a process noticed again gets (its
		// mappings read anew) must leave its walks whole.
		for i := 0; i < 2; i++ {
			if err := h.tables.AddMappings(uint32(os.Getpid()), rec.Maps, ""); err != nil {
				t.Fatal(err)
			}
		}
		t.Run(flags[0]+flags[1], func(t *testing.T) {
			end := mapStack(t, rec)
			want, wantStop := cfi.Unwind(rec.Regs(), rec.Code(t), rec.Memory, 64)
			got, stop := h.run(t, rec.PC, rec.SP, rec.FP, 64)
			names := rec.Names(got)
			t.Logf("%v: %v (%v)", flags, names, stop)
			if stop != wantStop || !slices.Equal(got, want) {
				t.Fatalf("BPF walk: %x (%v)\nGo walk:  %x (%v)", got, stop, want, wantStop)
			}
			for i, w := range cfitest.Want {
				if i >= len(names) || names[i] != w {
					t.Fatalf("frame %d is not %s: %v", i, w, names)
				}
			}
			if stop != cfi.StopEnd || names[len(names)-1] != "_start" {
				t.Errorf("the walk ended %v at %s, want the end at _start", stop, names[len(names)-1])
			}
			// Cut by the depth: no marker (the frames asked for are all there).
			if got, stop := h.run(t, rec.PC, rec.SP, rec.FP, 3); stop != cfi.StopDepth || len(got) != 3 {
				t.Errorf("a walk to depth 3: %x (%v)", got, stop)
			}
			// Stack and frame pointers past the readable stack: the walk ends
			// with the unreadable marker, after no wrong frame.
			if got, stop := h.run(t, rec.PC, end, end, 64); stop != cfi.StopUnreadable ||
				!slices.Equal(got, []uint64{rec.PC, cfi.Marker(cfi.StopUnreadable)}) {
				t.Errorf("walk from an unreadable stack: %x (%v)", got, stop)
			}
		})
		h.tables.RemoveProcess(uint32(os.Getpid()))
	}
	t.Run("nomapping", func(t *testing.T) {
		got, stop := h.run(t, 0x1000, 0x2000, 0, 64)
		if stop != cfi.StopNoMapping || !slices.Equal(got, []uint64{0x1000, cfi.Marker(cfi.StopNoMapping)}) {
			t.Errorf("walk from an unknown PC: %x (%v)", got, stop)
		}
	})
	if n := h.tables.RowsUsed(); n != 0 {
		t.Errorf("%d rows still loaded after every process was removed", n)
	}
}

func TestPrefixes(t *testing.T) {
	for _, c := range [][2]uint64{{0x1000, 0x2000}, {0x555555554000, 0x555555559000}, {0x7f0000001000, 0x7f0000200000}} {
		ps := prefixes(c[0], c[1])
		at := c[0]
		for _, p := range ps {
			size := uint64(1) << (64 - p.bits)
			if p.addr != at || p.addr%size != 0 {
				t.Fatalf("[%#x, %#x): prefix %+v out of place", c[0], c[1], p)
			}
			at += size
		}
		if at != c[1] {
			t.Fatalf("[%#x, %#x): prefixes end at %#x", c[0], c[1], at)
		}
	}
}

// BenchmarkWalk: the walker's cost per stack, on a recorded stack of 7
// frames (leaf … main, libc, _start) run with BPF_PROG_TEST_RUN, beside
// the cost of the harness and the system call alone (a walk of no
// frames): the difference is the walk's.
func BenchmarkWalk(b *testing.B) {
	h := newHarness(b)
	rec := cfitest.Record(b, "-O2", "-fomit-frame-pointer")
	if err := h.tables.AddMappings(uint32(os.Getpid()), rec.Maps, ""); err != nil {
		b.Fatal(err)
	}
	defer h.tables.RemoveProcess(uint32(os.Getpid()))
	mapStack(b, rec)
	for _, c := range []struct {
		name string
		pc   uint64
	}{{"7frames", rec.PC}, {"none", 0}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := make([]byte, 40)
			for i, v := range []uint64{c.pc, rec.SP, rec.FP, uint64(os.Getpid()), 64} {
				binary.LittleEndian.PutUint64(ctx[8*i:], v)
			}
			// A raw tracepoint's test run takes no repeat count: one
			// system call a walk, the same in both.
			opts := &ebpf.RunOptions{Context: ctx}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := h.prog.Run(opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
