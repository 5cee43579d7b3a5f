// Package elfsym reads the function symbols of ELF executables and shared
// libraries, for placing uprobes (the pid provider, USDT) and for naming
// user-space addresses (stack symbolisation), and the addresses of their
// data objects, which USDT probe operands name (counter+8(%rip)).
//
// Symbols come from .symtab and .dynsym, and in a file stripped of
// .symtab from its MiniDebugInfo (see minidebug.go); a Go binary stripped of .symtab
// (go build -ldflags=-s) still has its function table in .gopclntab, which
// is read instead. Parsed files are cached per path, device, inode, size and
// modification time, so a file is read once however many probes or stacks
// need it, and a rebuilt file is read again.
//
// Addresses in a Symbol are the ELF's virtual addresses (st_value), as the
// linker assigned them, not run-time addresses: for a PIE or a shared
// library the two differ by the load bias. FileOffset turns one into the
// file offset a uprobe wants; Address is the inverse, for turning a
// run-time address (via its mapping's file offset) back into a symbol.
package elfsym

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"syscall"
)

// Source says which table a symbol came from.
type Source uint8

const (
	SymTab    Source = iota // .symtab
	DynSym                  // .dynsym
	GoPCLNTab               // .gopclntab (Go binaries without .symtab)
	MiniDebug               // .gnu_debugdata's .symtab (MiniDebugInfo)
)

func (s Source) String() string {
	switch s {
	case SymTab:
		return ".symtab"
	case DynSym:
		return ".dynsym"
	case GoPCLNTab:
		return ".gopclntab"
	case MiniDebug:
		return ".gnu_debugdata"
	}
	return "?"
}

// Symbol is a function defined in the file.
type Symbol struct {
	Name   string
	Value  uint64 // virtual address (st_value)
	Size   uint64 // bytes; 0 when the table does not say
	Global bool   // global or weak binding (not local)
	Source Source
}

// Contains reports whether virtual address addr is within the symbol.
func (s Symbol) Contains(addr uint64) bool {
	return s.Value <= addr && (addr < s.Value+s.Size || s.Size == 0 && addr == s.Value)
}

// File is the parsed symbol table of one ELF file. It is immutable and safe
// for concurrent use.
type File struct {
	Path string
	Type elf.Type    // ET_EXEC (non-PIE executable) or ET_DYN (PIE or library)
	Go   bool        // the file has a .gopclntab: a Go binary
	Sym  SymbolState // whether it has .symtab
	// BuildID is the file's GNU build ID (.note.gnu.build-id), or nil.
	BuildID []byte
	// MiniDebug: the stripped file's local functions were read from its
	// MiniDebugInfo (.gnu_debugdata).
	MiniDebug bool
	// debugLink is the name .gnu_debuglink gives the file's separate
	// debug file, and debugCRC that file's CRC-32.
	debugLink string
	debugCRC  uint32
	// dwarf: the file has .debug_info (see InlineChain); aranges: and
	// .debug_aranges, so its units can be read as they are asked for.
	dwarf, aranges bool
	key            cacheKey // the file version it was read from

	syms   []Symbol // by address, then name
	byName map[string]int
	data   map[string]uint64 // other defined symbols (objects), by name
	loads  []elf.ProgHeader  // PT_LOAD headers
}

// SymbolState says how complete a file's symbols are.
type SymbolState uint8

const (
	// Full: the file has .symtab, every function is named.
	Full SymbolState = iota
	// DynamicOnly: stripped of .symtab; only exported (.dynsym) functions,
	// those its MiniDebugInfo names, or, for Go, the .gopclntab
	// functions, are named.
	DynamicOnly
	// None: no function symbols at all.
	None
)

// Stripped reports whether the file has no .symtab.
func (f *File) Stripped() bool { return f.Sym != Full }

// Symbols returns the file's functions in address order. The slice is
// shared: do not modify it.
func (f *File) Symbols() []Symbol { return f.syms }

// Lookup returns the function called name (the first in address order when
// several local functions share a name).
func (f *File) Lookup(name string) (Symbol, bool) {
	i, ok := f.byName[name]
	if !ok {
		return Symbol{}, false
	}
	return f.syms[i], true
}

// Value returns the virtual address of the symbol called name, a function
// or not: a USDT operand such as counter+8(%rip) names a data object.
func (f *File) Value(name string) (uint64, bool) {
	if v, ok := f.data[name]; ok {
		return v, true
	}
	s, ok := f.Lookup(name)
	return s.Value, ok
}

// ByAddress returns the function containing virtual address addr,
// preferring a global name when several name the same code.
func (f *File) ByAddress(addr uint64) (Symbol, bool) {
	// The symbols starting last at or before addr; aliases share a start.
	i := sort.Search(len(f.syms), func(i int) bool { return f.syms[i].Value > addr }) - 1
	var best Symbol
	found := false
	for j := i; j >= 0 && f.syms[j].Value == f.syms[i].Value; j-- {
		if s := f.syms[j]; s.Contains(addr) && (!found || s.Global && !best.Global) {
			best, found = s, true
		}
	}
	return best, found
}

// FileOffset translates virtual address vaddr to its offset in the file,
// through the PT_LOAD program header that maps it: what a uprobe is placed
// by.
func (f *File) FileOffset(vaddr uint64) (uint64, error) {
	for _, p := range f.loads {
		if p.Vaddr <= vaddr && vaddr < p.Vaddr+p.Filesz {
			return vaddr - p.Vaddr + p.Off, nil
		}
	}
	return 0, fmt.Errorf("%s: address %#x is in no loadable segment", f.Path, vaddr)
}

// Address translates file offset off back to a virtual address: for a
// run-time address a in a mapping m, Address(m.FileOffset(a)) is the
// address to look up with ByAddress.
func (f *File) Address(off uint64) (uint64, error) {
	for _, p := range f.loads {
		if p.Off <= off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, nil
		}
	}
	return 0, fmt.Errorf("%s: file offset %#x is in no loadable segment", f.Path, off)
}

// cacheKey identifies one version of a file.
type cacheKey struct {
	path       string
	dev, ino   uint64
	size, mtim int64
}

// cache holds the parsed files, least recently used first out once
// they hold more than cacheBudget symbols in all: a system-wide profile
// running for hours meets every program on the system, and every test
// binary built and deleted meanwhile.
var cache = struct {
	sync.Mutex
	files map[cacheKey]*cached
	syms  int    // symbols held, all files
	tick  uint64 // use counter
}{files: map[cacheKey]*cached{}}

type cached struct {
	f    *File
	used uint64 // cache.tick at last use
}

// cacheBudget is how many symbols the cache holds: some tens of MiB,
// the files a machine's busy programs map several times over.
var cacheBudget = 1 << 18

// weight is what a file counts for against cacheBudget.
func (f *File) weight() int { return len(f.syms) + len(f.data) + 1 }

// Open returns the symbols of the ELF file at path, parsing it on first use
// and from the cache afterwards (until the file changes).
func Open(path string) (*File, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	key := cacheKey{path, uint64(st.Dev), st.Ino, st.Size, st.Mtim.Nano()}
	cache.Lock()
	c := cache.files[key]
	if c != nil {
		cache.tick++
		c.used = cache.tick
	}
	cache.Unlock()
	if c != nil {
		return c.f, nil
	}
	f, err := parse(path)
	if err != nil {
		return nil, err
	}
	f.key = key
	cache.Lock()
	// Drop older versions of the same path: they are stale.
	for k, c := range cache.files {
		if k.path == path {
			cache.syms -= c.f.weight()
			delete(cache.files, k)
		}
	}
	cache.tick++
	cache.files[key] = &cached{f: f, used: cache.tick}
	cache.syms += f.weight()
	for cache.syms > cacheBudget && len(cache.files) > 1 {
		var oldest cacheKey
		first := true
		for k, c := range cache.files {
			if first || c.used < cache.files[oldest].used {
				oldest, first = k, false
			}
		}
		cache.syms -= cache.files[oldest].f.weight()
		delete(cache.files, oldest)
	}
	cache.Unlock()
	return f, nil
}

func parse(path string) (*File, error) {
	ef, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: not an ELF file: %w", path, err)
	}
	defer ef.Close()
	f := &File{Path: path, Type: ef.Type, byName: map[string]int{}, data: map[string]uint64{}}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			f.loads = append(f.loads, p.ProgHeader)
		}
	}
	pcln, pclnErr := goPCLNTab(ef)
	f.Go = pcln != nil
	if s := ef.Section(".debug_info"); s != nil && s.Type != elf.SHT_NOBITS && s.Size > 0 {
		f.dwarf = true
		s := ef.Section(".debug_aranges")
		f.aranges = s != nil && s.Type != elf.SHT_NOBITS && s.Size > 0
	}
	f.BuildID = buildID(ef)
	f.debugLink, f.debugCRC = debugLink(ef)

	type key struct {
		name  string
		value uint64
	}
	seen := map[key]bool{}
	add := func(syms []elf.Symbol, src Source) {
		for _, s := range syms {
			t := elf.ST_TYPE(s.Info)
			if t != elf.STT_FUNC && s.Section != elf.SHN_UNDEF && s.Name != "" {
				if _, dup := f.data[s.Name]; !dup {
					f.data[s.Name] = s.Value // .symtab's, added first, wins
				}
				continue
			}
			if t != elf.STT_FUNC || s.Section == elf.SHN_UNDEF || s.Value == 0 || s.Name == "" {
				continue
			}
			k := key{s.Name, s.Value}
			if seen[k] {
				continue
			}
			seen[k] = true
			b := elf.ST_BIND(s.Info)
			f.syms = append(f.syms, Symbol{
				Name: s.Name, Value: s.Value, Size: s.Size,
				Global: b == elf.STB_GLOBAL || b == elf.STB_WEAK, Source: src,
			})
		}
	}
	syms, err := ef.Symbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return nil, fmt.Errorf("%s: reading .symtab: %w", path, err)
	}
	hasSymtab := err == nil
	add(syms, SymTab)
	dyn, err := ef.DynamicSymbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return nil, fmt.Errorf("%s: reading .dynsym: %w", path, err)
	}
	add(dyn, DynSym)
	if !hasSymtab {
		// A corrupt MiniDebugInfo leaves the file's other symbols
		// usable: only its local functions go unnamed.
		mini, _ := miniDebugSymbols(ef)
		add(mini, MiniDebug)
		f.MiniDebug = len(mini) > 0
	}
	if pclnErr != nil && !hasSymtab {
		return nil, fmt.Errorf("%s: reading .gopclntab: %w", path, pclnErr)
	}
	if !hasSymtab && f.Go {
		gs, err := goFuncs(ef, pcln)
		if err != nil {
			return nil, fmt.Errorf("%s: reading .gopclntab: %w", path, err)
		}
		for _, s := range gs {
			k := key{s.Name, s.Value}
			if !seen[k] {
				seen[k] = true
				f.syms = append(f.syms, s)
			}
		}
	}
	switch {
	case hasSymtab:
		f.Sym = Full
	case len(f.syms) > 0:
		f.Sym = DynamicOnly
	default:
		f.Sym = None
	}
	sort.SliceStable(f.syms, func(i, j int) bool {
		a, b := f.syms[i], f.syms[j]
		if a.Value != b.Value {
			return a.Value < b.Value
		}
		return a.Name < b.Name
	})
	for i, s := range f.syms {
		if _, dup := f.byName[s.Name]; !dup {
			f.byName[s.Name] = i
		}
	}
	return f, nil
}

// buildID returns the GNU build ID note's descriptor, or nil.
func buildID(ef *elf.File) []byte {
	// Linkers write it alone in .note.gnu.build-id; the kernel's vDSO
	// among its other notes in .note.
	for _, sec := range ef.Sections {
		if sec.Type != elf.SHT_NOTE {
			continue
		}
		b, err := sec.Data()
		if err != nil {
			continue
		}
		if id := gnuBuildID(b, ef.ByteOrder); id != nil {
			return id
		}
	}
	return nil
}

// gnuBuildID finds the GNU build ID note among the notes b holds.
func gnuBuildID(b []byte, order binary.ByteOrder) []byte {
	const ntGNUBuildID = 3
	for len(b) >= 12 {
		namesz, descsz, typ := order.Uint32(b), order.Uint32(b[4:]), order.Uint32(b[8:])
		desc := 12 + (uint64(namesz)+3)&^3
		next := desc + (uint64(descsz)+3)&^3
		if desc+uint64(descsz) > uint64(len(b)) {
			return nil
		}
		if typ == ntGNUBuildID && namesz == 4 && string(b[12:15]) == "GNU" {
			return b[desc : desc+uint64(descsz)]
		}
		if next >= uint64(len(b)) {
			return nil
		}
		b = b[next:]
	}
	return nil
}
