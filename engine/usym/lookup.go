package usym

import (
	"path/filepath"

	"github.com/dstar-trace/dstar/providers/elfsym"
)

// Location is where an address of a process lies, as far as it is known:
// Module is empty when no file maps it, Func when no symbol holds it.
type Location struct {
	Module string // the mapped file's base name
	Func   string
	Offset uint64 // into Func
}

// Lookup finds where pc lies in process pid: what usym( ), umod( ) and
// uaddr( ) print. (Frame is the same search rendered as a stack frame.)
func (s *Symbolizer) Lookup(pid int, pc uint64) Location {
	m, ok := s.mapping(pid, pc)
	if !ok || !m.IsFile() {
		return Location{}
	}
	loc := Location{Module: filepath.Base(m.Path)}
	f, err := elfsym.Open(m.Path)
	if err != nil {
		return loc
	}
	v, err := f.Address(m.FileOffset(pc))
	if err != nil {
		return loc
	}
	if sym, ok := f.ByAddress(v); ok {
		loc.Func, loc.Offset = sym.Name, v-sym.Value
	}
	return loc
}
