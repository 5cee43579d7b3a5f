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

var gate struct {
	sync.Mutex
	fd    int // held shared, or 0
	timer *time.Timer
}

// gatePath is the lock file: in /run/lock where the system has it (a
// tmpfs every process of the machine sees), the temporary directory
// otherwise.
func gatePath() string {
	dir := "/run/lock"
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "dstar-tracefs.lock")
}

// openGate opens the lock file, or returns -1.
func openGate() int {
	fd, err := unix.Open(gatePath(), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1
	}
	return fd
}

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
	if gate.fd == 0 {
		gate.fd = openGate()
		flock(gate.fd, unix.LOCK_SH)
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
	if gate.fd > 0 {
		unix.Close(gate.fd)
	}
	gate.fd = 0
}

// ClosePerfEvents closes perf events' file descriptors one by one, each
// while no process is Busy: what a releaser does with those it was
// handed.
func ClosePerfEvents(fds []int) {
	g := openGate()
	for _, fd := range fds {
		flock(g, unix.LOCK_EX)
		unix.Close(fd)
		flock(g, unix.LOCK_UN)
	}
	if g >= 0 {
		unix.Close(g)
	}
}
