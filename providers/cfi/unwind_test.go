package cfi_test

import (
	"testing"

	"github.com/dstar-trace/dstar/providers/cfi"
	"github.com/dstar-trace/dstar/providers/cfi/cfitest"
)

func TestUnwindRecorded(t *testing.T) {
	for _, flags := range [][]string{
		{"-O2", "-fomit-frame-pointer"},
		{"-O1", "-fno-omit-frame-pointer"},
		{"-O2", "-g", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"},
	} {
		rec := cfitest.Record(t, flags...)
		pcs, stop := cfi.Unwind(rec.Regs(), rec.Code(t), rec.Memory, 64)
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
		if stop != cfi.StopEnd || names[len(names)-1] != "_start" {
			t.Errorf("%v: walk ended %v at %s, want the end of the stack at _start", flags, stop, names[len(names)-1])
		}
		// Cut short, the walk says why.
		if _, stop := cfi.Unwind(rec.Regs(), rec.Code(t), rec.Memory, 3); stop != cfi.StopDepth {
			t.Errorf("%v: a walk to depth 3 stopped with %v", flags, stop)
		}
		short := func(addr uint64) (uint64, bool) {
			if addr >= rec.SP+256 {
				return 0, false
			}
			return rec.Memory(addr)
		}
		if _, stop := cfi.Unwind(rec.Regs(), rec.Code(t), short, 64); stop != cfi.StopUnreadable {
			t.Errorf("%v: a walk of a stack cut at 256 bytes stopped with %v", flags, stop)
		}
	}
}

func TestMarker(t *testing.T) {
	for s := cfi.StopNoMapping; s <= cfi.StopDepth; s++ {
		if got, ok := cfi.IsMarker(cfi.Marker(s)); !ok || got != s {
			t.Errorf("cfi.IsMarker(cfi.Marker(%v)) = %v, %v", s, got, ok)
		}
	}
	if _, ok := cfi.IsMarker(0x7fff_0000_1000); ok {
		t.Error("a user address is a marker")
	}
}

func TestSpecialRules(t *testing.T) {
	libc, err := cfi.Open("/usr/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		t.Skip(err)
	}
	var signal, plt []cfi.Row
	for _, r := range libc.Rows {
		switch r.CFA {
		case cfi.CFASignal:
			signal = append(signal, r)
		case cfi.CFAPLT:
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
