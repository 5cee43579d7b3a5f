package cfi

import (
	"testing"

	"github.com/dstar-trace/dstar/providers/cfi/cfitest"
)

func TestUnwindRecorded(t *testing.T) {
	for _, flags := range [][]string{
		{"-O2", "-fomit-frame-pointer"},
		{"-O1", "-fno-omit-frame-pointer"},
		{"-O2", "-g", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"},
	} {
		rec := cfitest.Record(t, flags...)
		pcs, stop := Unwind(Regs{PC: rec.PC, SP: rec.SP, FP: rec.FP}, code(t, rec), rec.Memory, 64)
		names := rec.Names(pcs)
		t.Logf("%v: %v (%v)", flags, names, stop)
		want := cfitest.Want
		if len(names) < len(want)+2 {
			t.Fatalf("%v: %d frames, want at least %d: %v", flags, len(names), len(want)+2, names)
		}
		for i, w := range want {
			if names[i] != w {
				t.Errorf("%v: frame %d is %s, want %s: %v", flags, i, names[i], w, names)
			}
		}
		if stop != StopEnd || names[len(names)-1] != "_start" {
			t.Errorf("%v: walk ended %v at %s, want the end of the stack at _start", flags, stop, names[len(names)-1])
		}
		// Cut short, the walk says why.
		if _, stop := Unwind(Regs{PC: rec.PC, SP: rec.SP, FP: rec.FP}, code(t, rec), rec.Memory, 3); stop != StopDepth {
			t.Errorf("%v: a walk to depth 3 stopped with %v", flags, stop)
		}
		short := func(addr uint64) (uint64, bool) {
			if addr >= rec.SP+256 {
				return 0, false
			}
			return rec.Memory(addr)
		}
		if _, stop := Unwind(Regs{PC: rec.PC, SP: rec.SP, FP: rec.FP}, code(t, rec), short, 64); stop != StopUnreadable {
			t.Errorf("%v: a walk of a stack cut at 256 bytes stopped with %v", flags, stop)
		}
	}
}

func TestMarker(t *testing.T) {
	for s := StopNoMapping; s <= StopDepth; s++ {
		if got, ok := IsMarker(Marker(s)); !ok || got != s {
			t.Errorf("IsMarker(Marker(%v)) = %v, %v", s, got, ok)
		}
	}
	if _, ok := IsMarker(0x7fff_0000_1000); ok {
		t.Error("a user address is a marker")
	}
}

func TestSpecialRules(t *testing.T) {
	libc, err := Open("/usr/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		t.Skip(err)
	}
	var signal, plt []Row
	for _, r := range libc.Rows {
		switch r.CFA {
		case CFASignal:
			signal = append(signal, r)
		case CFAPLT:
			plt = append(plt, r)
		}
	}
	// glibc's __restore_rt: the ucontext's rsp at 160, rbp at 120.
	if len(signal) != 1 || signal[0].CFAOff != 160 || signal[0].FPOff != 120 {
		t.Errorf("libc's signal rows: %+v", signal)
	}
	if len(plt) != 1 || plt[0].CFAOff != 8 {
		t.Errorf("libc's PLT rows: %+v", plt)
	}
}

// code finds the table and bias of the recorded mapping holding pc.
func code(t *testing.T, rec cfitest.Recording) Code {
	tables := map[string]*Table{}
	return func(pc uint64) (*Table, uint64, bool) {
		m, bias, ok := rec.Mapping(pc)
		if !ok {
			return nil, 0, false
		}
		tab, ok := tables[m.Path]
		if !ok {
			var err error
			if tab, err = Open(m.Path); err != nil && err != ErrNoCFI {
				t.Fatal(err)
			}
			tables[m.Path] = tab
		}
		return tab, bias, true
	}
}
