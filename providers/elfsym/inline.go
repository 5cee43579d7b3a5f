package elfsym

import (
	"cmp"
	"debug/dwarf"
	"debug/elf"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Inlined functions, from DWARF: where a compiler inlined a function into
// another (gcc -O2 -g, Go), .debug_info keeps a DW_TAG_inlined_subroutine
// with the addresses of its copy, nested as the calls were. InlineChain
// expands one address into the functions inlined there, as perf and
// addr2line -i do.
//
// Reading is never done on the caller's time when it need not be: a
// file's DWARF is read by a goroutine of its own, begun by
// PreloadInlines or the first lookup, and InlineChainReady answers "not
// yet" meanwhile (WaitInlines waits for it). Where .debug_aranges maps
// addresses to compilation units (gcc writes it), only the sections are
// read at first, and the units holding the addresses asked for are
// walked as they are asked for: libc has 4,000 units, and a profile
// meets a few dozen. Without it (Go, clang), every inlined copy is read
// at once. Either way the copies found go into compact tables, and
// debug/dwarf's own structures (twice or three times the sections' size:
// 20 MB for libc's) are let go. The files' indexes are kept in a cache
// bounded by their size in all.

// inlineRange is one range of addresses of one inlined copy.
type inlineRange struct {
	lo, hi uint64
	name   uint32 // index into inlineTable.names
	depth  uint16 // inlined calls around it, within its function
}

// inlineRangeSize is what an inlineRange and its reach take.
const inlineRangeSize = 24 + 8

// inlineTable is inlined copies, by start address: a file's, or one
// compilation unit's.
type inlineTable struct {
	ranges []inlineRange
	reach  []uint64 // reach[i]: the highest hi of ranges[:i+1]
	names  []string
}

// weight is what the table counts for against inlineBudget, in bytes.
func (t *inlineTable) weight() int {
	if t == nil {
		return 0
	}
	n := len(t.ranges) * inlineRangeSize
	for _, s := range t.names {
		n += len(s) + 16
	}
	return n
}

// chain returns the names of the copies holding addr, innermost first.
func (t *inlineTable) chain(addr uint64) []string {
	rs := t.ranges
	i := sort.Search(len(rs), func(i int) bool { return rs[i].lo > addr }) - 1
	var buf [8]inlineRange
	hit := buf[:0]
	// Ranges nest: those holding addr start at or before it, and the
	// walk back stops where no earlier range reaches past it.
	for ; i >= 0 && t.reach[i] > addr; i-- {
		if rs[i].hi > addr {
			hit = append(hit, rs[i])
		}
	}
	if len(hit) == 0 {
		return nil
	}
	slices.SortStableFunc(hit, func(a, b inlineRange) int { return int(b.depth) - int(a.depth) })
	out := make([]string, len(hit))
	for j, r := range hit {
		out[j] = t.names[r.name]
	}
	return out
}

// HasDWARF reports whether the file carries DWARF debugging information
// (.debug_info with contents): a -g build, or a separate debug file.
func (f *File) HasDWARF() bool { return f.dwarf }

// InlineChain returns the functions inlined at virtual address addr,
// innermost first, as DWARF names them (a C++ function by its mangled
// linkage name), or nil when none is, or the file has no DWARF. The
// function they are inlined into is the symbol ByAddress finds. It
// waits for what of the file's DWARF it needs to be read.
func (f *File) InlineChain(addr uint64) []string {
	if !f.dwarf {
		return nil
	}
	ix := inlines(f)
	for {
		if c, ok := ix.chain(addr); ok {
			return c
		}
		ix.wait(nil)
	}
}

// InlineChainReady is InlineChain without the wait: when the DWARF it
// needs is not read yet, it has it read in the background and returns
// false; asked again once that is done (WaitInlines), it answers.
func (f *File) InlineChainReady(addr uint64) ([]string, bool) {
	if !f.dwarf {
		return nil, true
	}
	return inlines(f).chain(addr)
}

// PreloadInlines begins reading the file's DWARF for inlined copies in
// the background, if it has DWARF with .debug_aranges and the reading
// has not begun: what lookups will want next is then ready, or nearer.
// A file without .debug_aranges (Go's, clang's) is read whole, its
// every unit (dstar's own: 0.6 s), so only once a frame in it is named:
// a profile of every process meets many files it never names a frame in
// while tracing.
func (f *File) PreloadInlines() {
	if f.dwarf && f.aranges {
		inlines(f).start()
	}
}

// WaitInlines waits until the reading InlineChainReady asked for is
// done, or until timeout (nil: none) fires; it reports whether it is.
func (f *File) WaitInlines(timeout <-chan time.Time) bool {
	if !f.dwarf {
		return true
	}
	return inlines(f).wait(timeout)
}

// inlineCache holds the files' inline indexes, by file version, least
// recently used first out once they weigh more than inlineBudget in all.
var inlineCache = struct {
	sync.Mutex
	tabs   map[cacheKey]*inlineIndex
	weight int
	tick   uint64
}{tabs: map[cacheKey]*inlineIndex{}}

// inlineBudget is how many bytes the indexes may take in all: libc's
// takes 7 MB of sections and some kilobytes a unit read.
var inlineBudget = 32 << 20

// maxDWARF is the most DWARF a file may have for its inlined copies to
// be read: each megabyte of sections takes some 50 ms to read whole and
// allocates 13 MB on the way (libc's 7 MB: 0.4 s, 92 MB), so a file
// with more goes without inlined frames.
var maxDWARF = 64 << 20

// inlines returns f's inline index, made on first use (unread).
func inlines(f *File) *inlineIndex {
	inlineCache.Lock()
	defer inlineCache.Unlock()
	ix := inlineCache.tabs[f.key]
	if ix == nil {
		ix = &inlineIndex{path: f.Path, key: f.key, units: map[uint64]*inlineTable{}}
		inlineCache.tabs[f.key] = ix
	}
	inlineCache.tick++
	ix.used = inlineCache.tick
	return ix
}

// reweigh sets ix's weight in the cache to w, and lets the least
// recently used indexes go while the cache is over its budget.
func reweigh(ix *inlineIndex, w int) {
	inlineCache.Lock()
	defer inlineCache.Unlock()
	if inlineCache.tabs[ix.key] != ix {
		return // let go meanwhile
	}
	inlineCache.weight += w - ix.weight
	ix.weight = w
	for inlineCache.weight > inlineBudget && len(inlineCache.tabs) > 1 {
		var oldest *inlineIndex
		for k, c := range inlineCache.tabs {
			if k != ix.key && (oldest == nil || c.used < oldest.used) {
				oldest = c
			}
		}
		inlineCache.weight -= oldest.weight
		delete(inlineCache.tabs, oldest.key)
	}
}

// readInlines reads the inline table of the ELF file at path whole, or
// returns nil when its DWARF cannot be read or is larger than maxDWARF:
// its frames go without inlined ones.
func readInlines(path string) *inlineTable {
	ef, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer ef.Close()
	d, _, err := inlineDWARF(ef)
	if err != nil {
		return nil
	}
	return wholeTable(d)
}

// wholeTable reads every inlined copy of d.
func wholeTable(d *dwarf.Data) *inlineTable {
	var found []pending
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if (e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit) && e.Children {
			found = walkUnit(d, r, found)
		} else if e.Children {
			r.SkipChildren()
		}
	}
	return newTable(d.Reader(), found, nil)
}

// newTable makes the table of the copies found, naming their functions
// through nr; within, unless nil, says which entries nr can read.
func newTable(nr *dwarf.Reader, found []pending, within func(dwarf.Offset) bool) *inlineTable {
	t := &inlineTable{}
	origins := map[dwarf.Offset]uint32{}
	byName := map[string]uint32{}
	t.ranges = make([]inlineRange, 0, len(found))
	for _, p := range found {
		idx, ok := origins[p.origin]
		if !ok {
			n := entryName(nr, p.origin, 4, within)
			if n == "" {
				n = "??"
			}
			if idx, ok = byName[n]; !ok {
				idx = uint32(len(t.names))
				t.names = append(t.names, n)
				byName[n] = idx
			}
			origins[p.origin] = idx
		}
		p.r.name = idx
		t.ranges = append(t.ranges, p.r)
	}
	slices.SortStableFunc(t.ranges, func(a, b inlineRange) int { return cmp.Compare(a.lo, b.lo) })
	t.reach = make([]uint64, len(t.ranges))
	var hi uint64
	for i, r := range t.ranges {
		hi = max(hi, r.hi)
		t.reach[i] = hi
	}
	return t
}

// pending is an inlined copy's range, its function not yet named.
type pending struct {
	r      inlineRange
	origin dwarf.Offset
}

// walkUnit appends to found the inlined copies among the children of
// the unit r has just read, and leaves r after them.
func walkUnit(d *dwarf.Data, r *dwarf.Reader, found []pending) []pending {
	// depths[k] is the inline depth inside the k-th open entry; the
	// unit's own children are at depths[0].
	depths := []int{0}
	for len(depths) > 0 {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == 0 { // the end of an entry's children
			depths = depths[:len(depths)-1]
			continue
		}
		depth := depths[len(depths)-1]
		switch e.Tag {
		case dwarf.TagSubprogram:
			// A declaration or an abstract instance has no code: its
			// copies are in the concrete instances elsewhere.
			if e.Val(dwarf.AttrLowpc) == nil && e.Val(dwarf.AttrRanges) == nil {
				if e.Children {
					r.SkipChildren()
				}
				continue
			}
			depth = 0
		case dwarf.TagInlinedSubroutine:
			origin, _ := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
			if rs, err := d.Ranges(e); err == nil && origin != 0 {
				for _, ar := range rs {
					if ar[0] < ar[1] {
						found = append(found, pending{inlineRange{lo: ar[0], hi: ar[1], depth: uint16(min(depth, 1<<16-1))}, origin})
					}
				}
			}
			depth++
		case dwarf.TagLexDwarfBlock, dwarf.TagNamespace, dwarf.TagModule, dwarf.TagTryDwarfBlock, dwarf.TagCatchDwarfBlock:
		default:
			// Types, variables, parameters: no code inside.
			if e.Children {
				r.SkipChildren()
			}
			continue
		}
		if e.Children {
			depths = append(depths, depth)
		}
	}
	return found
}

// inlineSections are the DWARF sections inlined copies are read from:
// the entries, their abbreviations, names and ranges, in DWARF 4's
// sections and DWARF 5's. The line table and location lists, as large
// again, are left unread.
var inlineSections = []string{"info", "abbrev", "str", "ranges", "rnglists", "addr", "str_offsets", "line_str"}

// inlineDWARF reads ef's DWARF for inlined copies, and says how many
// bytes of sections it read.
func inlineDWARF(ef *elf.File) (*dwarf.Data, int, error) {
	data, size, err := readSections(ef, inlineSections)
	if err != nil {
		return nil, size, err
	}
	d, err := newDWARF(data, data["info"])
	return d, size, err
}

// readSections reads ef's DWARF sections named (without .debug_),
// uncompressed, and says how many bytes it read: at most maxDWARF.
func readSections(ef *elf.File, names []string) (map[string][]byte, int, error) {
	data := map[string][]byte{}
	size := 0
	for _, s := range ef.Sections {
		name, ok := strings.CutPrefix(s.Name, ".debug_")
		if !ok {
			if name, ok = strings.CutPrefix(s.Name, ".zdebug_"); !ok {
				continue
			}
		}
		if !slices.Contains(names, name) || s.Type == elf.SHT_NOBITS {
			continue
		}
		if size += int(s.Size); size > maxDWARF {
			return nil, size, errors.New("DWARF too large")
		}
		b, err := s.Data()
		if err != nil {
			return nil, 0, err
		}
		data[name] = b
	}
	return data, size, nil
}

// newDWARF makes DWARF of the sections in data, with info for
// .debug_info. Unlike elf.File.DWARF it applies no relocations: linked
// files (executables, libraries, their debug files) have none to apply.
func newDWARF(data map[string][]byte, info []byte) (*dwarf.Data, error) {
	d, err := dwarf.New(data["abbrev"], nil, nil, info, nil, nil, data["ranges"], data["str"])
	if err != nil {
		return nil, err
	}
	for _, name := range inlineSections[4:] {
		if b := data[name]; b != nil {
			if err := d.AddSection(".debug_"+name, b); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// attrMIPSLinkageName is DW_AT_MIPS_linkage_name, the linkage name of
// DWARF before version 4, which older compilers still write.
const attrMIPSLinkageName dwarf.Attr = 0x2007

// entryName names the function entry off describes: by a linkage name
// (a C++ or Rust function's mangled name, which says its class and
// namespace) on it or on the declaration or abstract instance it refers
// to, up to hops references away; else by its plain name. Entries
// outside within (unless nil) are not read.
func entryName(r *dwarf.Reader, off dwarf.Offset, hops int, within func(dwarf.Offset) bool) string {
	linkage, name := entryNames(r, off, hops, within)
	if linkage != "" {
		return linkage
	}
	return name
}

func entryNames(r *dwarf.Reader, off dwarf.Offset, hops int, within func(dwarf.Offset) bool) (linkage, name string) {
	if within != nil && !within(off) {
		return "", ""
	}
	r.Seek(off)
	e, err := r.Next()
	if err != nil || e == nil {
		return "", ""
	}
	for _, a := range []dwarf.Attr{dwarf.AttrLinkageName, attrMIPSLinkageName} {
		if n, ok := e.Val(a).(string); ok && n != "" {
			return n, ""
		}
	}
	name, _ = e.Val(dwarf.AttrName).(string)
	if hops == 0 {
		return "", name
	}
	for _, a := range []dwarf.Attr{dwarf.AttrSpecification, dwarf.AttrAbstractOrigin} {
		if ref, ok := e.Val(a).(dwarf.Offset); ok {
			l, n := entryNames(r, ref, hops-1, within)
			if l != "" {
				return l, ""
			}
			if name == "" {
				name = n
			}
		}
	}
	return "", name
}
