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
)

// Inlined functions, from DWARF: where a compiler inlined a function into
// another (gcc -O2 -g, Go), .debug_info keeps a DW_TAG_inlined_subroutine
// with the addresses of its copy, nested as the calls were. InlineChain
// expands one address into the functions inlined there, as perf and
// addr2line -i do. Only files with DWARF are read, on first use: all of
// their inlined copies at once, into a compact table, and the DWARF
// itself is let go (Go's debug/dwarf keeps twice or three times its
// sections' size in memory: 20 MB for libc's). The tables are kept in a
// cache bounded by their size in all.

// inlineRange is one range of addresses of one inlined copy.
type inlineRange struct {
	lo, hi uint64
	name   uint32 // index into inlineTable.names
	depth  uint16 // inlined calls around it, within its function
}

// inlineRangeSize is what an inlineRange and its reach take.
const inlineRangeSize = 24 + 8

// inlineTable is a file's inlined copies, by start address.
type inlineTable struct {
	ranges []inlineRange
	reach  []uint64 // reach[i]: the highest hi of ranges[:i+1]
	names  []string
}

// weight is what the table counts for against inlineBudget, in bytes.
func (t *inlineTable) weight() int {
	n := len(t.ranges) * inlineRangeSize
	for _, s := range t.names {
		n += len(s) + 16
	}
	return n
}

// HasDWARF reports whether the file carries DWARF debugging information
// (.debug_info with contents): a -g build, or a separate debug file.
func (f *File) HasDWARF() bool { return f.dwarf }

// InlineChain returns the functions inlined at virtual address addr,
// innermost first, as DWARF names them (a C++ function by its mangled
// linkage name), or nil when none is, or the file has no DWARF. The
// function they are inlined into is the symbol ByAddress finds. The
// file's DWARF is read on the first call.
func (f *File) InlineChain(addr uint64) []string {
	if !f.dwarf {
		return nil
	}
	t := inlines(f)
	if t == nil {
		return nil
	}
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

// inlineCache holds the files' inline tables, by file version, least
// recently used first out once they weigh more than inlineBudget in all.
var inlineCache = struct {
	sync.Mutex
	tabs   map[cacheKey]*inlineEntry
	weight int
	tick   uint64
}{tabs: map[cacheKey]*inlineEntry{}}

type inlineEntry struct {
	once sync.Once
	tab  *inlineTable // nil: the DWARF could not be read, or is too large
	used uint64
}

// inlineBudget is how many bytes the tables may take in all: libc's
// takes half a megabyte.
var inlineBudget = 32 << 20

// maxDWARF is the most DWARF a file may have for its inlined copies to
// be read: each megabyte of sections takes some 50 ms to read and
// allocates 13 MB on the way (libc's 7 MB: 0.4 s, 92 MB), so a file
// with more goes without inlined frames.
var maxDWARF = 64 << 20

// inlines returns f's inline table, reading it on first use.
func inlines(f *File) *inlineTable {
	inlineCache.Lock()
	e := inlineCache.tabs[f.key]
	if e == nil {
		e = &inlineEntry{}
		inlineCache.tabs[f.key] = e
	}
	inlineCache.tick++
	e.used = inlineCache.tick
	inlineCache.Unlock()
	e.once.Do(func() {
		e.tab = readInlines(f.Path)
		if e.tab == nil {
			return
		}
		inlineCache.Lock()
		defer inlineCache.Unlock()
		inlineCache.weight += e.tab.weight()
		for inlineCache.weight > inlineBudget && len(inlineCache.tabs) > 1 {
			var oldest cacheKey
			found := false
			for k, c := range inlineCache.tabs {
				if k != f.key && (!found || c.used < inlineCache.tabs[oldest].used) {
					oldest, found = k, true
				}
			}
			if t := inlineCache.tabs[oldest].tab; t != nil {
				inlineCache.weight -= t.weight()
			}
			delete(inlineCache.tabs, oldest)
		}
	})
	return e.tab
}

// readInlines reads the inline table of the ELF file at path, or returns
// nil when its DWARF cannot be read or is larger than maxDWARF: its
// frames go without inlined ones.
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
	t := &inlineTable{}
	origins := map[dwarf.Offset]uint32{}
	byName := map[string]uint32{}
	nr := d.Reader()
	t.ranges = make([]inlineRange, 0, len(found))
	for _, p := range found {
		idx, ok := origins[p.origin]
		if !ok {
			n := entryName(nr, p.origin, 4)
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
// bytes of sections it read. Unlike elf.File.DWARF it applies no
// relocations: linked files (executables, libraries, their debug files)
// have none to apply.
func inlineDWARF(ef *elf.File) (*dwarf.Data, int, error) {
	data := map[string][]byte{}
	size := 0
	for _, s := range ef.Sections {
		name, ok := strings.CutPrefix(s.Name, ".debug_")
		if !ok {
			if name, ok = strings.CutPrefix(s.Name, ".zdebug_"); !ok {
				continue
			}
		}
		if !slices.Contains(inlineSections, name) || s.Type == elf.SHT_NOBITS {
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
	d, err := dwarf.New(data["abbrev"], nil, nil, data["info"], nil, nil, data["ranges"], data["str"])
	if err != nil {
		return nil, 0, err
	}
	for _, name := range inlineSections[4:] {
		if b := data[name]; b != nil {
			if err := d.AddSection(".debug_"+name, b); err != nil {
				return nil, 0, err
			}
		}
	}
	return d, size, nil
}

// attrMIPSLinkageName is DW_AT_MIPS_linkage_name, the linkage name of
// DWARF before version 4, which older compilers still write.
const attrMIPSLinkageName dwarf.Attr = 0x2007

// entryName names the function entry off describes: by a linkage name
// (a C++ or Rust function's mangled name, which says its class and
// namespace) on it or on the declaration or abstract instance it refers
// to, up to hops references away; else by its plain name.
func entryName(r *dwarf.Reader, off dwarf.Offset, hops int) string {
	linkage, name := entryNames(r, off, hops)
	if linkage != "" {
		return linkage
	}
	return name
}

func entryNames(r *dwarf.Reader, off dwarf.Offset, hops int) (linkage, name string) {
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
			l, n := entryNames(r, ref, hops-1)
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
