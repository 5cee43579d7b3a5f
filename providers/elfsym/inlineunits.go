package elfsym

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"
)

// inlineIndex is one file's inlined copies, read as they are asked for
// by one goroutine at a time: the file's reader.
type inlineIndex struct {
	path string
	key  cacheKey
	// used and weight are inlineCache's, under its lock.
	used   uint64
	weight int

	mu     sync.Mutex
	loaded bool         // the reader has read the sections, or failed to
	whole  *inlineTable // every copy, when read at once
	secs   *unitSections
	units  map[uint64]*inlineTable // units read, by offset (nil: unreadable)
	// asked are the addresses asked for while their units were
	// unknown or unread: the reader's work.
	asked   []uint64
	reading bool
	done    chan struct{} // closed when the reader stops
}

// maxAsked bounds the addresses waiting for the reader: past it they
// are not kept, and are asked for again by their next lookup.
const maxAsked = 1 << 16

// chain returns the names inlined at addr, and true; or, when what it
// needs is not read yet, asks the reader for it and returns false.
func (ix *inlineIndex) chain(addr uint64) ([]string, bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.loaded {
		if ix.secs == nil {
			if ix.whole == nil {
				return nil, true
			}
			return ix.whole.chain(addr), true
		}
		u, ok := ix.secs.unitAt(addr)
		if !ok {
			return nil, true
		}
		if t, read := ix.units[u]; read {
			if t == nil {
				return nil, true
			}
			return t.chain(addr), true
		}
	}
	if len(ix.asked) < maxAsked {
		ix.asked = append(ix.asked, addr)
	}
	ix.startLocked()
	return nil, false
}

// start starts the reader, unless it runs or has nothing to do.
func (ix *inlineIndex) start() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.startLocked()
}

func (ix *inlineIndex) startLocked() {
	if ix.reading || ix.loaded && len(ix.asked) == 0 {
		return
	}
	ix.reading = true
	ix.done = make(chan struct{})
	go ix.read(ix.done)
}

// wait waits for the reader to stop, or timeout to fire (nil: never);
// it reports whether the reader has stopped.
func (ix *inlineIndex) wait(timeout <-chan time.Time) bool {
	ix.mu.Lock()
	reading, done := ix.reading, ix.done
	ix.mu.Unlock()
	if !reading {
		return true
	}
	select {
	case <-done:
		return true
	case <-timeout:
		return false
	}
}

// read is the reader: it reads the file's sections, then the units of
// the addresses asked for, until none is left.
func (ix *inlineIndex) read(done chan struct{}) {
	defer close(done)
	ix.mu.Lock()
	if !ix.loaded {
		ix.mu.Unlock()
		secs, whole := inlineLoad(ix.path)
		ix.mu.Lock()
		ix.loaded, ix.secs, ix.whole = true, secs, whole
	}
	for {
		var want []uint64
		if ix.secs != nil {
			for _, a := range ix.asked {
				if u, ok := ix.secs.unitAt(a); ok && !slices.Contains(want, u) {
					if _, read := ix.units[u]; !read {
						want = append(want, u)
					}
				}
			}
		}
		ix.asked = nil
		if len(want) == 0 {
			ix.reading = false
			w := ix.whole.weight()
			if ix.secs != nil {
				w += ix.secs.size
			}
			for _, t := range ix.units {
				w += t.weight() + 16
			}
			ix.mu.Unlock()
			reweigh(ix, w)
			return
		}
		ix.mu.Unlock()
		// Only the reader touches secs' .debug_info.
		tabs := ix.secs.readUnits(want)
		ix.mu.Lock()
		for i, u := range want {
			ix.units[u] = tabs[i]
		}
	}
}

// inlineLoad is loadInlines; tests slow it down.
var inlineLoad = loadInlines

// loadInlines reads the DWARF sections of the ELF file at path for
// reading its units as they are asked for; or, when it has no
// .debug_aranges to find them by (or is not little-endian), reads every
// inlined copy at once. Both are nil when the DWARF cannot be read.
func loadInlines(path string) (*unitSections, *inlineTable) {
	ef, err := elf.Open(path)
	if err != nil {
		return nil, nil
	}
	defer ef.Close()
	data, size, err := readSections(ef, append(slices.Clip(inlineSections), "aranges"))
	if err != nil {
		return nil, nil
	}
	if ef.ByteOrder == binary.LittleEndian {
		s := &unitSections{data: data, size: size}
		if s.spans, err = parseAranges(data["aranges"]); err == nil && len(s.spans) > 0 {
			if s.starts, err = unitStarts(data["info"]); err == nil {
				s.size -= len(data["aranges"])
				delete(data, "aranges")
				return s, nil
			}
		}
	}
	d, err := newDWARF(data, data["info"])
	if err != nil {
		return nil, nil
	}
	return nil, wholeTable(d)
}

// unitSections are a file's DWARF sections, uncompressed, and where its
// units are: what reading some of its units takes.
type unitSections struct {
	data   map[string][]byte // by name, without .debug_
	size   int               // their bytes
	spans  []unitSpan        // by lo
	starts []uint64          // every unit's offset in .debug_info, ascending
}

// unitSpan is a range of addresses of a unit's code, from .debug_aranges.
type unitSpan struct{ lo, hi, unit uint64 }

// unitAt returns the offset of the unit whose code holds addr.
func (s *unitSections) unitAt(addr uint64) (uint64, bool) {
	i := sort.Search(len(s.spans), func(i int) bool { return s.spans[i].lo > addr }) - 1
	if i >= 0 && addr < s.spans[i].hi {
		return s.spans[i].unit, true
	}
	return 0, false
}

// unitEnd returns the end of the unit at offset u in .debug_info.
func (s *unitSections) unitEnd(u uint64) uint64 {
	i := sort.Search(len(s.starts), func(i int) bool { return s.starts[i] > u })
	if i < len(s.starts) {
		return s.starts[i]
	}
	return uint64(len(s.data["info"]))
}

// unitOf returns the offset of the unit holding offset off of .debug_info.
func (s *unitSections) unitOf(off uint64) uint64 {
	i := sort.Search(len(s.starts), func(i int) bool { return s.starts[i] > off }) - 1
	return s.starts[max(i, 0)]
}

// readUnits reads the inlined copies of the units at offsets us, a
// table each (nil for a unit that cannot be read). Their functions are
// named from the units that define them, read alongside when they are
// others.
func (s *unitSections) readUnits(us []uint64) []*inlineTable {
	out := make([]*inlineTable, len(us))
	d, within, undo, err := s.over(us)
	if err != nil {
		return out
	}
	found := make([][]pending, len(us))
	read := make([]bool, len(us))
	var others []uint64
	for i, u := range us {
		h, err := readUnitHeader(s.data["info"], u)
		if err != nil {
			continue
		}
		r := d.Reader()
		r.Seek(dwarf.Offset(u + uint64(h.size)))
		e, err := r.Next()
		if err != nil || e == nil || e.Tag != dwarf.TagCompileUnit && e.Tag != dwarf.TagPartialUnit {
			continue
		}
		read[i] = true
		if e.Children {
			found[i] = walkUnit(d, r, nil)
		}
		for _, p := range found[i] {
			if !within(p.origin) {
				if o := s.unitOf(uint64(p.origin)); !slices.Contains(others, o) {
					others = append(others, o)
				}
			}
		}
	}
	if len(others) > 0 {
		// A function inlined from another unit (a reference across
		// units: LTO): read that unit too, to name it.
		undo()
		all := append(slices.Clone(us), others...)
		if d, within, undo, err = s.over(all); err != nil {
			return out
		}
	}
	defer undo()
	for i := range us {
		if read[i] {
			out[i] = newTable(d.Reader(), found[i], within)
		}
	}
	return out
}

// over returns DWARF of the units at offsets us of .debug_info alone,
// which of its offsets are theirs, and a function undoing what it did
// to .debug_info. dwarf.New reads every unit's header and abbreviations
// (a megabyte of them in libc, held as maps): so each stretch between
// the units wanted is covered over with the header of one unit with
// nothing in it, their offsets kept.
func (s *unitSections) over(us []uint64) (*dwarf.Data, func(dwarf.Offset) bool, func(), error) {
	us = slices.Clone(us)
	slices.Sort(us)
	us = slices.Compact(us)
	info := s.data["info"]
	type span struct{ lo, hi uint64 }
	keep := make([]span, len(us))
	for i, u := range us {
		keep[i] = span{u, s.unitEnd(u)}
	}
	h, err := readUnitHeader(info, us[0])
	if err != nil {
		return nil, nil, nil, err
	}
	hdr, err := emptyUnit(h)
	if err != nil {
		return nil, nil, nil, err
	}
	var saved []span
	var savedBytes [][]byte
	undo := func() {
		for i, g := range saved {
			copy(info[g.lo:], savedBytes[i])
		}
	}
	var at uint64
	for _, k := range append(keep, span{keep[len(keep)-1].hi, keep[len(keep)-1].hi}) {
		if gap := k.lo - at; gap > 0 {
			if gap < uint64(len(hdr)) {
				undo()
				return nil, nil, nil, errors.New("unit too short to cover")
			}
			saved = append(saved, span{at, at + uint64(len(hdr))})
			savedBytes = append(savedBytes, slices.Clone(info[at:at+uint64(len(hdr))]))
			copy(info[at:], hdr)
			binary.LittleEndian.PutUint32(info[at:], uint32(gap-4))
		}
		at = k.hi
	}
	d, err := newDWARF(s.data, info[:at])
	if err != nil {
		undo()
		return nil, nil, nil, err
	}
	within := func(off dwarf.Offset) bool {
		i := sort.Search(len(keep), func(i int) bool { return keep[i].hi > uint64(off) })
		return i < len(keep) && keep[i].lo <= uint64(off)
	}
	return d, within, undo, nil
}

// unitHeader is what a unit's header says.
type unitHeader struct {
	vers   uint16
	abbrev uint64 // its abbreviations' offset in .debug_abbrev
	asize  byte   // its addresses' size
	size   int    // the header's: the unit's first entry follows
}

// readUnitHeader reads the header of the 32-bit or 64-bit unit at
// offset u of info: a compile or partial unit's (or DWARF 4's type).
func readUnitHeader(info []byte, u uint64) (unitHeader, error) {
	short := errors.New("short unit header")
	b := info[u:]
	off := 4
	if len(b) >= 4 && binary.LittleEndian.Uint32(b) == 0xffffffff {
		off = 12
	}
	is64 := off == 12
	if len(b) < off+2 {
		return unitHeader{}, short
	}
	h := unitHeader{vers: binary.LittleEndian.Uint16(b[off:])}
	var w int
	if h.vers >= 5 {
		// unit_type, address_size, debug_abbrev_offset
		if len(b) < off+4 {
			return unitHeader{}, short
		}
		if ut := b[off+2]; ut != 1 && ut != 3 { // DW_UT_compile, DW_UT_partial
			return unitHeader{}, errors.New("not a compile unit")
		}
		h.asize = b[off+3]
		h.abbrev, w = readOff(b[off+4:], is64)
		h.size = off + 4 + w
	} else {
		// debug_abbrev_offset, address_size
		h.abbrev, w = readOff(b[off+2:], is64)
		if len(b) <= off+2+w {
			return unitHeader{}, short
		}
		h.asize = b[off+2+w]
		h.size = off + 2 + w + 1
	}
	if w == 0 {
		return unitHeader{}, short
	}
	return h, nil
}

// emptyUnit returns the header of a 32-bit unit with no entries (its
// length to be filled in) of h's version and abbreviations.
func emptyUnit(h unitHeader) ([]byte, error) {
	if h.abbrev > 1<<32-1 {
		return nil, errors.New("abbreviations out of reach")
	}
	le := binary.LittleEndian
	b := le.AppendUint32(nil, 0)
	b = le.AppendUint16(b, h.vers)
	if h.vers >= 5 {
		b = append(b, 1 /* DW_UT_compile */, h.asize)
		return le.AppendUint32(b, uint32(h.abbrev)), nil
	}
	b = le.AppendUint32(b, uint32(h.abbrev))
	return append(b, h.asize), nil
}

// readOff reads a section offset, of 8 bytes in 64-bit DWARF, else 4.
func readOff(b []byte, is64 bool) (uint64, int) {
	if is64 {
		if len(b) < 8 {
			return 0, 0
		}
		return binary.LittleEndian.Uint64(b), 8
	}
	if len(b) < 4 {
		return 0, 0
	}
	return uint64(binary.LittleEndian.Uint32(b)), 4
}

// unitStarts returns the offset of every unit of .debug_info.
func unitStarts(info []byte) ([]uint64, error) {
	var starts []uint64
	for off := uint64(0); off < uint64(len(info)); {
		n, w := readOff(info[off:], false)
		if w == 0 {
			return nil, errors.New("short unit header")
		}
		next := off + 4 + n
		if n == 0xffffffff {
			if n, w = readOff(info[off+4:], true); w == 0 {
				return nil, errors.New("short unit header")
			}
			next = off + 12 + n
		}
		if next <= off || next > uint64(len(info)) {
			return nil, errors.New("bad unit length")
		}
		starts = append(starts, off)
		off = next
	}
	return starts, nil
}

// parseAranges reads .debug_aranges: the address ranges of each unit's
// code, by their start.
func parseAranges(b []byte) ([]unitSpan, error) {
	var spans []unitSpan
	le := binary.LittleEndian
	for len(b) > 0 {
		n, w := readOff(b, false)
		is64 := n == 0xffffffff
		hlen := 4
		if is64 {
			n, w = readOff(b[4:], true)
			hlen = 12
		}
		if w == 0 || n > uint64(len(b)-hlen) {
			return nil, errors.New("bad aranges length")
		}
		set := b[:hlen+int(n)]
		b = b[len(set):]
		p := hlen + 2 // past the version
		unit, w := readOff(set[p:], is64)
		p += w
		if w == 0 || len(set) < p+2 {
			return nil, errors.New("short aranges header")
		}
		asize, ssize := int(set[p]), int(set[p+1])
		p += 2
		if asize != 4 && asize != 8 || ssize != 0 {
			return nil, errors.New("unsupported aranges")
		}
		// Tuples start at a multiple of their size from the set's start.
		if r := p % (2 * asize); r != 0 {
			p += 2*asize - r
		}
		for ; p+2*asize <= len(set); p += 2 * asize {
			var lo, ln uint64
			if asize == 8 {
				lo, ln = le.Uint64(set[p:]), le.Uint64(set[p+8:])
			} else {
				lo, ln = uint64(le.Uint32(set[p:])), uint64(le.Uint32(set[p+4:]))
			}
			if lo == 0 && ln == 0 {
				break
			}
			if ln > 0 {
				spans = append(spans, unitSpan{lo, lo + ln, unit})
			}
		}
	}
	slices.SortFunc(spans, func(a, b unitSpan) int {
		switch {
		case a.lo < b.lo:
			return -1
		case a.lo > b.lo:
			return 1
		}
		return 0
	})
	return spans, nil
}
