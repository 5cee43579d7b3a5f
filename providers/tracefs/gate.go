package tracefs

import (
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Reading an event's format file and opening a tracepoint's perf event
// both take the kernel's event mutex, which the release of a perf event
// holds through a grace period (about 27 ms here). While a releaser closes
// an earlier session's events, a session reading and attaching a
// thousand would wait a grace period for nearly every one: 24 s where
// 1.7 s does alone. The gate, a file lock every dstar on the machine
// shares, lets the session go first: a process holds it shared while it
// reads formats and opens perf events (Busy), a releaser takes it
// exclusively for each close (ClosePerfEvents), so a session waits for
// one close at most. Where the lock file cannot be made the gate is open:
// only the waiting is lost.

// gateIdle is how long a process holds the gate after its last Busy.
const gateIdle = time.Second

// The gate is two lock files. flock queues no one: a session woken when a
// releaser lets the gate go would lose it to that releaser's next close,
// again and again. So a session first says it wants the gate (want,
// shared), which releasers wait on before each close (want, exclusive,
// let go at once), and then takes the gate itself.
var gate struct {
	sync.Mutex
	want, held int // held shared, or 0
	timer      *time.Timer
}

// gatePath is a lock file: in /run/lock where the system has it (a
// tmpfs every process of the machine sees), the temporary directory
// otherwise.
func gatePath(name string) string {
	dir := "/run/lock"
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = os.TempDir()
	}
	return filepath.Join(dir, name)
}

// openLock opens a lock file, or returns -1.
func openLock(name string) int {
	fd, err := unix.Open(gatePath(name), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1
	}
	return fd
}

const (
	wantFile = "dstar-tracefs.want"
	gateFile = "dstar-tracefs.lock"
)

func flock(fd, how int) {
	if fd < 0 {
		return
	}
	for unix.Flock(fd, how) == unix.EINTR {
	}
}

// Busy holds the gate (shared) until Idle, or until a second passes
// without Busy: the caller is about to read formats or open perf events.
func Busy() {
	gate.Lock()
	defer gate.Unlock()
	if gate.held == 0 {
		gate.want = openLock(wantFile)
		flock(gate.want, unix.LOCK_SH)
		gate.held = openLock(gateFile)
		flock(gate.held, unix.LOCK_SH)
	}
	if gate.timer == nil {
		gate.timer = time.AfterFunc(gateIdle, Idle)
	} else {
		gate.timer.Reset(gateIdle)
	}
}

// Idle leaves the gate: the caller has attached what it meant to.
func Idle() {
	gate.Lock()
	defer gate.Unlock()
	for _, fd := range []int{gate.held, gate.want} {
		if fd > 0 {
			unix.Close(fd)
		}
	}
	gate.want, gate.held = 0, 0
}

// ClosePerfEvents closes perf events' file descriptors one by one, each
// while no process is Busy: what a releaser does with those it was
// handed.
func ClosePerfEvents(fds []int) {
	want, g := openLock(wantFile), openLock(gateFile)
	for _, fd := range fds {
		flock(want, unix.LOCK_EX)
		flock(want, unix.LOCK_UN)
		flock(g, unix.LOCK_EX)
		unix.Close(fd)
		flock(g, unix.LOCK_UN)
	}
	for _, fd := range []int{want, g} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}
