package sink

import (
	"errors"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"
)

// full fails every write as a full disk does.
type full struct{ writes int }

func (f *full) Write([]byte) (int, error) { f.writes++; return 0, syscall.ENOSPC }

func TestFirstErrorOnce(t *testing.T) {
	for _, buffered := range []bool{false, true} {
		dst := &full{}
		w := New(dst, "/dev/full", buffered)
		var reported []string
		w.OnFail(func(e *Error) { reported = append(reported, e.Error()) })
		for i := 0; i < 3; i++ {
			io.WriteString(w, "line\n")
		}
		err := w.Close()
		want := "failed to write to /dev/full: No space left on device"
		if err == nil || err.Error() != want || !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("buffered %v: Close: %v, want %q", buffered, err, want)
		}
		if len(reported) != 1 || reported[0] != want {
			t.Errorf("buffered %v: reported %q, want it once", buffered, reported)
		}
		if dst.writes != 1 {
			t.Errorf("buffered %v: %d writes after the first failed, want none", buffered, dst.writes-1)
		}
	}
}

func TestBufferedWritesThrough(t *testing.T) {
	var b strings.Builder
	w := New(&b, "out", true)
	io.WriteString(w, "a")
	if b.Len() != 0 {
		t.Errorf("written before a flush: %q", b.String())
	}
	if err := w.Close(); err != nil || b.String() != "a" {
		t.Errorf("after Close: %q, %v", b.String(), err)
	}
	io.WriteString(w, "b")
	if w.Flush(); b.String() != "ab" {
		t.Errorf("after a write and Flush past Close: %q", b.String())
	}
}

// chanWriter sends each write on a channel.
type chanWriter chan string

func (c chanWriter) Write(p []byte) (int, error) {
	c <- string(p)
	return len(p), nil
}

// TestBufferedFlushesAfterWrite: a buffered Writer flushes by itself
// after each write that leaves data buffered, not only the first, and
// writes nothing while nothing is written to it.
func TestBufferedFlushesAfterWrite(t *testing.T) {
	c := make(chanWriter, 4)
	w := New(c, "out", true)
	defer w.Close()
	for _, s := range []string{"a", "b"} {
		io.WriteString(w, s)
		select {
		case got := <-c:
			if got != s {
				t.Errorf("flushed %q, want %q", got, s)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q not flushed by itself", s)
		}
	}
	if w.Flush(); len(c) != 0 {
		t.Errorf("an empty buffer flushed: %q", <-c)
	}
}
