package providers

import (
	"encoding/binary"
	"os"
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/dstar-trace/dstar/providers/bpftest"
	"golang.org/x/sys/unix"
)

// A harness runs a provider's prologue in a real program: the program looks
// up a per-CPU state (as the compiler's code will), runs the prologue, runs
// the test's own instructions (post), copies the state into a result map and
// counts the event in count[R8].
type harness struct {
	t      *testing.T
	layout layout
	state  *ebpf.Map // per-CPU array, 1 state
	result *ebpf.Map // array, 1 state: the last event's
	count  *ebpf.Map // array of 4 u64 counters
	unused uint32    // Prologue.Unused for the next program
}

// layout is where the state keeps args and errno.
type layout struct {
	argOff   func(i int) int16
	errnoOff int16
	size     uint32
}

// denseLayout is arg0..arg9 then errno.
var denseLayout = layout{func(i int) int16 { return int16(8 * i) }, 80, 88}

// sparseLayout spreads the args out, to exercise prologues' general paths.
var sparseLayout = layout{func(i int) int16 { return int16(16*i + 8) }, 0, 168}

const (
	regCtx   = asm.R6
	regState = asm.R7
	regIndex = asm.R8 // post sets the counter index here (0 by default)
	skip     = "skip"
)

func newHarness(t *testing.T, l layout) *harness {
	t.Helper()
	bpftest.Require(t)
	h := &harness{t: t, layout: l}
	var err error
	mk := func(spec *ebpf.MapSpec) *ebpf.Map {
		m, err2 := ebpf.NewMap(spec)
		if err2 != nil {
			t.Fatalf("creating map %s: %v", spec.Name, err2)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	h.state = mk(&ebpf.MapSpec{Name: "state", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: l.size, MaxEntries: 1})
	h.result = mk(&ebpf.MapSpec{Name: "result", Type: ebpf.Array, KeySize: 4, ValueSize: l.size, MaxEntries: 1})
	h.count = mk(&ebpf.MapSpec{Name: "count", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4})
	// Fill the state with garbage, so that tests see what prologues clear.
	n, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	garbage := make([][]byte, n)
	for i := range garbage {
		garbage[i] = make([]byte, l.size)
		for j := range garbage[i] {
			garbage[i][j] = 0xa5
		}
	}
	if err := h.state.Put(uint32(0), garbage); err != nil {
		t.Fatal(err)
	}
	return h
}

// prologue returns a Prologue for the harness's registers and layout.
func (h *harness) prologue() *Prologue {
	return &Prologue{Ctx: regCtx, State: regState, ArgOffset: h.layout.argOff, ErrnoOffset: h.layout.errnoOff, Skip: skip}
}

// program builds and loads a program of type typ around pr's prologue.
func (h *harness) program(typ ebpf.ProgramType, prov Provider, pr *Probe, post ...asm.Instruction) *ebpf.Program {
	h.t.Helper()
	insns := asm.Instructions{asm.Mov.Reg(regCtx, asm.R1)}
	p := h.prologue()
	p.Scratch = -16
	p.Unused = h.unused
	p.Setup = asm.Instructions{
		asm.StoreImm(asm.R10, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, h.state.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, skip),
		asm.Mov.Reg(regState, asm.R0),
	}
	if err := prov.Prologue(pr, p); err != nil {
		h.t.Fatalf("prologue of %s: %v", pr, err)
	}
	insns = append(insns, p.Insns...)
	insns = append(insns, asm.Mov.Imm(regIndex, 0))
	insns = append(insns, post...)
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, h.result.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.Mov.Reg(asm.R3, regState),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
		asm.StoreMem(asm.R10, -8, regIndex, asm.Word),
		asm.LoadMapPtr(asm.R1, h.count.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, skip),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol(skip),
		asm.Return(),
	)
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "test", Type: typ, AttachType: pr.AttachType, Instructions: insns, License: "GPL"})
	if err != nil {
		h.t.Fatalf("loading program for %s: %v\n%v", pr, err, insns)
	}
	h.t.Cleanup(func() { prog.Close() })
	return prog
}

// threadFilter locks the calling goroutine to its thread for the rest of
// the test and returns code that skips events of any other thread (the Go
// runtime's own threads make syscalls too: getpid, for preemption signals).
func threadFilter(t *testing.T) []asm.Instruction {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	id := int64(os.Getpid())<<32 | int64(unix.Gettid())
	return []asm.Instruction{
		asm.FnGetCurrentPidTgid.Call(),
		asm.LoadImm(asm.R1, id, asm.DWord),
		asm.JNE.Reg(asm.R0, asm.R1, skip),
	}
}

// counts returns the four counters.
func (h *harness) counts() [4]uint64 {
	h.t.Helper()
	var c [4]uint64
	for i := range c {
		if err := h.count.Lookup(uint32(i), &c[i]); err != nil {
			h.t.Fatal(err)
		}
	}
	return c
}

// total is the sum of the counters.
func (h *harness) total() uint64 {
	c := h.counts()
	return c[0] + c[1] + c[2] + c[3]
}

// last returns the last event's args and errno.
func (h *harness) last() (args [NumArgs]uint64, errno uint64) {
	h.t.Helper()
	b := make([]byte, h.layout.size)
	if err := h.result.Lookup(uint32(0), &b); err != nil {
		h.t.Fatal(err)
	}
	for i := range args {
		args[i] = binary.NativeEndian.Uint64(b[h.layout.argOff(i):])
	}
	return args, binary.NativeEndian.Uint64(b[h.layout.errnoOff:])
}
