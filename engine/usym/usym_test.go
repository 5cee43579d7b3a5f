package usym

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// symbolMe is a function whose address the test resolves back to its name.
//
//go:noinline
func symbolMe() uintptr { return pcOf(symbolMe) }

func pcOf(f func() uintptr) uintptr {
	return reflect.ValueOf(f).Pointer()
}

func TestFrameSelf(t *testing.T) {
	s := New()
	pc := uint64(symbolMe())
	got := s.Frame(os.Getpid(), pc+1)
	if !strings.HasSuffix(got, "`github.com/dstar-trace/dstar/engine/usym.symbolMe+0x1") {
		t.Errorf("Frame = %q", got)
	}
	if got := s.Frame(os.Getpid(), 8); got != "0x8" {
		t.Errorf("unmapped address: %q", got)
	}
}

// TestFrameAfterExit: a watched process's addresses resolve after it has
// gone, from the last reading of its mappings.
func TestFrameAfterExit(t *testing.T) {
	s := New()
	stop := make(chan struct{})
	defer close(stop)
	s.Watch(os.Getpid(), 10*time.Millisecond, stop)
	// Pretend this process has gone: its reading is what remains.
	s.mu.Lock()
	s.procs[os.Getpid()].gone = true
	s.mu.Unlock()
	if got := s.Frame(os.Getpid(), uint64(symbolMe())); !strings.Contains(got, "usym.symbolMe") {
		t.Errorf("Frame = %q", got)
	}
}

// TestPrune: processes that have exited are forgotten unless a watch
// keeps them, and so are live ones not looked up for a while; a watch's
// end lets its process go.
func TestPrune(t *testing.T) {
	s := New()
	old := time.Now().Add(-2 * idle)
	s.procs[1] = &process{gone: true, used: time.Now()}
	s.procs[2] = &process{gone: true, watches: 1}
	s.procs[3] = &process{used: old}
	s.procs[os.Getpid()] = &process{used: time.Now()}
	s.prune()
	if _, ok := s.procs[1]; ok {
		t.Error("an exited process is kept")
	}
	if _, ok := s.procs[2]; !ok {
		t.Error("a watched process that exited is forgotten")
	}
	if _, ok := s.procs[3]; ok {
		t.Error("a process unused for long is kept")
	}
	if _, ok := s.procs[os.Getpid()]; !ok {
		t.Error("a live process in use is forgotten")
	}
	s.unwatch(2, nil)
	s.prune()
	if _, ok := s.procs[2]; ok {
		t.Error("a process whose watch ended is kept")
	}
}
