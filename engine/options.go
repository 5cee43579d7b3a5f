package engine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dstar-trace/dstar/dcompiler/check"
)

// optionKind says what dstar does with a DTrace option.
type optionKind int

const (
	optSize    optionKind = iota // a size: bytes, or with k, m, g
	optBool                      // set or not (a value of 0/false clears it)
	optRate                      // a rate: Nhz, or a period such as 10ms
	optInt                       // an integer
	optAny                       // a value taken as given
	optIgnored                   // accepted: dstar's design makes it moot
	optCPU                       // a CPU number
	optUnsupported
)

// options are every option dtrace(1) accepts with -x and #pragma D
// option, and what dstar does with each: none is silently ignored.
var options = map[string]optionKind{
	"bufsize": optSize, "aggsize": optSize, "strsize": optSize, "dynvarsize": optSize,
	"quiet": optBool, "destructive": optBool, "defaultargs": optBool, "zdefs": optBool,
	"errtags": optBool, "rawbytes": optBool, "flowindent": optBool, "empty": optBool,
	"switchrate": optRate, "aggrate": optRate, "statusrate": optRate, "cleanrate": optRate,
	// Records are read as they come and aggregations when asked for:
	// there is no buffer to switch, resize or fill policy to choose.
	"bufpolicy": optIgnored, "bufresize": optIgnored,
	"aggsortkey": optBool, "aggsortrev": optBool, "aggsortpos": optInt,
	"aggsortkeypos": optInt, "aggpercpu": optBool,
	"nspec": optInt, "specsize": optSize,
	// The preprocessor's and the library's options act on the command
	// line (cmd/dstar), before any script is read.
	"cpp": optBool, "define": optAny, "undef": optAny,
	"incdir": optAny, "cppargs": optUnsupported, "cpppath": optUnsupported,
	"version": optAny, "stdc": optAny, "argref": optBool,
	"cpu": optCPU, "jstackframes": optUnsupported, "jstackstrsize": optUnsupported,
	"ustackframes": optInt, "stackframes": optInt, "stackindent": optUnsupported,
	"grabanon": optUnsupported, "bufsize-": optUnsupported,
	// Linking matters only to -G, which dstar refuses: the values are
	// checked, and then moot.
	"linkmode": optAny, "linktype": optAny, "linknommap": optBool, "ldpath": optAny,
	"nolibs": optUnsupported, "evaltime": optAny,
	// D's registers: iregs must be all eight of DIF's, as in dtrace; tregs
	// bounds an associative array's keys.
	"iregs": optAny, "tregs": optInt, "disasm": optUnsupported,
	"droptags": optUnsupported, "amin": optUnsupported, "syslibdir": optUnsupported,
	"temporal": optUnsupported, "outputformat": optAny, "strip": optUnsupported,
	"debug": optUnsupported, "verbose": optBool, "pspec": optBool, "lazyload": optUnsupported,
	"modpath": optAny, "procfs": optUnsupported, "maxframes": optInt,
	"libdir": optAny, "preallocate": optUnsupported, "ctypes": optUnsupported,
	"dtypes": optUnsupported, "noresolve": optUnsupported, "core": optUnsupported,
	"knodefs": optUnsupported, "unodefs": optUnsupported, "pgmax": optUnsupported,
	"userland": optUnsupported, "specsize-": optUnsupported,
	// Oracle DTrace's other options, and illumos's, that dstar lacks:
	// refused as unsupported rather than as unknown names.
	"bpflog": optUnsupported, "bpflogsize": optUnsupported, "lockmem": optUnsupported,
	"pcapsize": optUnsupported, "scratchsize": optSize, "quietresize": optUnsupported,
	"printsize": optSize, "cpphdrs": optUnsupported, "ctfpath": optUnsupported,
	"debugassert": optUnsupported, "kdefs": optUnsupported,
	"udefs": optUnsupported, "late": optUnsupported,
	"procfspath": optUnsupported, "sysslice": optUnsupported,
	"tree": optUnsupported, "useruid": optUnsupported, "agghist": optUnsupported,
	"aggpack": optUnsupported, "aggzoom": optUnsupported, "encoding": optUnsupported,
	"setenv": optUnsupported, "unsetenv": optUnsupported,
	// dstar's own: how stack-keyed aggregations print, whether user
	// stacks show inlined functions, whether probes the kernel refuses
	// are skipped.
	"stackfmt": optAny, "noinline": optBool, "skiprefused": optBool,
}

// CheckOption validates -x name=value as dtrace(1) would set it, in its
// words: unknown names are invalid, known ones dstar lacks unsupported.
func CheckOption(name, value string) error {
	if err := OptionProblem(name, value); err != nil {
		return fmt.Errorf("failed to set -x %s: %v", name, err)
	}
	return nil
}

// OptionProblem says what is wrong with setting option name to value, in
// dtrace's words, or returns nil; #pragma D option reports it with the
// line.
func OptionProblem(name, value string) error {
	kind, ok := options[name]
	if !ok || strings.HasSuffix(name, "-") {
		return errors.New("Invalid option name")
	}
	bad := errors.New("Invalid value for specified option")
	switch kind {
	case optUnsupported:
		return errors.New("unsupported option")
	case optSize:
		n, err := ParseSize(value, 1)
		if err != nil || name == "strsize" && n < 2 {
			return bad // a string holds at least one byte and its NUL
		}
	case optRate:
		if _, err := ParseRate(value); err != nil {
			return bad
		}
	case optInt:
		// As dtrace, never negative.
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 || (name == "tregs" || name == "maxframes") && n == 0 {
			return bad
		}
	case optCPU:
		if _, ok := ParseCPU(value); !ok {
			return bad
		}
	case optBool:
		// As dtrace: yes/no words, or a number that is not negative.
		if _, word := boolWords[strings.ToLower(value)]; !word && value != "" {
			if n, err := strconv.ParseInt(value, 0, 64); err != nil || n < 0 {
				return bad
			}
		}
	case optAny:
		if name == "outputformat" && value != "text" && value != "json" {
			return bad
		}
		if name == "stackfmt" && value != "folded" && value != "default" {
			return bad
		}
		if name == "stdc" && value != "a" && value != "c" && value != "s" && value != "t" {
			return bad
		}
		if (name == "define" || name == "undef" || name == "incdir" || name == "libdir") && value == "" {
			return bad
		}
		if name == "evaltime" && value != "exec" && value != "preinit" && value != "postinit" && value != "main" {
			return bad
		}
		if name == "version" {
			return check.VersionProblem(value)
		}
		if name == "iregs" {
			if n, err := strconv.Atoi(value); err != nil || n <= 0 || n > difRegs {
				return bad
			} else if n < difRegs {
				return errors.New("Insufficient registers to generate code")
			}
		}
		if name == "linkmode" && value != "kernel" && value != "dynamic" && value != "static" ||
			name == "linktype" && !strings.EqualFold(value, "elf") && !strings.EqualFold(value, "dof") ||
			(name == "ldpath" || name == "modpath") && value == "" {
			return bad
		}
	}
	return nil
}

// difRegs is how many integer registers DIF has, which -x iregs must
// name.
const difRegs = 8

// cmdlineOnly are the options dtrace takes only on its command line: a
// D program may not set them.
var cmdlineOnly = map[string]bool{
	"cppargs": true, "cpphdrs": true, "cpppath": true, "define": true, "undef": true,
	"incdir": true, "ldpath": true, "ctfpath": true, "modpath": true, "procfspath": true,
	"stdc": true, "lockmem": true,
}

// PragmaOptionProblem is OptionProblem for "#pragma D option" and
// setopt( ), which may not set the command line's options.
func PragmaOptionProblem(name, value string) error {
	if err := OptionProblem(name, value); err != nil {
		return err
	}
	if cmdlineOnly[name] {
		return errors.New("Option cannot be used from within a D program")
	}
	return nil
}

// boolWords are the words dtrace takes for a boolean option's value,
// and whether each sets it.
var boolWords = map[string]bool{
	"yes": true, "enable": true, "enabled": true, "true": true, "on": true, "set": true,
	"no": false, "disable": false, "disabled": false, "false": false, "off": false, "unset": false,
}

// OptionSet reports whether a boolean option is on in opts.
func OptionSet(opts map[string]string, name string) bool {
	v, ok := opts[name]
	if on, word := boolWords[strings.ToLower(v)]; word {
		return ok && on
	}
	return ok && v != "0"
}

// ParseSize parses a size: bytes, or with a k, m, g or t suffix; empty is
// def.
func ParseSize(s string, def int64) (int64, error) {
	if s == "" {
		return def, nil
	}
	mult := int64(1)
	switch strings.ToLower(s[len(s)-1:]) {
	case "k":
		mult = 1 << 10
	case "m":
		mult = 1 << 20
	case "g":
		mult = 1 << 30
	case "t":
		mult = 1 << 40
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return n * mult, nil
}

// ParseRate parses a rate as dtrace(1) does: Nhz, or a period with a
// unit (10ms, 1sec); a bare number is nanoseconds.
func ParseRate(s string) (time.Duration, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	v, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid rate %q", s)
	}
	unit := strings.ToLower(s[i:])
	if unit == "hz" {
		if v == 0 {
			return 0, nil
		}
		return time.Second / time.Duration(v), nil
	}
	mul, ok := rateUnits[unit]
	if !ok {
		return 0, fmt.Errorf("invalid rate %q", s)
	}
	return time.Duration(v) * mul, nil
}

// rateUnits are the units dtrace takes for a time.
var rateUnits = map[string]time.Duration{
	"": time.Nanosecond, "ns": time.Nanosecond, "nsec": time.Nanosecond,
	"us": time.Microsecond, "usec": time.Microsecond,
	"ms": time.Millisecond, "msec": time.Millisecond,
	"s": time.Second, "sec": time.Second,
	"m": time.Minute, "min": time.Minute,
	"h": time.Hour, "hour": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour,
}

// ParseCPU parses -x cpu's value: a CPU number.
func ParseCPU(value string) (int, bool) {
	n, err := strconv.Atoi(value)
	return n, err == nil && n >= 0
}
