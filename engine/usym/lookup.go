package usym

import (
	"encoding/hex"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/dstar-trace/dstar/providers/elfsym"
	"github.com/dstar-trace/dstar/providers/procmaps"
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
	loc, _, _ := s.locate(pid, pc)
	return loc
}

// locate finds where pc lies in process pid, and the symbols of the file
// mapped there (nil if none) with pc's virtual address in it.
func (s *Symbolizer) locate(pid int, pc uint64) (Location, *symFile, uint64) {
	m, ok := s.mapping(pid, pc)
	if !ok || !m.IsFile() && !m.IsVDSO() {
		return Location{}, nil, 0
	}
	loc := Location{Module: filepath.Base(m.Path)}
	sf := s.file(pid, m)
	if sf.f == nil {
		return loc, nil, 0
	}
	v, err := sf.f.Address(m.FileOffset(pc))
	if err != nil {
		return loc, nil, 0
	}
	sym, ok := sf.f.ByAddress(v)
	if d := sf.debugFile(); !ok && d != nil {
		sym, ok = d.ByAddress(v)
	}
	switch r, in := sf.function(v); {
	case ok:
		loc.Func, loc.Offset = Demangle(sym.Name), v-sym.Value
	case in:
		// A function no symbol names (a stripped file's local one) is
		// known by where its FDE says it starts, at run time: so its
		// samples fold together, as a named function's do.
		loc.Func, loc.Offset = "0x"+strconv.FormatUint(pc-(v-r.Start), 16), v-r.Start
	}
	return loc, sf, v
}

// InlinedMark ends a frame naming a function inlined at the address of
// the frame after it.
const InlinedMark = " (inlined)"

// Frames renders pc as Frame does, preceded, when inline is set, by the
// functions the compiler inlined there, innermost first, as perf shows
// them: module`function (inlined). They come from the DWARF of the file
// or of its debug file. ret says pc is a return address (every frame of
// a stack but the first): the call it returns from, just before it, is
// what was inlined, for the call may be the inlined copy's last
// instruction. Frames never waits for a file's DWARF: see WaitInlines.
func (s *Symbolizer) Frames(pid int, pc uint64, ret, inline bool) []string {
	loc, sf, v := s.locate(pid, pc)
	frame := render(loc, pc)
	if !inline || sf == nil || loc.Func == "" {
		return []string{frame}
	}
	chain := s.inlinedAt(sf, v, ret, loc.Module)
	out := make([]string, 0, len(chain)+1)
	return append(append(out, chain...), frame)
}

// inlinedAt returns the frames of the functions inlined at virtual
// address v of the file (module is its name), innermost first, through
// the file's cache. It waits for the file's DWARF at most frameWait, so
// that what is printed while tracing does not depend on how fast it is
// read (the reading begins at a process's first walk: it is mostly done
// by then); past that, and for the file's frames after, it returns none,
// uncached, and counts the naming incomplete (see WaitInlines).
func (s *Symbolizer) inlinedAt(sf *symFile, v uint64, ret bool, module string) []string {
	k := inlineKey{v, ret}
	sf.mu.Lock()
	chain, ok := sf.inlined[k]
	sf.mu.Unlock()
	if ok {
		return chain
	}
	if ret && v > 0 {
		v--
	}
	f := sf.inlineFile()
	if f == nil {
		return nil
	}
	names, ready := inlineChain(f, v)
	if !ready {
		s.mu.Lock()
		_, late := s.unread[f]
		s.mu.Unlock()
		if !late {
			t := time.NewTimer(frameWait)
			waitInlines(f, t.C)
			t.Stop()
			names, ready = inlineChain(f, v)
		}
	}
	if !ready {
		s.mu.Lock()
		s.unread[f] = module
		s.unready++
		s.mu.Unlock()
		return nil
	}
	for _, name := range names {
		chain = append(chain, module+"`"+Demangle(name)+InlinedMark)
	}
	sf.mu.Lock()
	if sf.inlined == nil || len(sf.inlined) >= maxInlined {
		sf.inlined = map[inlineKey][]string{}
	}
	sf.inlined[k] = chain
	sf.mu.Unlock()
	return chain
}

// inlineFile returns the file whose DWARF says what is inlined in sf's
// code: its own, else its debug file's (as far as it is known yet), or
// nil when neither has DWARF.
func (sf *symFile) inlineFile() *elfsym.File {
	f := sf.f
	if f == nil {
		return nil
	}
	if !f.HasDWARF() {
		f = sf.debugFile()
	}
	if f == nil || !f.HasDWARF() {
		return nil
	}
	return f
}

// frameWait is the longest Frames waits for a file's DWARF to be read.
var frameWait = time.Second

// inlineChain and waitInlines are elfsym's; tests slow them down.
var (
	inlineChain = (*elfsym.File).InlineChainReady
	waitInlines = (*elfsym.File).WaitInlines
)

// Unready counts the frames named so far without the functions inlined
// at them because their file's DWARF was still being read: a caller
// that must print complete stacks compares it before and after naming
// them, and if it grew, calls WaitInlines and names them again.
func (s *Symbolizer) Unready() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unready
}

// WaitInlines waits, at most until timeout fires, for the reading of
// the DWARF of every file a frame was named without its inlined
// functions for; it returns the names of the modules whose reading is
// not done by then: their frames go on without inlined functions until
// it is.
func (s *Symbolizer) WaitInlines(timeout time.Duration) (late []string) {
	s.mu.Lock()
	unread := s.unread
	s.unread = map[*elfsym.File]string{}
	s.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	for f, module := range unread {
		if !waitInlines(f, t.C) {
			late = append(late, module)
			s.mu.Lock()
			s.unread[f] = module
			s.mu.Unlock()
		}
	}
	slices.Sort(late)
	return slices.Compact(late)
}

// PreloadInlines has the DWARF of the files process pid maps code from
// read in the background, for the functions inlined in them: so that by
// the time its frames are named, it is read. It asks no debuginfod
// server: a file whose debug file is fetched has its frames named
// first.
func (s *Symbolizer) PreloadInlines(pid int) {
	ms, err := procmaps.Read(pid)
	if err != nil {
		return
	}
	for _, m := range ms {
		if !m.IsFile() || !m.Exec() {
			continue
		}
		s.mu.Lock()
		sf := s.files[fileKey{m.Dev, m.Inode, m.Path}]
		s.mu.Unlock()
		var f *elfsym.File
		if sf != nil {
			f = sf.inlineFile()
		} else if f, err = elfsym.Open(openPath(pid, m)); err == nil && !f.HasDWARF() {
			f, _ = elfsym.DebugFile(f)
		}
		if f != nil && f.HasDWARF() {
			f.PreloadInlines()
		}
	}
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

// Mapping finds the file mapping of process pid that holds pc, or its
// vDSO ("[vdso]", as perf names it, with the vDSO's build ID).
func (s *Symbolizer) Mapping(pid int, pc uint64) (Mapped, bool) {
	m, ok := s.mapping(pid, pc)
	if !ok || !m.IsFile() && !m.IsVDSO() {
		return Mapped{}, false
	}
	out := Mapped{Path: m.Path, Start: m.Start, End: m.End, Offset: m.Offset}
	if sf := s.file(pid, m); sf.f != nil && len(sf.f.BuildID) > 0 {
		out.BuildID = hex.EncodeToString(sf.f.BuildID)
	}
	return out, true
}
