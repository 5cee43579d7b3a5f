// Package sink is where dstar's output goes: a writer that buffers,
// flushes within 50 ms of a write, and remembers the first write error with
// the name of the file it failed on, so that a full disk or a closed
// descriptor is reported once, clearly, and stops tracing, instead of
// every later record being lost in silence.
package sink

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Error is a failed write: "failed to write to NAME: Reason", in
// dtrace(1)'s words.
type Error struct {
	Name string
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("failed to write to %s: %s", e.Name, reason(e.Err))
}

func (e *Error) Unwrap() error { return e.Err }

// reason is an error's cause as strerror(3) words it, capitalized.
func reason(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	s := err.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// flushEvery is how often buffered output is written when a Writer
// flushes by itself: often enough for a person watching, few writes for
// a fast stream of records.
const flushEvery = 50 * time.Millisecond

// Writer writes to a destination through a buffer. Its first failed
// write is kept: later writes return it without writing, and OnFail, if
// set, is called once with it.
type Writer struct {
	mu     sync.Mutex
	name   string
	dst    io.Writer
	buf    *bufio.Writer // nil: unbuffered
	err    *Error
	onFail func(*Error)
	stop   chan struct{} // closed by Close, ending the flushing loop
	// wrote wakes the flushing loop when a write leaves data buffered:
	// a Writer nothing is written to wakes no one (a profile that only
	// aggregates, hours long).
	wrote  chan struct{}
	closed bool
}

// New returns a Writer to dst, named name in its error ("" is
// "<stdout>"). A buffered one flushes 50 ms after a write leaves data
// in its buffer, until Close; an unbuffered one writes through.
func New(dst io.Writer, name string, buffered bool) *Writer {
	if name == "" {
		name = "<stdout>"
	}
	w := &Writer{name: name, dst: dst, stop: make(chan struct{}), wrote: make(chan struct{}, 1)}
	if buffered {
		w.buf = bufio.NewWriterSize(writerFunc(w.writeDst), 64<<10)
		go w.loop()
	}
	return w
}

// OnFail sets what is called, once, when a write fails. It is called
// with no lock of the Writer's held, but possibly from its flushing
// goroutine: it must not write to the Writer.
func (w *Writer) OnFail(f func(*Error)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onFail = f
}

// Err is the first write error, or nil.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		return nil
	}
	return w.err
}

// writerFunc lets the buffer write through the error check.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// writeDst writes to the destination, with w.mu held.
func (w *Writer) writeDst(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.dst.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = &Error{Name: w.name, Err: err}
		return n, w.err
	}
	return n, nil
}

func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	var n int
	var err error
	failed := w.err != nil
	if w.buf != nil {
		n, err = w.buf.Write(p)
		if w.buf.Buffered() > 0 {
			select {
			case w.wrote <- struct{}{}:
			default: // the loop is woken already
			}
		}
	} else {
		n, err = w.writeDst(p)
	}
	report := w.failure(failed)
	w.mu.Unlock()
	report()
	return n, err
}

// failure returns what reports a failure that happened just now (the
// Writer had not failed before), to be called once w.mu is released.
func (w *Writer) failure(before bool) func() {
	if before || w.err == nil || w.onFail == nil {
		return func() {}
	}
	f, e := w.onFail, w.err
	return func() { f(e) }
}

// Flush writes what is buffered.
func (w *Writer) Flush() error {
	w.mu.Lock()
	failed := w.err != nil
	var err error
	if w.buf != nil {
		err = w.buf.Flush()
	}
	if w.err != nil {
		err = w.err
	}
	report := w.failure(failed)
	w.mu.Unlock()
	report()
	return err
}

func (w *Writer) loop() {
	t := time.NewTimer(flushEvery)
	t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-w.wrote:
		}
		t.Reset(flushEvery)
		select {
		case <-w.stop:
			t.Stop()
			return
		case <-t.C:
			w.Flush()
		}
	}
}

// Close flushes what is buffered and stops flushing by itself; the
// Writer stays usable, writing through its buffer at the next Flush or
// Close. It does not close the destination.
func (w *Writer) Close() error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.stop)
	}
	w.mu.Unlock()
	return w.Flush()
}

// StdoutName names standard output in messages: the file it is, when it
// is one ("/dev/full", "out.txt"), else "<stdout>" as dtrace says (a
// pipe, a socket, a terminal).
func StdoutName() string {
	if closedAtStart(1) {
		return "<stdout>"
	}
	p, err := os.Readlink("/proc/self/fd/1")
	if err != nil || !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "/dev/pts/") || strings.HasPrefix(p, "/dev/tty") {
		return "<stdout>"
	}
	return p
}

// Stdout returns where standard output really goes: os.Stdout, or, when
// the process was started with its standard output closed, a writer that
// fails as writing to a closed descriptor does. (Go's runtime puts
// /dev/null, opened read-write, on a closed descriptor 0, 1 or 2 before
// any of our code runs; a shell's ">/dev/null" opens it write-only, and
// daemon(3)'s one /dev/null is shared with descriptor 0.)
func Stdout() io.Writer {
	if closedAtStart(1) {
		return closedFile{}
	}
	return os.Stdout
}

// closedAtStart reports whether descriptor fd looks as Go's runtime
// leaves a descriptor that was closed at exec: /dev/null, read-write, a
// file description of its own among 0, 1 and 2.
func closedAtStart(fd int) bool {
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || p != "/dev/null" {
		return false
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_ACCMODE != unix.O_RDWR {
		return false
	}
	pid := os.Getpid()
	for other := 0; other < 3; other++ {
		if other == fd {
			continue
		}
		// kcmp: 0 when both descriptors are one file description.
		r, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(pid), uintptr(pid), kcmpFile, uintptr(fd), uintptr(other), 0)
		if errno == 0 && r == 0 {
			return false
		}
	}
	return true
}

// kcmpFile is kcmp(2)'s KCMP_FILE, which x/sys/unix does not name.
const kcmpFile = 0

// closedFile fails every write as a closed descriptor does.
type closedFile struct{}

func (closedFile) Write([]byte) (int, error) { return 0, syscall.EBADF }
