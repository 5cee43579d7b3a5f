package tracefs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Event names one trace event: events/Group/Name in tracefs.
type Event struct {
	Group string
	Name  string
}

// Events returns every trace event the kernel offers, sorted by group and
// then name. It reads available_events once per process (one file, about a
// millisecond) instead of walking the events directory (thousands of
// directories); the caller must not modify the slice.
func Events() ([]Event, error) { return events() }

var (
	events       = sync.OnceValues(readEvents)
	eventsLoaded atomic.Bool
)

// Loaded reports whether the event list has been read. It exists so tests
// can check that start-up paths which need no trace events (a BEGIN-only
// script) never touch tracefs.
func Loaded() bool { return eventsLoaded.Load() }

func readEvents() ([]Event, error) {
	eventsLoaded.Store(true)
	d, err := Dir()
	if err != nil {
		return nil, err
	}
	Busy()
	b, err := os.ReadFile(filepath.Join(d, "available_events"))
	if err != nil {
		return nil, fmt.Errorf("tracefs: reading the event list: %w", err)
	}
	return parseEvents(b), nil
}

// parseEvents parses available_events: one "group:event" a line. Group and
// name strings share one backing string to keep thousands of events cheap.
func parseEvents(b []byte) []Event {
	all := string(b)
	evs := make([]Event, 0, bytes.Count(b, []byte{'\n'})+1)
	for len(all) > 0 {
		line := all
		if i := strings.IndexByte(all, '\n'); i >= 0 {
			line, all = all[:i], all[i+1:]
		} else {
			all = ""
		}
		c := strings.IndexByte(line, ':')
		if c <= 0 || c == len(line)-1 {
			continue
		}
		evs = append(evs, Event{Group: line[:c], Name: line[c+1:]})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].Group != evs[j].Group {
			return evs[i].Group < evs[j].Group
		}
		return evs[i].Name < evs[j].Name
	})
	return evs
}
