package providers

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"
)

// closers releases kernel objects in the reverse order of their creation
// (links before the perf events they hang on), and keeps going past errors
// so that one failure does not leak the rest.
type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for i := len(cs) - 1; i >= 0; i-- {
		if err := cs[i].Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// fdCloser closes a raw file descriptor (a perf event).
type fdCloser int

func (fd fdCloser) Close() error { return unix.Close(int(fd)) }

// nopCloser is what attaching a probe that makes no kernel object returns.
type nopCloser struct{}

func (nopCloser) Close() error { return nil }
