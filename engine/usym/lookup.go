package usym

import (
	"encoding/hex"
	"path/filepath"
)

// Location is where an address of a process lies, as far as it is known:
// Module is empty when no file maps it, Func when no symbol holds it.
// Func is demangled (see Demangle).
type Location struct {
	Module string // the mapped file's base name
	Func   string
	Offset uint64 // into Func
}

// Lookup finds where pc lies in process pid: what usym( ), umod( ) and
// uaddr( ) print, and Frame renders as a stack frame. A stripped file's
// local functions are named from its debug file, when one is installed.
func (s *Symbolizer) Lookup(pid int, pc uint64) Location {
	m, ok := s.mapping(pid, pc)
	if !ok || !m.IsFile() {
		return Location{}
	}
	loc := Location{Module: filepath.Base(m.Path)}
	sf := s.file(m)
	if sf.f == nil {
		return loc
	}
	v, err := sf.f.Address(m.FileOffset(pc))
	if err != nil {
		return loc
	}
	sym, ok := sf.f.ByAddress(v)
	if d := sf.debugFile(); !ok && d != nil {
		sym, ok = d.ByAddress(v)
	}
	if ok {
		loc.Func, loc.Offset = Demangle(sym.Name), v-sym.Value
	}
	return loc
}

// Mapped is the file mapping that holds an address, for profiles that
// name a frame's binary: its run-time range, the file offset of Start,
// and the file's GNU build ID when it has one.
type Mapped struct {
	Path       string
	Start, End uint64
	Offset     uint64
	BuildID    string // hex
}

// Mapping finds the file mapping of process pid that holds pc.
func (s *Symbolizer) Mapping(pid int, pc uint64) (Mapped, bool) {
	m, ok := s.mapping(pid, pc)
	if !ok || !m.IsFile() {
		return Mapped{}, false
	}
	out := Mapped{Path: m.Path, Start: m.Start, End: m.End, Offset: m.Offset}
	if sf := s.file(m); sf.f != nil && len(sf.f.BuildID) > 0 {
		out.BuildID = hex.EncodeToString(sf.f.BuildID)
	}
	return out, true
}
