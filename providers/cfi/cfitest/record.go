// Package cfitest records real user stacks for the unwinders' tests: a C
// program (recorder.c.txt) copies its registers and stack from inside a
// frameless leaf, main → outer → middle → leaf, with its mappings.
package cfitest

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/cfi"
	"github.com/dstar-trace/dstar/providers/elfsym"
	"github.com/dstar-trace/dstar/providers/procmaps"
)

//go:embed recorder.c.txt
var recorder string

// Want is the start of every recorded stack, innermost first.
var Want = []string{"leaf", "middle", "outer", "main"}

// Recording is a recorded stack.
type Recording struct {
	PC, SP, FP uint64
	Stack      []byte // the bytes from SP up
	Maps       []procmaps.Mapping
}

// Record builds the recorder with gcc flags, runs it and reads what it
// recorded.
func Record(t testing.TB, flags ...string) Recording {
	t.Helper()
	dir := t.TempDir()
	bin := bpftest.BuildC(t, dir, "recorder", recorder, flags...)
	out := filepath.Join(dir, "stack")
	if b, err := exec.Command(bin, out).CombinedOutput(); err != nil {
		t.Fatalf("recorder: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	rec := Recording{PC: le.Uint64(b), SP: le.Uint64(b[8:]), FP: le.Uint64(b[16:])}
	n := le.Uint64(b[24:])
	rec.Stack = b[32 : 32+n]
	if rec.Maps, err = procmaps.Parse(bytes.NewReader(b[32+n:])); err != nil {
		t.Fatal(err)
	}
	return rec
}

// Memory reads the recorded stack's word at addr.
func (r Recording) Memory(addr uint64) (uint64, bool) {
	if addr < r.SP || addr+8 > r.SP+uint64(len(r.Stack)) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(r.Stack[addr-r.SP:]), true
}

// Mapping returns the executable file mapping holding pc and its load
// bias.
func (r Recording) Mapping(pc uint64) (procmaps.Mapping, uint64, bool) {
	for _, m := range r.Maps {
		if pc < m.Start || pc >= m.End || !m.Exec() || !m.IsFile() {
			continue
		}
		f, err := elfsym.Open(m.Path)
		if err != nil {
			return m, 0, false
		}
		vaddr, err := f.Address(m.Offset)
		if err != nil {
			return m, 0, false
		}
		return m, m.Start - vaddr, true
	}
	return procmaps.Mapping{}, 0, false
}

// Names are the functions of pcs (return addresses but the first), or
// the file's name where none is known, or "?" outside every file.
func (r Recording) Names(pcs []uint64) []string {
	var names []string
	for i, pc := range pcs {
		name := "?"
		if m, bias, ok := r.Mapping(pc); ok {
			name = filepath.Base(m.Path)
			at := pc - bias
			if i > 0 {
				at--
			}
			if f, err := elfsym.Open(m.Path); err == nil {
				if s, ok := f.ByAddress(at); ok {
					name = s.Name
				}
			}
		}
		names = append(names, name)
	}
	return names
}

// Code is the reference walker's view of the recorded mappings: each
// file's table, built on first use.
func (r Recording) Code(t testing.TB) cfi.Code {
	tables := map[string]*cfi.Table{}
	return func(pc uint64) (*cfi.Table, uint64, bool) {
		m, bias, ok := r.Mapping(pc)
		if !ok {
			return nil, 0, false
		}
		tab, ok := tables[m.Path]
		if !ok {
			var err error
			if tab, err = cfi.Open(m.Path); err != nil && !errors.Is(err, cfi.ErrNoCFI) {
				t.Fatal(err)
			}
			tables[m.Path] = tab
		}
		return tab, bias, true
	}
}

// Regs are the recorded registers.
func (r Recording) Regs() cfi.Regs { return cfi.Regs{PC: r.PC, SP: r.SP, FP: r.FP} }
