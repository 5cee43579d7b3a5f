package engine

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/dstar-trace/dstar/providers/cfi"
	"github.com/dstar-trace/dstar/providers/procmaps"
	"github.com/dstar-trace/dstar/providers/unwind"
)

// unwinder keeps the unwind tables of the processes whose user stacks an
// enabling's programs walk: loaded when a walk notices a process it does
// not know (or an address outside its known mappings: a library loaded
// since), dropped when the process is gone.
type unwinder struct {
	tables *unwind.Tables
	pids   *ebpf.Map
	mu     sync.Mutex
	// again holds the processes being loaded, true for one noticed
	// again meanwhile.
	again map[uint32]bool
	// wait is, by process, how long walks wait before they may ask for
	// its mappings again: short while it maps new code (a program
	// starting), doubling while it does not (code no file maps: a JIT's).
	wait map[uint32]time.Duration
	wg   sync.WaitGroup
	stop chan struct{}
	// execs forgets a process's place in pids when it calls exec, so
	// that its next walk asks for its new mappings at once (nil where
	// it could not be attached: exec then waits on the notice hold).
	execs *execWatch
	// preload says to have the DWARF of a loaded process's files read
	// for the functions inlined in them, in the background (not under
	// -x noinline): by the time its stacks are named it is read.
	preload bool
}

// pruneEvery is how often the tables of exited processes are dropped.
const pruneEvery = time.Second

// The wait before a process may be noticed again: from minWait, doubled
// up to maxWait while its mappings do not change.
const (
	minWait = time.Millisecond
	maxWait = time.Second
)

// newUnwinder returns the unwinder of coll's walker maps, or nil when its
// programs walk no user stack.
func newUnwinder(coll *ebpf.Collection) *unwinder {
	m, r, p := coll.Maps[unwind.MappingsMap], coll.Maps[unwind.RowsMap], coll.Maps[unwind.PidsMap]
	if m == nil || r == nil || p == nil {
		return nil
	}
	u := &unwinder{tables: unwind.NewTables(m, r), pids: p, again: map[uint32]bool{},
		wait: map[uint32]time.Duration{}, stop: make(chan struct{})}
	u.execs, _ = watchExecs(p)
	u.wg.Add(1)
	go u.prune()
	return u
}

// notice (re)loads process pid's mappings, in the background: the
// consumer never waits on ELF files. A notice that comes while its
// process is being loaded makes the load run again when done: the
// walks meanwhile saw code the load may have missed.
func (u *unwinder) notice(pid uint32) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, loading := u.again[pid]; loading {
		u.again[pid] = true
		return
	}
	select {
	case <-u.stop:
		return
	default:
	}
	u.again[pid] = false
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for u.loadNoticed(pid) {
		}
	}()
}

// loadNoticed loads process pid's mappings and sets when its walks may
// notice it again; it reports whether another notice came meanwhile.
func (u *unwinder) loadNoticed(pid uint32) bool {
	// Files that cannot be read are left out: walks through them end
	// with a marker frame.
	grew, err := u.tables.AddProcess(int(pid))
	if errors.Is(err, procmaps.ErrNoProcess) {
		u.forget(pid)
	} else if u.preload && grew && err == nil {
		go userSyms.PreloadInlines(int(pid))
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	wait := min(2*u.wait[pid], maxWait)
	if grew || wait == 0 {
		wait = minWait
	}
	u.wait[pid] = wait
	if err == nil {
		u.pids.Put(pid, ktime()+uint64(wait))
	}
	again := u.again[pid]
	if again && err == nil {
		u.again[pid] = false
		return true
	}
	delete(u.again, pid)
	return false
}

// forget drops an exited process's tables and its notice, so that a new
// process given its pid is noticed again.
func (u *unwinder) forget(pid uint32) {
	u.tables.RemoveProcess(pid)
	u.pids.Delete(pid)
	u.mu.Lock()
	delete(u.wait, pid)
	u.mu.Unlock()
}

// ktime is the time as bpf_ktime_get_ns tells it (CLOCK_MONOTONIC).
func ktime() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// prune drops, every pruneEvery, the tables of processes that have exited.
func (u *unwinder) prune() {
	defer u.wg.Done()
	tick := time.NewTicker(pruneEvery)
	defer tick.Stop()
	for {
		select {
		case <-u.stop:
			return
		case <-tick.C:
		}
		var pid uint32
		var at uint64
		var gone []uint32
		it := u.pids.Iterate()
		for it.Next(&pid, &at) {
			if _, err := os.Stat("/proc/" + strconv.Itoa(int(pid))); errors.Is(err, os.ErrNotExist) {
				gone = append(gone, pid)
			}
		}
		for _, pid := range gone {
			u.forget(pid)
		}
	}
}

// close stops loading and waits for loads under way.
func (u *unwinder) close() {
	if u == nil {
		return
	}
	u.mu.Lock()
	close(u.stop)
	u.mu.Unlock()
	u.wg.Wait()
	u.execs.close()
}

// execWatch is a program on the sched_process_exec raw tracepoint that
// deletes the exec'ing process from the walks' process map. A process
// that execs keeps its pid but none of its mappings: without it, its
// walks would go on with the old image's tables, cut short, until a
// notice's hold ran out: up to a second for a process whose mappings had
// long been still (a shell script that execs its program, as pyenv's
// python3 is).
type execWatch struct {
	prog *ebpf.Program
	l    link.Link
}

func watchExecs(pids *ebpf.Map) (*execWatch, error) {
	spec := &ebpf.ProgramSpec{
		Name: "ustack_exec",
		Type: ebpf.RawTracepoint,
		Instructions: asm.Instructions{
			asm.FnGetCurrentPidTgid.Call(),
			asm.RSh.Imm(asm.R0, 32),
			asm.StoreMem(asm.RFP, -4, asm.R0, asm.Word),
			asm.LoadMapPtr(asm.R1, pids.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapDeleteElem.Call(),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
		License: "GPL",
	}
	prog, err := ebpf.NewProgram(spec)
	if err != nil {
		return nil, err
	}
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sched_process_exec", Program: prog})
	if err != nil {
		prog.Close()
		return nil, err
	}
	return &execWatch{prog: prog, l: l}, nil
}

func (w *execWatch) close() {
	if w == nil {
		return
	}
	w.l.Close()
	w.prog.Close()
}

// load loads process pid's tables now, and marks it known to the walks.
func (u *unwinder) load(pid int) error {
	if _, err := u.tables.AddProcess(pid); err != nil {
		return err
	}
	if u.preload {
		go userSyms.PreloadInlines(pid)
	}
	return u.pids.Put(uint32(pid), ktime()+uint64(minWait))
}

// WalksUserStacks reports whether e's programs walk user stacks by
// call-frame information, with tables LoadUserStacks can load ahead.
func (e *Enabling) WalksUserStacks() bool { return e.unwind != nil }

// LoadUserStacks loads the unwind tables of the files process pid maps
// now, before its stacks are walked: a walk meeting a process it does not
// know asks for its tables, and until they are loaded (a few
// milliseconds) cuts its stacks short. Files that cannot be read are
// left out; the error says which.
func (e *Enabling) LoadUserStacks(pid int) error {
	if e.unwind == nil {
		return nil
	}
	return e.unwind.load(pid)
}

// ustackCuts counts e's user-stack walks that ended cut short (a marker
// frame), over every CPU: 0 when its programs walk none, and once it is
// closed (its counts are then the session's closedCuts).
func (e *Enabling) ustackCuts() uint64 {
	e.stateMu.Lock()
	closed := e.closed
	e.stateMu.Unlock()
	if closed {
		return 0
	}
	return e.readCuts()
}

// readCuts reads the walks' stop counters: the walks cut short with a
// marker frame.
func (e *Enabling) readCuts() uint64 {
	var n uint64
	for _, stop := range []cfi.Stop{cfi.StopNoMapping, cfi.StopNoRule, cfi.StopUnreadable} {
		n += e.readStops(stop)
	}
	return n
}

// readStops reads how many walks ended with stop, over every CPU.
func (e *Enabling) readStops(stop cfi.Stop) uint64 {
	if e.unwind == nil || e.coll == nil {
		return 0
	}
	m := e.coll.Maps[unwind.StopsMap]
	if m == nil {
		return 0
	}
	var perCPU []uint64
	if err := m.Lookup(uint32(stop), &perCPU); err != nil {
		return 0
	}
	var n uint64
	for _, v := range perCPU {
		n += v
	}
	return n
}

// UStackCut is a count of user stacks cut short for one reason.
type UStackCut struct {
	Reason string // as the marker frame names it: "no mapping", ...
	Count  uint64
}

// UStackCuts counts e's user-stack walks cut short, by reason, those
// with none left out: code in no file whose table is loaded ("no
// mapping"), code with no rule the walker follows ("no rule"), a word of
// the stack unreadable ("unreadable", a page not resident), and stacks
// deeper than the walker goes ("depth", whose last frame is the
// deepest walked, with no marker). Read it before the session is closed.
func (e *Enabling) UStackCuts() []UStackCut {
	var cuts []UStackCut
	for _, stop := range []cfi.Stop{cfi.StopNoMapping, cfi.StopNoRule, cfi.StopUnreadable, cfi.StopDepth} {
		if n := e.readStops(stop); n > 0 {
			cuts = append(cuts, UStackCut{stop.String(), n})
		}
	}
	return cuts
}
