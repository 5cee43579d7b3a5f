// Package ksym turns kernel addresses into symbols, as stack(), func()
// and printf's %a print them: module`function+0xoffset, from
// /proc/kallsyms; and D's `name and module`name into addresses.
package ksym

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"sync"
)

// Symbol is where an address lies: in Func of Module, Offset bytes in.
type Symbol struct {
	Module string // "vmlinux" for the kernel itself
	Func   string
	Offset uint64
}

// String renders s as DTrace does: vmlinux`do_syscall_64+0x68, without
// "+0x0" at a function's start.
func (s Symbol) String() string {
	if s.Offset == 0 {
		return s.Module + "`" + s.Func
	}
	// Concatenation, not Sprintf: a profile prints hundreds of
	// thousands of frames.
	return s.Module + "`" + s.Func + "+0x" + strconv.FormatUint(s.Offset, 16)
}

// Table is the kernel's symbols sorted by address: its text symbols, and
// the data symbols kallsyms lists (all of them only on kernels built with
// CONFIG_KALLSYMS_ALL).
type Table struct {
	addrs []uint64
	funcs []string
	mods  []string
	all   []Func // every text symbol, in kallsyms order
}

// Func is a kernel function's name and module.
type Func struct{ Name, Module string }

// maxGap bounds how far past the last symbol an address may be and still
// be taken as inside it.
const maxGap = 1 << 20

var (
	loadOnce sync.Once
	loaded   *Table
	loadErr  error
)

// Kernel returns the running kernel's table, read once per process.
func Kernel() (*Table, error) {
	loadOnce.Do(func() {
		f, err := os.Open("/proc/kallsyms")
		if err != nil {
			loadErr = err
			return
		}
		defer f.Close()
		// One large read: kallsyms is slow to read in small pieces.
		loaded, loadErr = Parse(bufio.NewReaderSize(f, 1<<20))
	})
	return loaded, loadErr
}

// Parse reads kallsyms text: "ADDRESS TYPE NAME [MODULE]" lines. Code
// symbols (types t, T, w, W) and data ones (d, D, b, B, r, R, v, V) are
// kept, the others (absolute, per-CPU offsets) not; zero addresses, which
// mean the addresses are hidden, are listed by Functions but not looked up.
func Parse(r io.Reader) (*Table, error) {
	type sym struct {
		addr   uint64
		global bool
		code   bool
		order  int
		fn     string
		mod    string
	}
	var syms []sym
	lowest := ^uint64(0)        // the lowest code address
	mods := map[string]string{} // one string per module name
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 0; sc.Scan(); n++ {
		line := sc.Bytes()
		f := bytes.Fields(line)
		if len(f) < 3 || len(f[1]) != 1 {
			continue
		}
		code := false
		switch f[1][0] {
		case 't', 'T', 'w', 'W':
			code = true
		case 'd', 'D', 'b', 'B', 'r', 'R', 'v', 'V':
		default:
			continue
		}
		addr, err := strconv.ParseUint(string(f[0]), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("kallsyms line %d: bad address %q", n+1, f[0])
		}
		if code && addr != 0 {
			lowest = min(lowest, addr)
		}
		mod := "vmlinux"
		if len(f) >= 4 && len(f[3]) > 2 && f[3][0] == '[' {
			name := string(f[3][1 : len(f[3])-1])
			if m, ok := mods[name]; ok {
				mod = m
			} else {
				mods[name] = name
				mod = name
			}
		}
		global := f[1][0] >= 'A' && f[1][0] <= 'Z'
		syms = append(syms, sym{addr, global, code, n, string(f[2]), mod})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	t := &Table{}
	for _, s := range syms {
		if s.code {
			t.all = append(t.all, Func{s.fn, s.mod})
		}
	}
	// At one address, code is preferred to data, a global name to a
	// local alias, then the one listed first.
	sort.Slice(syms, func(i, j int) bool {
		a, b := syms[i], syms[j]
		if a.addr != b.addr {
			return a.addr < b.addr
		}
		if a.code != b.code {
			return a.code
		}
		if a.global != b.global {
			return a.global
		}
		return a.order < b.order
	})
	for i, s := range syms {
		// Zero is a hidden address: the name is listed, not placed.
		// Data below the kernel's code are per-CPU offsets, which
		// would give small numbers names.
		if s.addr == 0 || i > 0 && syms[i-1].addr == s.addr || !s.code && s.addr < lowest {
			continue
		}
		t.addrs = append(t.addrs, s.addr)
		t.funcs = append(t.funcs, s.fn)
		t.mods = append(t.mods, s.mod)
	}
	return t, nil
}

// Functions returns every text symbol in kallsyms order (local ones with
// the same name in several places more than once).
func (t *Table) Functions() []Func { return t.all }

// Len is the number of distinct symbol addresses.
func (t *Table) Len() int { return len(t.addrs) }

// Lookup finds the symbol containing addr (none when kallsyms hides the
// addresses from this user).
func (t *Table) Lookup(addr uint64) (Symbol, bool) {
	i := sort.Search(len(t.addrs), func(i int) bool { return t.addrs[i] > addr }) - 1
	if i < 0 {
		return Symbol{}, false
	}
	off := addr - t.addrs[i]
	// Past the last symbol of a module (or of the kernel), the address
	// is in no function we know of.
	last := i+1 == len(t.addrs) || t.mods[i+1] != t.mods[i]
	if last && off >= maxGap {
		return Symbol{}, false
	}
	return Symbol{Module: t.mods[i], Func: t.funcs[i], Offset: off}, true
}

// Address returns the address of function name (in any module), for
// tests and for resolving names the user gives.
func (t *Table) Address(name string) (uint64, bool) {
	for i, f := range t.funcs {
		if f == name {
			return t.addrs[i], true
		}
	}
	return 0, false
}

// Extent is where a function's code lies: [Lo, Hi), from its address to
// the next symbol's.
type Extent struct{ Lo, Hi uint64 }

// Extents returns where the functions keep selects lie, read afresh from
// /proc/kallsyms. It does not fill Kernel's table: that one is read when
// first needed, so that it names the BPF programs loaded by then (the
// compiler asks for extents before any program is loaded).
func Extents(keep func(name string) bool) (map[string]Extent, error) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Parse(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return nil, err
	}
	return t.extents(keep), nil
}

// extents returns where the functions keep selects lie in t.
func (t *Table) extents(keep func(name string) bool) map[string]Extent {
	out := map[string]Extent{}
	for i, name := range t.funcs {
		if t.addrs[i] == 0 || !keep(name) {
			continue
		}
		hi := t.addrs[i] + maxGap
		if i+1 < len(t.addrs) && t.mods[i+1] == t.mods[i] {
			hi = t.addrs[i+1]
		}
		out[name] = Extent{t.addrs[i], hi}
	}
	return out
}

// Named is a kernel symbol found by its name.
type Named struct {
	Module string // "vmlinux" for the kernel itself
	Name   string
	Addr   uint64
	Code   bool // a function's (text) symbol, not data
}

// Names is kallsyms text, searched by name for D's `name and module`name.
// It is kept as text: a program names few symbols, and indexing all of
// them would cost more than reading the file.
type Names struct{ text []byte }

var kernelNames = sync.OnceValues(func() (Names, error) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return Names{}, err
	}
	defer f.Close()
	return ParseNames(bufio.NewReaderSize(f, 1<<20))
})

// KernelNames returns the running kernel's symbols by name, read once per
// process and apart from Kernel's table, which is read later so that it
// names the BPF programs loaded by then.
func KernelNames() (Names, error) { return kernelNames() }

// ParseNames reads kallsyms text ("ADDRESS TYPE NAME [MODULE]" lines).
func ParseNames(r io.Reader) (Names, error) {
	text, err := io.ReadAll(r)
	return Names{text}, err
}

// Find returns symbol name of module, or of any module when module is ""
// (the kernel's own first, then the first module's). Code symbols (t, T,
// w, W) and data ones (d, D, b, B, r, R, v, V) are found; hidden (zero)
// addresses are not. A module that has no symbols is unknown.
func (ns Names) Find(module, name string) (Named, error) {
	var first Named
	found := false
	for text := ns.text; ; {
		// " name" ending the line or followed by the module.
		i := bytes.Index(text, []byte(" "+name))
		if i < 0 {
			break
		}
		end := i + 1 + len(name)
		line := text[:end]
		text = text[end:]
		if len(text) > 0 && text[0] != '\n' && text[0] != '\t' {
			continue
		}
		if nl := bytes.LastIndexByte(line, '\n'); nl >= 0 {
			line = line[nl+1:]
		}
		s, ok := parseNamed(line, text)
		if !ok || module != "" && s.Module != module {
			continue
		}
		if s.Module == "vmlinux" || module != "" {
			return s, nil
		}
		if !found {
			first, found = s, true
		}
	}
	if found {
		return first, nil
	}
	if module != "" && module != "vmlinux" && !bytes.Contains(ns.text, []byte("\t["+module+"]")) {
		return Named{}, ErrNoModule
	}
	return Named{}, ErrNoSymbol
}

// parseNamed reads "ADDRESS TYPE NAME" in line and the "\t[MODULE]" that
// may follow in rest.
func parseNamed(line, rest []byte) (Named, bool) {
	f := bytes.Fields(line)
	if len(f) != 3 || len(f[1]) != 1 {
		return Named{}, false
	}
	code := false
	switch f[1][0] {
	case 't', 'T', 'w', 'W':
		code = true
	case 'd', 'D', 'b', 'B', 'r', 'R', 'v', 'V':
	default:
		return Named{}, false
	}
	addr, err := strconv.ParseUint(string(f[0]), 16, 64)
	if err != nil || addr == 0 {
		return Named{}, false
	}
	mod := "vmlinux"
	if len(rest) > 1 && rest[0] == '\t' && rest[1] == '[' {
		if end := bytes.IndexByte(rest, ']'); end > 0 {
			mod = string(rest[2:end])
		}
	}
	return Named{Module: mod, Name: string(f[2]), Addr: addr, Code: code}, true
}

// The errors of Find, worded as DTrace words them.
var (
	ErrNoSymbol = errors.New("Unknown symbol name")
	ErrNoModule = errors.New("Unknown module name")
)
