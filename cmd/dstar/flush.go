package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// flushWriter buffers output and flushes it a few times a second, so that
// a fast stream of records costs few writes yet a person watching sees it
// promptly.
type flushWriter struct {
	mu     sync.Mutex
	w      *bufio.Writer
	stop   chan struct{}
	closed bool
}

func newFlushWriter(w io.Writer) *flushWriter {
	f := &flushWriter{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{})}
	go f.loop()
	return f
}

func (f *flushWriter) loop() {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-tick.C:
			f.mu.Lock()
			f.w.Flush()
			f.mu.Unlock()
		}
	}
}

func (f *flushWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.w.Write(p)
}

// Close flushes what is buffered; the writer stays usable.
func (f *flushWriter) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		close(f.stop)
	}
	return f.w.Flush()
}
