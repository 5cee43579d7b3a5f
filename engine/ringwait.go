package engine

import (
	"os"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// ringWait waits for a ring buffer's wake-ups in Go's network poller, not
// in a blocking epoll_wait as the ring buffer reader does. A goroutine
// blocked in a system call keeps the runtime's monitor thread polling
// every 20 µs to 10 ms after each wake, hundreds of times a second for a
// consumer that wakes a few times a second; one parked on the poller lets
// it sleep. A profile that only aggregates spends most of its own CPU
// time there otherwise.
type ringWait struct {
	f  *os.File // a non-blocking duplicate of the map's descriptor
	rc syscall.RawConn
}

// newRingWait returns a waiter for ring buffer m's wake-ups, or nil when
// its descriptor cannot be polled by the runtime.
func newRingWait(m *ebpf.Map) *ringWait {
	fd, err := unix.FcntlInt(uintptr(m.FD()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil
	}
	// A non-blocking descriptor the kernel can poll is given to the
	// poller; SetReadDeadline fails for one that was not.
	f := os.NewFile(uintptr(fd), "ringbuf")
	rc, err := f.SyscallConn()
	if err != nil || f.SetReadDeadline(time.Time{}) != nil {
		f.Close()
		return nil
	}
	return &ringWait{f: f, rc: rc}
}

// wait returns when ready says records are waiting, when the ring buffer
// is woken, at until, or when stop is closed (and interrupt called).
func (w *ringWait) wait(until time.Time, stop <-chan struct{}, ready func() bool) {
	w.f.SetReadDeadline(until)
	// An interrupt before the deadline was set would be lost.
	select {
	case <-stop:
		return
	default:
	}
	first := true
	w.rc.Read(func(uintptr) bool {
		// The poller only reports wakes after this first call: what came
		// before is seen here.
		if first {
			first = false
			return ready()
		}
		return true
	})
}

// interrupt ends a wait, once stop is closed.
func (w *ringWait) interrupt() { w.f.SetReadDeadline(time.Now()) }

func (w *ringWait) close() { w.f.Close() }
