// Package usym turns user-space program counters into symbols, as ustack()
// prints them: module`function+0xoffset, through the process's mappings
// (/proc/PID/maps) and each mapped file's ELF symbols (elfsym, which
// caches them per file version, so a long profile reads each file once).
//
// A process's mappings die with it. Processes dstar traces by name (-c,
// -p) are watched: their mappings are read again while they live, and the
// last reading serves after they exit. Any other process that has gone
// gets its frames as bare addresses.
package usym

import (
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/dstar-trace/dstar/providers/elfsym"
	"github.com/dstar-trace/dstar/providers/procmaps"
)

// Symbolizer resolves addresses of many processes; it is safe for
// concurrent use.
type Symbolizer struct {
	mu    sync.Mutex
	procs map[int]*process
}

// process is what is known of one process's mappings.
type process struct {
	maps    []procmaps.Mapping
	read    time.Time
	gone    bool // the process has exited: maps is its last reading
	watched bool
}

// refresh is how old a reading may be before an address it does not
// cover makes it be read again (libraries come and go with dlopen).
const refresh = 100 * time.Millisecond

// New returns an empty Symbolizer.
func New() *Symbolizer { return &Symbolizer{procs: map[int]*process{}} }

// Watch keeps process pid's mappings current until it exits (or stop is
// closed), so that its addresses can be resolved after it is gone.
func (s *Symbolizer) Watch(pid int, every time.Duration, stop <-chan struct{}) {
	s.mu.Lock()
	p := s.proc(pid)
	p.watched = true
	s.mu.Unlock()
	s.reread(pid)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if !s.reread(pid) {
					return
				}
			}
		}
	}()
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

// Frame renders pc in process pid: module`function+0xoff, module`0xaddr
// when the module is known but not the function, or the bare address.
func (s *Symbolizer) Frame(pid int, pc uint64) string {
	m, ok := s.mapping(pid, pc)
	if !ok || !m.IsFile() {
		return fmt.Sprintf("0x%x", pc)
	}
	mod := filepath.Base(m.Path)
	f, err := elfsym.Open(m.Path)
	if err != nil {
		return fmt.Sprintf("%s`0x%x", mod, pc)
	}
	v, err := f.Address(m.FileOffset(pc))
	if err != nil {
		return fmt.Sprintf("%s`0x%x", mod, pc)
	}
	sym, ok := f.ByAddress(v)
	if !ok {
		return fmt.Sprintf("%s`0x%x", mod, pc)
	}
	if off := v - sym.Value; off != 0 {
		return fmt.Sprintf("%s`%s+0x%x", mod, sym.Name, off)
	}
	return mod + "`" + sym.Name
}

// mapping finds the mapping of pid holding pc, reading the mappings again
// when the reading is missing or old and does not cover pc.
func (s *Symbolizer) mapping(pid int, pc uint64) (procmaps.Mapping, bool) {
	s.mu.Lock()
	p := s.proc(pid)
	m, ok := procmaps.Find(p.maps, pc)
	stale := !p.gone && time.Since(p.read) > refresh
	s.mu.Unlock()
	if ok || !stale {
		return m, ok
	}
	s.reread(pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	return procmaps.Find(s.procs[pid].maps, pc)
}
