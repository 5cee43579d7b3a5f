package elfsym

import (
	"debug/dwarf"
	"debug/elf"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Inlined functions, from DWARF: where a compiler inlined a function into
// another (gcc -O2 -g, Go), .debug_info keeps a DW_TAG_inlined_subroutine
// with the addresses of its copy, nested as the calls were. InlineChain
// expands one address into the functions inlined there, as perf and
// addr2line -i do. Only files with DWARF are read, on first use, and of
// those only the compilation units holding the addresses asked about: a
// profile touches a few functions of a large library. What is read is
// kept in a cache bounded by the DWARF bytes it holds in all.

// inlineRange is one range of addresses of one inlined copy.
type inlineRange struct {
	lo, hi uint64
	name   uint32 // index into inlineFile.names
	depth  uint16 // inlined calls around it, within its function
}

// unitInlines are one compilation unit's inlined copies, by start.
type unitInlines struct {
	ranges []inlineRange
	reach  []uint64 // reach[i]: the highest hi of ranges[:i+1]
}

// unitRange is a range of addresses a compilation unit covers.
type unitRange struct {
	lo, hi uint64
	off    dwarf.Offset
}

// inlineFile is what is known of one file's DWARF: the units' ranges,
// the units read so far, and the function names they use.
type inlineFile struct {
	mu     sync.Mutex
	d      *dwarf.Data
	units  []unitRange // by lo
	read   map[dwarf.Offset]*unitInlines
	names  []string
	byName map[string]uint32
	origin map[dwarf.Offset]uint32 // abstract origin → name index
	bytes  int                     // the DWARF sections held
}

// HasDWARF reports whether the file carries DWARF debugging information
// (.debug_info with contents): a -g build, or a separate debug file.
func (f *File) HasDWARF() bool { return f.dwarf }

// InlineChain returns the functions inlined at virtual address addr,
// innermost first, as DWARF names them (a C++ function by its mangled
// linkage name), or nil when none is, or the file has no DWARF. The
// function they are inlined into is the symbol ByAddress finds.
func (f *File) InlineChain(addr uint64) []string {
	if !f.dwarf {
		return nil
	}
	t := inlines(f)
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	u := t.unit(addr)
	if u == nil {
		return nil
	}
	rs := u.ranges
	i := sort.Search(len(rs), func(i int) bool { return rs[i].lo > addr }) - 1
	var buf [8]inlineRange
	hit := buf[:0]
	// Ranges nest: those holding addr start at or before it, and the
	// walk back stops where no earlier range reaches past it.
	for ; i >= 0 && u.reach[i] > addr; i-- {
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

// inlineCache holds the files' DWARF, least recently used first out once
// they hold more than inlineBudget bytes of it in all.
var inlineCache = struct {
	sync.Mutex
	files map[*File]*inlineEntry
	bytes int
	tick  uint64
}{files: map[*File]*inlineEntry{}}

type inlineEntry struct {
	once sync.Once
	t    *inlineFile // nil: the DWARF could not be read, or is too large
	used uint64
}

// inlineBudget is how many bytes of DWARF the cache holds: a file with
// more goes without inlined frames.
var inlineBudget = 256 << 20

// inlines returns f's DWARF, reading it on first use.
func inlines(f *File) *inlineFile {
	inlineCache.Lock()
	e := inlineCache.files[f]
	if e == nil {
		e = &inlineEntry{}
		inlineCache.files[f] = e
	}
	inlineCache.tick++
	e.used = inlineCache.tick
	inlineCache.Unlock()
	e.once.Do(func() {
		e.t = openInlines(f.Path)
		if e.t == nil {
			return
		}
		inlineCache.Lock()
		defer inlineCache.Unlock()
		inlineCache.bytes += e.t.bytes
		for inlineCache.bytes > inlineBudget && len(inlineCache.files) > 1 {
			var oldest *File
			for k, c := range inlineCache.files {
				if k != f && (oldest == nil || c.used < inlineCache.files[oldest].used) {
					oldest = k
				}
			}
			if t := inlineCache.files[oldest].t; t != nil {
				inlineCache.bytes -= t.bytes
			}
			delete(inlineCache.files, oldest)
		}
	})
	return e.t
}

// openInlines reads the DWARF of the ELF file at path and the ranges of
// its compilation units, or returns nil when it cannot be read or holds
// more than the cache's budget: its frames go without inlined ones.
func openInlines(path string) *inlineFile {
	ef, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer ef.Close()
	size := 0
	for _, s := range ef.Sections {
		if strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			size += int(s.Size)
		}
	}
	if size > inlineBudget {
		return nil
	}
	d, err := ef.DWARF()
	if err != nil {
		return nil
	}
	t := &inlineFile{d: d, read: map[dwarf.Offset]*unitInlines{}, byName: map[string]uint32{},
		origin: map[dwarf.Offset]uint32{}, bytes: size}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
			if rs, err := d.Ranges(e); err == nil {
				for _, ar := range rs {
					if ar[0] < ar[1] {
						t.units = append(t.units, unitRange{ar[0], ar[1], e.Offset})
					}
				}
			}
		}
		r.SkipChildren()
	}
	sort.Slice(t.units, func(i, j int) bool { return t.units[i].lo < t.units[j].lo })
	return t
}

// unit returns the inlined copies of the unit covering addr, reading
// them on first use; nil when no unit covers it. Called with t.mu held.
func (t *inlineFile) unit(addr uint64) *unitInlines {
	i := sort.Search(len(t.units), func(i int) bool { return t.units[i].lo > addr }) - 1
	if i < 0 || addr >= t.units[i].hi {
		return nil
	}
	off := t.units[i].off
	if u, ok := t.read[off]; ok {
		return u
	}
	u := t.readUnit(off)
	t.read[off] = u
	return u
}

// readUnit reads the inlined copies in the unit at off.
func (t *inlineFile) readUnit(off dwarf.Offset) *unitInlines {
	u := &unitInlines{}
	type pending struct {
		r      inlineRange
		origin dwarf.Offset
	}
	var found []pending
	r := t.d.Reader()
	r.Seek(off)
	if e, err := r.Next(); err != nil || e == nil || !e.Children {
		return u
	}
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
			depth = 0
		case dwarf.TagInlinedSubroutine:
			origin, _ := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
			if rs, err := t.d.Ranges(e); err == nil && origin != 0 {
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
	nr := t.d.Reader()
	u.ranges = make([]inlineRange, 0, len(found))
	for _, p := range found {
		idx, ok := t.origin[p.origin]
		if !ok {
			n := entryName(nr, p.origin, 4)
			if n == "" {
				n = "??"
			}
			if idx, ok = t.byName[n]; !ok {
				idx = uint32(len(t.names))
				t.names = append(t.names, n)
				t.byName[n] = idx
			}
			t.origin[p.origin] = idx
		}
		p.r.name = idx
		u.ranges = append(u.ranges, p.r)
	}
	sort.SliceStable(u.ranges, func(i, j int) bool { return u.ranges[i].lo < u.ranges[j].lo })
	u.reach = make([]uint64, len(u.ranges))
	var hi uint64
	for i, r := range u.ranges {
		hi = max(hi, r.hi)
		u.reach[i] = hi
	}
	return u
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
