// Package usym turns user-space program counters into symbols, as ustack()
// prints them: module`function+0xoffset, through the process's mappings
// (/proc/PID/maps) and each mapped file's ELF symbols (elfsym, which
// caches them per file version, so a long profile reads each file once).
//
// A process's mappings die with it. Processes dstar traces by name (-c,
// -p) are watched: their mappings are read again while they live, and the
// last reading serves after they exit; and every executable mapping they
// (and their children) make from then on is recorded by the kernel as it
// is made (procmaps.Follow), so that a program that exits before the next
// reading still has its libraries known. Any other process that has gone
// gets its frames as bare addresses.
//
// A stripped file's local functions are named from its MiniDebugInfo or
// its separate debug file (elfsym.DebugFile), or else from the one a
// debuginfod server has (DEBUGINFOD_URLS): fetched in the background,
// into debuginfod-client's cache, and used by the frames named after it
// has arrived.
//
// The functions inlined at a frame (Frames) are read from DWARF in the
// background too, a goroutine per file (elfsym.File.PreloadInlines),
// begun by PreloadInlines or the first frame named in the file. A frame
// waits for it a second at most: frames named past that go without
// them, and a caller that must print complete stacks waits longer
// (Unready, WaitInlines) and names them again.
package usym

import (
	"bytes"
	"context"
	"debug/elf"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dstar-trace/dstar/providers/cfi"
	"github.com/dstar-trace/dstar/providers/debuginfod"
	"github.com/dstar-trace/dstar/providers/elfsym"
	"github.com/dstar-trace/dstar/providers/procmaps"
	"github.com/dstar-trace/dstar/providers/vdso"
)

// Symbolizer resolves addresses of many processes; it is safe for
// concurrent use.
type Symbolizer struct {
	mu    sync.Mutex
	procs map[int]*process
	// followers follow watched processes' mappings; each has the set of
	// processes it has seen (the watched one and its children).
	followers map[*procmaps.Follower]map[int]bool
	pruned    time.Time // when procs was last pruned
	// files are the mapped files' symbols by device, inode and path, so
	// that a frame costs no system call (elfsym.Open checks the file's
	// version with stat): a profile has hundreds of thousands of frames
	// in a few dozen files.
	files map[fileKey]*symFile
	// debuginfod fetches stripped files' debug files in the background
	// (nil: DEBUGINFOD_URLS names no server); fetches are those begun,
	// by build ID, each tried once.
	debuginfod *debuginfod.Client
	fetches    map[string]*fetch
	// unread are the files whose DWARF was being read when a frame in
	// them was named, with their module names; unready counts such
	// namings (see WaitInlines).
	unread  map[*elfsym.File]string
	unready uint64
}

// fetch is a debug file being fetched from debuginfod: debug is set once
// it has arrived, and frames named from then on use it.
type fetch struct {
	debug atomic.Pointer[elfsym.File]
}

// fileKey names one mapped file.
type fileKey struct {
	dev   string
	inode uint64
	path  string
}

// symFile is a mapped file's symbols, nil when it cannot be read, and
// those of its debug file, if any: installed, or being fetched.
type symFile struct {
	f, debug *elfsym.File
	fetched  *fetch
	// inlined caches the inlined frames at the file's addresses (see
	// Frames): a profile meets the same few addresses again and again.
	mu      sync.Mutex
	inlined map[inlineKey][]string
	// funcs are the code ranges of the file's FDEs, read when a frame
	// in it is first found in no symbol.
	funcs func() []cfi.Range
}

// function returns the FDE range holding virtual address v: the
// function, unnamed, that v is in.
func (sf *symFile) function(v uint64) (cfi.Range, bool) {
	if sf.funcs == nil {
		return cfi.Range{}, false
	}
	rs := sf.funcs()
	i := sort.Search(len(rs), func(i int) bool { return rs[i].End > v })
	if i < len(rs) && rs[i].Start <= v {
		return rs[i], true
	}
	return cfi.Range{}, false
}

type inlineKey struct {
	addr uint64
	ret  bool
}

// maxInlined bounds a file's inlined cache: past it the cache starts
// again.
const maxInlined = 1 << 12

// debugFile returns the symbols of sf's debug file, as far as they are
// known yet.
func (sf *symFile) debugFile() *elfsym.File {
	if sf.debug == nil && sf.fetched != nil {
		return sf.fetched.debug.Load()
	}
	return sf.debug
}

// maxFiles bounds files: past it the cache starts again. It is also
// emptied at each prune, so that it never keeps alive a file elfsym's
// own bounded cache has let go.
const maxFiles = 256

// process is what is known of one process's mappings.
type process struct {
	maps    []procmaps.Mapping
	read    time.Time
	gone    bool // the process has exited: maps is its last reading
	watches int  // how many watches keep it (Watch, and its children)
	used    time.Time
	// made are the mappings the kernel recorded the process making
	// (procmaps.Follow), oldest first: what serves for addresses the
	// last reading of maps does not cover.
	made []procmaps.Mapping
}

// refresh is how old a reading may be before an address it does not
// cover makes it be read again (libraries come and go with dlopen).
const refresh = 100 * time.Millisecond

// New returns an empty Symbolizer.
func New() *Symbolizer {
	return &Symbolizer{procs: map[int]*process{}, followers: map[*procmaps.Follower]map[int]bool{},
		files: map[fileKey]*symFile{}, pruned: time.Now(),
		debuginfod: debuginfod.FromEnv(), fetches: map[string]*fetch{}, unread: map[*elfsym.File]string{}}
}

// Watch keeps process pid's mappings current until it exits (or stop is
// closed), so that its addresses can be resolved after it is gone.
func (s *Symbolizer) Watch(pid int, every time.Duration, stop <-chan struct{}) {
	// Follow first: a mapping made between the reading and the start
	// of following would be missed.
	fo, err := procmaps.Follow(pid)
	s.mu.Lock()
	s.proc(pid).watches++
	if err == nil {
		s.followers[fo] = map[int]bool{pid: true}
	}
	s.mu.Unlock()
	s.reread(pid)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		live := true
		for {
			select {
			case <-stop:
				s.unwatch(pid, fo)
				return
			case <-t.C:
				s.drain()
				// The follower records every mapping as it is made;
				// only without one must the mappings be read again.
				if live && fo == nil {
					live = s.reread(pid)
				}
			}
		}
	}()
}

// unwatch ends a watch of pid and its follower fo (nil if following
// failed): the processes it kept are pruned once they are gone.
func (s *Symbolizer) unwatch(pid int, fo *procmaps.Follower) {
	if fo != nil {
		s.drain()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proc(pid).watches--
	if fo != nil {
		for child := range s.followers[fo] {
			if child != pid {
				s.proc(child).watches--
			}
		}
		delete(s.followers, fo)
		fo.Close()
	}
}

// drain moves the mappings the followers recorded to their processes.
func (s *Symbolizer) drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for fo, seen := range s.followers {
		for _, m := range fo.Read() {
			p := s.proc(m.Pid)
			if !seen[m.Pid] {
				seen[m.Pid] = true
				p.watches++ // a child of the watched process
			}
			p.made = append(p.made, m.Mapping)
		}
	}
}

// How often procs is pruned, and how long a live process unused since
// is kept: a system-wide profile sees thousands of processes come and
// go, and a session may run for days.
const (
	pruneEvery = 10 * time.Second
	idle       = time.Minute
)

// prune forgets the processes no watch keeps that have exited or have
// not been looked up for a while. Called with s.mu held.
func (s *Symbolizer) prune() {
	now := time.Now()
	s.pruned = now
	clear(s.files)
	for pid, p := range s.procs {
		if p.watches <= 0 && (p.gone || now.Sub(p.used) > idle) {
			delete(s.procs, pid)
		}
	}
}

func (s *Symbolizer) proc(pid int) *process {
	p := s.procs[pid]
	if p == nil {
		p = &process{}
		s.procs[pid] = p
	}
	return p
}

// reread reads pid's mappings, keeping the last good reading if the
// process has gone; it reports whether the process lives.
func (s *Symbolizer) reread(pid int) bool {
	ms, err := procmaps.Read(pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc(pid)
	if err != nil {
		p.gone = true
		return false
	}
	// A process held at exec, or exiting, may show no file mappings
	// for a moment; keep a fuller reading.
	if len(ms) > 0 {
		p.maps, p.read = ms, time.Now()
	}
	return true
}

// openPath is where m's file, a mapping of process pid, is opened: a
// file deleted since it was mapped (a program upgraded while it runs,
// or run from a memfd) through the mapping itself, while pid lives.
func openPath(pid int, m procmaps.Mapping) string {
	if m.Deleted {
		return m.MapFile(pid)
	}
	return m.Path
}

// Frame renders pc in process pid: module`function+0xoff, module`0xaddr
// when the module is known but not the function, or the bare address.
func (s *Symbolizer) Frame(pid int, pc uint64) string {
	return render(s.Lookup(pid, pc), pc)
}

// render renders pc, found at loc, as a stack frame.
func render(loc Location, pc uint64) string {
	switch {
	case loc.Module == "":
		return "0x" + strconv.FormatUint(pc, 16)
	case loc.Func == "":
		return loc.Module + "`0x" + strconv.FormatUint(pc, 16)
	case loc.Offset == 0:
		return loc.Module + "`" + loc.Func
	}
	return loc.Module + "`" + loc.Func + "+0x" + strconv.FormatUint(loc.Offset, 16)
}

// file returns the symbols of m's file, a mapping of process pid,
// opening it on first use.
func (s *Symbolizer) file(pid int, m procmaps.Mapping) *symFile {
	k := fileKey{m.Dev, m.Inode, m.Path}
	s.mu.Lock()
	sf := s.files[k]
	s.mu.Unlock()
	if sf != nil {
		return sf
	}
	sf = &symFile{}
	path, ok := openPath(pid, m), true
	if m.IsVDSO() {
		path, ok = vdso.Path(m.End - m.Start)
	}
	if f, err := elfsym.Open(path); ok && err == nil {
		sf.f = f
		sf.funcs = sync.OnceValue(func() []cfi.Range {
			ef, err := elf.Open(f.Path)
			if err != nil {
				return nil
			}
			defer ef.Close()
			rs, _ := cfi.Functions(ef)
			return rs
		})
		// A stripped library's local functions are named only in its
		// debug file, when one is installed or a debuginfod has it.
		if f.Stripped() {
			sf.debug, _ = elfsym.DebugFile(f)
			if sf.debug == nil {
				sf.debug, sf.fetched = s.fromDebuginfod(f)
			}
		}
	}
	s.mu.Lock()
	if len(s.files) >= maxFiles {
		clear(s.files)
	}
	s.files[k] = sf
	s.mu.Unlock()
	return sf
}

// fromDebuginfod returns f's debug file from the debuginfod cache, or
// else the fetch, begun in the background on first asking, that will
// bring it: a frame is never held up by a server, so the frames named
// before it answers go without the debug file's names.
func (s *Symbolizer) fromDebuginfod(f *elfsym.File) (*elfsym.File, *fetch) {
	c := s.debuginfod
	if c == nil || len(f.BuildID) == 0 {
		return nil, nil
	}
	if p, ok := c.Cached(f.BuildID); ok {
		if d, err := elfsym.Open(p); err == nil && bytes.Equal(d.BuildID, f.BuildID) {
			return d, nil
		}
	}
	id := string(f.BuildID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if fe := s.fetches[id]; fe != nil {
		return nil, fe
	}
	fe := &fetch{}
	s.fetches[id] = fe
	go func() {
		p, err := c.Fetch(context.Background(), f.BuildID)
		if err != nil {
			return // tried once: its frames stay as the file names them
		}
		if d, err := elfsym.Open(p); err == nil && bytes.Equal(d.BuildID, f.BuildID) {
			fe.debug.Store(d)
		}
	}()
	return nil, fe
}

// mapping finds the mapping of pid holding pc, reading the mappings again
// when the reading is missing or old and does not cover pc.
func (s *Symbolizer) mapping(pid int, pc uint64) (procmaps.Mapping, bool) {
	s.mu.Lock()
	now := time.Now()
	if now.Sub(s.pruned) > pruneEvery {
		s.prune()
	}
	p := s.proc(pid)
	p.used = now
	m, ok := find(p.maps, pc)
	stale := !p.gone && time.Since(p.read) > refresh
	s.mu.Unlock()
	if ok {
		return m, ok
	}
	if stale {
		s.reread(pid)
	}
	s.drain()
	s.mu.Lock()
	defer s.mu.Unlock()
	p = s.procs[pid]
	if m, ok := find(p.maps, pc); ok {
		return m, ok
	}
	return findLatest(p.made, pc)
}

// find finds the mapping of ms, in address order as /proc/PID/maps lists
// them, containing pc.
func find(ms []procmaps.Mapping, pc uint64) (procmaps.Mapping, bool) {
	i := sort.Search(len(ms), func(i int) bool { return ms[i].End > pc })
	if i < len(ms) && ms[i].Start <= pc {
		return ms[i], true
	}
	return procmaps.Mapping{}, false
}

// findLatest finds the mapping of ms, latest first, containing pc: a
// later mapping of the same addresses replaced an earlier one.
func findLatest(ms []procmaps.Mapping, pc uint64) (procmaps.Mapping, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if m := ms[i]; m.Start <= pc && pc < m.End {
			return m, true
		}
	}
	return procmaps.Mapping{}, false
}
