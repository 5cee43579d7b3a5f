package engine

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/cilium/ebpf"

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
	busy   map[uint32]bool
	wg     sync.WaitGroup
	stop   chan struct{}
}

// pruneEvery is how often the tables of exited processes are dropped.
const pruneEvery = time.Second

// newUnwinder returns the unwinder of coll's walker maps, or nil when its
// programs walk no user stack.
func newUnwinder(coll *ebpf.Collection) *unwinder {
	m, r, p := coll.Maps[unwind.MappingsMap], coll.Maps[unwind.RowsMap], coll.Maps[unwind.PidsMap]
	if m == nil || r == nil || p == nil {
		return nil
	}
	u := &unwinder{tables: unwind.NewTables(m, r), pids: p, busy: map[uint32]bool{}, stop: make(chan struct{})}
	u.wg.Add(1)
	go u.prune()
	return u
}

// notice (re)loads process pid's mappings, in the background: the
// consumer never waits on ELF files.
func (u *unwinder) notice(pid uint32) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.busy[pid] {
		return
	}
	select {
	case <-u.stop:
		return
	default:
	}
	u.busy[pid] = true
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		if err := u.tables.AddProcess(int(pid)); errors.Is(err, procmaps.ErrNoProcess) {
			u.forget(pid)
		}
		// Files that cannot be read are left out: walks through them
		// end with a marker frame.
		u.mu.Lock()
		delete(u.busy, pid)
		u.mu.Unlock()
	}()
}

// forget drops an exited process's tables and its notice, so that a new
// process given its pid is noticed again.
func (u *unwinder) forget(pid uint32) {
	u.tables.RemoveProcess(pid)
	u.pids.Delete(pid)
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
}

// load loads process pid's tables now, and marks it known to the walks.
func (u *unwinder) load(pid int) error {
	if err := u.tables.AddProcess(pid); err != nil {
		return err
	}
	return u.pids.Put(uint32(pid), uint64(0))
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
