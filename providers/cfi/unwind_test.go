package cfi

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/elfsym"
	"github.com/dstar-trace/dstar/providers/procmaps"
)

// Recording is a stack recorded by testdata/recorder.c.
type Recording struct {
	Regs  Regs
	SP    uint64 // the address of Stack[0]
	Stack []byte
	Maps  []procmaps.Mapping
}

// Record builds testdata/recorder.c with flags, runs it and reads what it
// recorded.
func Record(t *testing.T, flags ...string) Recording {
	t.Helper()
	src, err := os.ReadFile("testdata/recorder.c")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := bpftest.BuildC(t, dir, "recorder", string(src), flags...)
	out := filepath.Join(dir, "stack")
	if b, err := exec.Command(bin, out).CombinedOutput(); err != nil {
		t.Fatalf("recorder: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rec Recording
	rec.Regs = Regs{PC: binary.LittleEndian.Uint64(b), SP: binary.LittleEndian.Uint64(b[8:]), FP: binary.LittleEndian.Uint64(b[16:])}
	n := binary.LittleEndian.Uint64(b[24:])
	rec.SP = rec.Regs.SP
	rec.Stack = b[32 : 32+n]
	if rec.Maps, err = procmaps.Parse(bytes.NewReader(b[32+n:])); err != nil {
		t.Fatal(err)
	}
	return rec
}

// Memory reads the recorded stack.
func (r Recording) Memory(addr uint64) (uint64, bool) {
	if addr < r.SP || addr+8 > r.SP+uint64(len(r.Stack)) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(r.Stack[addr-r.SP:]), true
}

// Code finds the table and bias of the mapping holding pc (tables built
// on first use).
func (r Recording) Code(t *testing.T) Code {
	tables := map[string]*Table{}
	return func(pc uint64) (*Table, uint64, bool) {
		for _, m := range r.Maps {
			if pc < m.Start || pc >= m.End || !m.Exec() || !m.IsFile() {
				continue
			}
			f, err := elfsym.Open(m.Path)
			if err != nil {
				t.Fatal(err)
			}
			vaddr, err := f.Address(m.FileOffset(pc))
			if err != nil {
				t.Fatal(err)
			}
			tab, ok := tables[m.Path]
			if !ok {
				if tab, err = Open(m.Path); err != nil && err != ErrNoCFI {
					t.Fatal(err)
				}
				tables[m.Path] = tab
			}
			return tab, pc - vaddr, true
		}
		return nil, 0, false
	}
}

// Names are the functions (or, unnamed, the files) of pcs.
func (r Recording) Names(t *testing.T, pcs []uint64) []string {
	var names []string
	for _, pc := range pcs {
		name := "?"
		for _, m := range r.Maps {
			if pc < m.Start || pc >= m.End || !m.IsFile() {
				continue
			}
			name = filepath.Base(m.Path)
			if f, err := elfsym.Open(m.Path); err == nil {
				if vaddr, err := f.Address(m.FileOffset(pc)); err == nil {
					if s, ok := f.ByAddress(vaddr - 1); ok {
						name = s.Name
					}
				}
			}
		}
		names = append(names, name)
	}
	return names
}

func TestUnwindRecorded(t *testing.T) {
	for _, flags := range [][]string{
		{"-O2", "-fomit-frame-pointer"},
		{"-O1", "-fno-omit-frame-pointer"},
		{"-O2", "-g", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"},
	} {
		rec := Record(t, flags...)
		pcs, stop := Unwind(rec.Regs, rec.Code(t), rec.Memory, 64)
		names := rec.Names(t, pcs)
		t.Logf("%v: %v (%v)", flags, names, stop)
		want := []string{"leaf", "middle", "outer", "main"}
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
		if _, stop := Unwind(rec.Regs, rec.Code(t), rec.Memory, 3); stop != StopDepth {
			t.Errorf("%v: a walk to depth 3 stopped with %v", flags, stop)
		}
		short := func(addr uint64) (uint64, bool) {
			if addr >= rec.SP+256 {
				return 0, false
			}
			return rec.Memory(addr)
		}
		if _, stop := Unwind(rec.Regs, rec.Code(t), short, 64); stop != StopUnreadable {
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
