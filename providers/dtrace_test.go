package providers

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/dstar-trace/dstar/providers/bpftest"
)

func TestDTraceProbes(t *testing.T) {
	for _, c := range []struct {
		desc string
		want []int
	}{
		{"BEGIN", []int{BeginID}},
		{"dtrace:::END", []int{EndID}},
		{":::ERROR", []int{ErrorID}},
		{"dtrace:::", []int{1, 2, 3}},
		{"dtrace:::*", []int{1, 2, 3}},
		{"*:::[BE]*", []int{1, 2, 3}},
		{"dtrace::f:BEGIN", nil},
		{"BEGIN_", nil},
	} {
		ps, err := DTrace{}.Probes(mustDesc(t, c.desc))
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(ps); !equalInts(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.desc, got, c.want)
		}
	}
}

// TestFire runs a tiny hand-written raw-tracepoint program on demand and
// sees what it wrote from its context.
func TestFire(t *testing.T) {
	bpftest.Require(t)
	out, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// out[0] = ctx[0] + ctx[5]
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.RawTracepoint, License: "GPL",
		Instructions: asm.Instructions{
			asm.LoadMem(asm.R6, asm.R1, 0, asm.DWord),
			asm.LoadMem(asm.R2, asm.R1, 40, asm.DWord),
			asm.Add.Reg(asm.R6, asm.R2),
			asm.StoreImm(asm.R10, -4, 0, asm.Word),
			asm.LoadMapPtr(asm.R1, out.FD()),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.StoreMem(asm.R0, 0, asm.R6, asm.DWord),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
			asm.Return(),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()

	check := func(want uint64) {
		t.Helper()
		var got uint64
		if err := out.Lookup(uint32(0), &got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("got %d, want %d", got, want)
		}
	}
	if err := Fire(prog, 7, 0, 0, 0, 0, 9); err != nil {
		t.Fatal(err)
	}
	check(16)
	if err := Fire(prog, 5); err != nil { // padded to six u64s
		t.Fatal(err)
	}
	check(5)
	if err := Fire(prog, make([]uint64, 13)...); err == nil {
		t.Error("Fire with 13 arguments: no error")
	}
}

// TestDTracePrologue fires BEGIN and ERROR programs built around the dtrace
// prologue and checks the state they leave.
func TestDTracePrologue(t *testing.T) {
	for _, l := range []layout{denseLayout, sparseLayout} {
		h := newHarness(t, l)
		prog := h.program(ebpf.RawTracepoint, DTrace{}, dtraceProbes[2])
		if _, err := (DTrace{}).Attach(dtraceProbes[2], prog); err != nil {
			t.Fatal(err)
		}
		if err := Fire(prog, 0, 11, 22, 33, 44, 55); err != nil {
			t.Fatal(err)
		}
		args, errno := h.last()
		want := [NumArgs]uint64{0, 11, 22, 33, 44, 55}
		if args != want || errno != 0 {
			t.Errorf("ERROR: args %v errno %d, want %v errno 0", args, errno, want)
		}
		if err := Fire(prog); err != nil {
			t.Fatal(err)
		}
		if args, _ := h.last(); args != ([NumArgs]uint64{}) {
			t.Errorf("BEGIN: args %v, want zeros", args)
		}
		if n := h.total(); n != 2 {
			t.Errorf("fired %d times, want 2", n)
		}
	}
}

func mustDesc(t *testing.T, s string) Desc {
	t.Helper()
	d, err := ParseDesc(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func ids(ps []*Probe) []int {
	var out []int
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
