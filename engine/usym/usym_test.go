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
