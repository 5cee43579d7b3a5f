package providers

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// minProfilePeriod is DTrace's profile_interval_min: 200µs, i.e. 5000hz.
// Faster timers cost more than they tell.
const minProfilePeriod = 200 * time.Microsecond

// profileUnits are DTrace's rate suffixes, as nanoseconds per unit; "hz"
// (0 here) is a frequency, and a bare number is hz too.
var profileUnits = map[string]int64{
	"ns": 1, "nsec": 1,
	"us": 1e3, "usec": 1e3,
	"ms": 1e6, "msec": 1e6,
	"s": 1e9, "sec": 1e9,
	"m": 60e9, "min": 60e9,
	"h": 3600e9, "hour": 3600e9,
	"d": 86400e9, "day": 86400e9,
	"hz": 0, "": 0,
}

// NoProbeError says that a description names a probe that cannot exist,
// such as a profile rate faster than the fastest: as in DTrace, it matches
// no probe. Reason says why.
type NoProbeError struct{ Reason string }

func (e *NoProbeError) Error() string { return e.Reason }

// TagError is a description a provider refuses for a reason DTrace has its
// own error tag for (D_PROC_FUNC, D_PROC_OFF, ...): the compiler reports it
// under that tag rather than D_PDESC_INVAL.
type TagError struct {
	Tag string
	Msg string
}

func (e *TagError) Error() string { return e.Msg }

// tagErrorf returns a TagError.
func tagErrorf(tag, format string, args ...any) error {
	return &TagError{Tag: tag, Msg: fmt.Sprintf(format, args...)}
}

// parseProfileName parses "profile-N[unit]" or "tick-N[unit]". It returns
// ok false for names that are not profile names at all (so they simply match
// no probe) and an error for profile names with a bad or too-fast rate.
func parseProfileName(name string) (period time.Duration, perCPU, ok bool, err error) {
	rest, perCPU := strings.CutPrefix(name, "profile-")
	if !perCPU {
		var tick bool
		if rest, tick = strings.CutPrefix(name, "tick-"); !tick {
			return 0, false, false, nil
		}
	}
	i := 0
	for i < len(rest) && '0' <= rest[i] && rest[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, false, false, nil
	}
	n, err := strconv.ParseInt(rest[:i], 10, 64)
	if err != nil || n == 0 {
		return 0, perCPU, true, fmt.Errorf("%s: invalid rate %q", name, rest[:i])
	}
	unit, ok := profileUnits[rest[i:]]
	if !ok {
		return 0, perCPU, true, fmt.Errorf("%s: unknown rate suffix %q (want ns, us, ms, s, m, h, d or hz)", name, rest[i:])
	}
	var ns int64
	if unit == 0 {
		ns = int64(time.Second) / n
	} else if n > math.MaxInt64/unit {
		return 0, perCPU, true, fmt.Errorf("%s: period too long", name)
	} else {
		ns = n * unit
	}
	if time.Duration(ns) < minProfilePeriod {
		return 0, perCPU, true, &NoProbeError{fmt.Sprintf("%s: profile rate below minimum: the shortest period is %v (%dhz)",
			name, minProfilePeriod, time.Second/minProfilePeriod)}
	}
	return time.Duration(ns), perCPU, true, nil
}
