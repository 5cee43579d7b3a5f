// Package tracefs finds (or mounts) the kernel's tracing file system and
// reads what dstar needs from it: the list of trace events and the layout of
// each event's record.
//
// Everything read here is cached for the life of the process: the event list
// and the formats do not change while a tracer runs (dynamic events aside),
// and re-reading them per probe is what makes listing slow.
package tracefs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// Candidate mount points, in the order the kernel documentation prefers.
const (
	tracingDir      = "/sys/kernel/tracing"
	debugTracingDir = "/sys/kernel/debug/tracing"
)

// Dir returns the directory where tracefs is mounted. When neither
// /sys/kernel/tracing nor /sys/kernel/debug/tracing holds an events
// directory, it mounts tracefs at /sys/kernel/tracing (which needs root), as
// users of a tracer expect. The answer is cached.
//
// Callers that attach through cilium/ebpf's tracefs-based links (tracepoints)
// must call Dir first: that library remembers a missing tracefs forever.
func Dir() (string, error) { return dir() }

var dir = sync.OnceValues(findOrMount)

func findOrMount() (string, error) {
	for _, d := range []string{tracingDir, debugTracingDir} {
		if hasEvents(d) {
			return d, nil
		}
	}
	if _, err := os.Stat(tracingDir); err != nil {
		return "", fmt.Errorf("tracefs: %s does not exist: the kernel was built without tracing support (CONFIG_TRACING/CONFIG_TRACEFS)", tracingDir)
	}
	if err := unix.Mount("tracefs", tracingDir, "tracefs", 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
		hint := ""
		if errors.Is(err, unix.EPERM) {
			hint = " (mounting needs root)"
		} else if errors.Is(err, unix.ENODEV) {
			hint = " (the kernel has no tracefs: CONFIG_TRACING is off)"
		}
		return "", fmt.Errorf("tracefs is not mounted and mounting it at %s failed: %w%s", tracingDir, err, hint)
	}
	if !hasEvents(tracingDir) {
		return "", fmt.Errorf("tracefs: mounted at %s but it has no events directory (kernel built without trace events?)", tracingDir)
	}
	return tracingDir, nil
}

func hasEvents(d string) bool {
	fi, err := os.Stat(filepath.Join(d, "events"))
	return err == nil && fi.IsDir()
}
