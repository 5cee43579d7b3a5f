package cfi

import (
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// ErrNoCFI is returned for a file with no call-frame information: its
// frames can only be walked by frame pointers.
var ErrNoCFI = errors.New("no call-frame information (.eh_frame or .debug_frame)")

// Open builds the unwind table of the ELF file at path.
func Open(path string) (*Table, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := FromELF(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Range is the code one FDE describes, [Start, End): a function (or a
// part of one the compiler placed apart, such as its cold path).
type Range struct{ Start, End uint64 }

// Functions returns the code ranges the file's FDEs describe, sorted: in
// a stripped file, where a function begins and ends though nothing names
// it.
func Functions(f *elf.File) ([]Range, error) {
	all, err := fdesOf(f)
	if err != nil {
		return nil, err
	}
	out := make([]Range, 0, len(all))
	for _, d := range all {
		if d.end > d.start {
			out = append(out, Range{d.start, d.end})
		}
	}
	slices.SortFunc(out, func(a, b Range) int { return cmp.Compare(a.Start, b.Start) })
	return out, nil
}

// FromELF builds the unwind table of an x86-64 ELF file from its
// .eh_frame and, for code .eh_frame does not describe, its .debug_frame.
func FromELF(f *elf.File) (*Table, error) {
	if f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("unwind tables for %v are not supported (x86-64 only)", f.Machine)
	}
	all, err := fdesOf(f)
	if err != nil {
		return nil, err
	}
	return build(all), nil
}

// fdesOf reads the FDEs of the file's .eh_frame and, for code that does
// not describe, of its .debug_frame; ErrNoCFI when it has neither.
func fdesOf(f *elf.File) ([]fde, error) {
	var all []fde
	found := false
	for _, name := range []string{".eh_frame", ".debug_frame"} {
		s := f.Section(name)
		if s == nil || s.Type == elf.SHT_NOBITS {
			continue
		}
		data, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		found = true
		fdes, err := section{data: data, addr: s.Addr, eh: name == ".eh_frame"}.parse()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		all = append(all, uncovered(all, fdes)...)
	}
	if !found {
		return nil, ErrNoCFI
	}
	return all, nil
}

// uncovered returns the FDEs of more whose code none of have describes.
func uncovered(have, more []fde) []fde {
	if len(have) == 0 {
		return more
	}
	sorted := slices.Clone(have)
	slices.SortFunc(sorted, func(a, b fde) int { return cmp.Compare(a.start, b.start) })
	var out []fde
	for _, f := range more {
		i := sort.Search(len(sorted), func(i int) bool { return sorted[i].end > f.start })
		if i < len(sorted) && sorted[i].start < f.end {
			continue
		}
		out = append(out, f)
	}
	return out
}

// build interprets every FDE and makes the sorted, merged table. Where
// FDEs overlap (which linkers do not produce) the first by address wins.
func build(fdes []fde) *Table {
	// Linkers emit FDEs nearly in address order: an insertion-friendly
	// stable sort moves little.
	byStart := func(a, b fde) int { return cmp.Compare(a.start, b.start) }
	if !slices.IsSortedFunc(fdes, byStart) {
		slices.SortStableFunc(fdes, byStart)
	}
	// Room for about as many rows as the FDEs make (two each, and one
	// per advance instruction: one in four of their bytes, in libc and
	// python), so that the table, of tens of thousands of rows, is
	// rarely copied as it grows.
	rows := 2 * len(fdes)
	for _, f := range fdes {
		rows += len(f.insns) / 4
	}
	t := &Table{Rows: make([]Row, 0, rows)}
	add := func(pc uint64, r Rule) {
		if n := len(t.Rows); n > 0 {
			last := &t.Rows[n-1]
			if last.PC == pc {
				// An empty range: the later rule holds from pc.
				last.CFA, last.FP, last.CFAOff, last.FPOff = r.CFA, r.FP, r.CFAOff, r.FPOff
				if n > 1 && t.Rows[n-2].Rule() == r {
					t.Rows = t.Rows[:n-1]
				}
				return
			}
			if last.Rule() == r {
				return
			}
		} else if r == (Rule{}) {
			return
		}
		t.Rows = append(t.Rows, Row{PC: pc, CFA: r.CFA, FP: r.FP, CFAOff: r.CFAOff, FPOff: r.FPOff})
	}
	var covered uint64 // the end of the code described so far
	for _, f := range fdes {
		if f.start < covered {
			continue
		}
		covered = f.end
		f.each(add)
		add(f.end, Rule{})
	}
	if cap(t.Rows) > 2*len(t.Rows) {
		t.Rows = slices.Clone(t.Rows) // the room not taken is not kept
	}
	return t
}

// each interprets the FDE, calling add with each address range's start
// and rule, in address order, unmerged.
func (f fde) each(add func(pc uint64, r Rule)) {
	c := f.cie
	emit := func(lo, hi uint64, st state) { add(lo, c.rule(st)) }
	// The CIE's initial instructions set the state at the FDE's start;
	// they emit no rows (their addresses are the FDE's first).
	init, _, ok := c.run(c.initial, state{}, nil, f.start, f.start, nil)
	if !ok {
		add(f.start, Rule{})
		return
	}
	if _, stop, ok := c.run(f.insns, init, &init, f.start, f.end, emit); !ok {
		// From the instruction we could not read on, no rule.
		add(stop, Rule{})
	}
}
