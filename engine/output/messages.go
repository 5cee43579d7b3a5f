// This file words the messages dtrace writes to stderr about matching
// probes, drops and run-time faults (cmd/dtrace.c, libdtrace/dt_handle.c,
// dt_error.c). dtrace prefixes each with its program name and ": "; these
// functions return the text after that prefix, without a newline.

package output

import (
	"strconv"
	"strings"
)

// Matched is the notice printed when a program is enabled, unless quiet:
// "description 'syscall::read:entry ' matched 1 probe". desc is
// "description" for a program given with -n, -P, -m, -f or -i (name is then
// the argument cut before its first '{', '/' or ';', so it keeps a trailing
// space) and "script" for -s (name is the file name as given).
func Matched(desc, name string, n int) string {
	s := "s"
	if n == 1 {
		s = ""
	}
	return desc + " '" + name + "' matched " + strconv.Itoa(n) + " probe" + s
}

// Drops is the message for records lost because a CPU's buffer was full:
// "1 drop on CPU 0", "12 drops on CPU 3"; with aggregation set, "12
// aggregation drops on CPU 3".
func Drops(n uint64, cpu int, aggregation bool) string {
	kind := ""
	if aggregation {
		kind = "aggregation "
	}
	s := ""
	if n > 1 {
		s = "s"
	}
	return strconv.FormatUint(n, 10) + " " + kind + "drop" + s + " on CPU " + strconv.Itoa(cpu)
}

// UStackCuts is the message, at exit, for user stacks cut short:
// "3 user stacks cut short: no mapping", the reason as their marker
// frames name it ("[stack cut: no mapping]").
func UStackCuts(n uint64, reason string) string {
	s := "s"
	if n == 1 {
		s = ""
	}
	return strconv.FormatUint(n, 10) + " user stack" + s + " cut short: " + reason
}

// Fault is a run-time fault of a clause.
type Fault int

// The faults, as DTrace names them.
const (
	FaultBadAddr   Fault = iota + 1 // invalid address
	FaultBadAlign                   // invalid alignment
	FaultIllOp                      // illegal operation
	FaultDivZero                    // divide-by-zero
	FaultNoScratch                  // out of scratch space
	FaultKPriv                      // invalid kernel access
	FaultUPriv                      // invalid user access
	FaultTupOflow                   // tuple stack overflow
	FaultBadStack                   // bad stack
	FaultBadSize                    // invalid size
	FaultBadIndex                   // index out of bounds (Oracle's)
	FaultLibrary   Fault = 1000     // library-level fault
)

var faultNames = map[Fault]string{
	FaultBadAddr:   "invalid address",
	FaultBadAlign:  "invalid alignment",
	FaultIllOp:     "illegal operation",
	FaultDivZero:   "divide-by-zero",
	FaultNoScratch: "out of scratch space",
	FaultKPriv:     "invalid kernel access",
	FaultUPriv:     "invalid user access",
	FaultTupOflow:  "tuple stack overflow",
	FaultBadStack:  "bad stack",
	FaultBadSize:   "invalid size",
	FaultBadIndex:  "index out of bounds",
	FaultLibrary:   "library-level fault",
}

func (f Fault) String() string {
	if s, ok := faultNames[f]; ok {
		return s
	}
	return "unknown fault"
}

// ProbeFault describes a fault for ProbeError.
type ProbeFault struct {
	// Clause is the faulting clause's index in the program, from 0:
	// dtrace names it dt_clause_N.
	Clause  int
	ProbeID uint32
	// Provider, Module, Function and Name describe the probe.
	Provider, Module, Function, Name string
	Fault                            Fault
	// Addr is the faulting address, shown for bad addresses, alignment,
	// stacks and sizes, and the index for an index out of bounds.
	Addr uint64
	// PC is the faulting BPF instruction's index; -1 leaves it out.
	PC int
	// Msg, for a library-level fault (a failed setopt( ) or freopen( )),
	// is the message that replaces the fault's name.
	Msg string
}

// ProbeError is the message for a clause that faulted, in the form of
// Oracle's DTrace for Linux (dt_handle_err, dt_handle_liberr): "error in
// dt_clause_0 for probe ID 1 (dtrace:::BEGIN): invalid address (0x0) at
// BPF pc 12", "... divide-by-zero at BPF pc 9", "... index out of bounds
// (8) at BPF pc 30", or "... couldn't set option ...".
func ProbeError(f ProbeFault) string {
	var b strings.Builder
	b.WriteString("error in dt_clause_" + strconv.Itoa(f.Clause) + " for probe ID " +
		strconv.FormatUint(uint64(f.ProbeID), 10) + " (" +
		f.Provider + ":" + f.Module + ":" + f.Function + ":" + f.Name + "): ")
	if f.Fault == FaultLibrary && f.Msg != "" {
		b.WriteString(f.Msg)
		return b.String()
	}
	b.WriteString(f.Fault.String())
	switch f.Fault {
	case FaultBadAddr:
		if int64(f.Addr) != -1 { // dtrace's mark for an address not known
			b.WriteString(" (0x" + strconv.FormatUint(f.Addr, 16) + ")")
		}
	case FaultBadAlign, FaultBadStack, FaultBadSize:
		b.WriteString(" (0x" + strconv.FormatUint(f.Addr, 16) + ")")
	case FaultBadIndex:
		b.WriteString(" (" + strconv.FormatInt(int64(f.Addr), 10) + ")")
	}
	if f.PC != -1 {
		b.WriteString(" at BPF pc " + strconv.Itoa(f.PC))
	}
	return b.String()
}

// Usage returns dtrace's usage text, as printed (to stderr, with exit status
// 2) when it is run without arguments or with a bad option, with prog in
// place of "dtrace". This is dtrace-utils' text, which has no -a and -A
// (anonymous tracing; see MESSAGES.md for illumos'), with -G and -S
// saying what dstar does with them, then dstar's own commands and --help.
func Usage(prog string) string {
	const predact = "[[ predicate ] action ]"
	return "Usage: " + prog + " [-32|-64] [-CeFGhHlqSvVwZ] [-b bufsz] [-c cmd] [-D name[=def]]\n" +
		"\t[-I path] [-L path] [-o output] [-p pid] [-s script] [-U name]\n" +
		"\t[-x opt[=val]] [-X a|c|s|t]\n\n" +
		"\t[-P provider " + predact + "]\n" +
		"\t[-m [ provider: ] module " + predact + "]\n" +
		"\t[-f [[ provider: ] module: ] func " + predact + "]\n" +
		"\t[-n [[[ provider: ] module: ] func: ] name " + predact + "]\n" +
		"\t[-i probe-id " + predact + "] [ args ... ]\n\n" +
		"\tpredicate -> '/' D-expression '/'\n" +
		"\t   action -> '{' D-statements '}'\n" +
		"\n" +
		"\t-32 generate 32-bit D programs and ELF files\n" +
		"\t-64 generate 64-bit D programs and ELF files\n\n" +
		"\t-b  set trace buffer size\n" +
		"\t-c  run specified command and exit upon its completion\n" +
		"\t-C  run cpp(1) preprocessor on script files\n" +
		"\t-D  define symbol when invoking preprocessor\n" +
		"\t-e  exit after compiling request but prior to enabling probes\n" +
		"\t-f  enable or list probes matching the specified function name\n" +
		"\t-F  coalesce trace output by function\n" +
		"\t-G  (refused: <sys/sdt.h> probes need no generated ELF file)\n" +
		"\t-h  generate a header file with definitions for static probes\n" +
		"\t-H  print included files when invoking preprocessor\n" +
		"\t-i  enable or list probes matching the specified probe id\n" +
		"\t-I  add include directory to preprocessor search path\n" +
		"\t-l  list probes matching specified criteria\n" +
		"\t-L  add library directory to library search path\n" +
		"\t-m  enable or list probes matching the specified module name\n" +
		"\t-n  enable or list probes matching the specified probe name\n" +
		"\t-o  set output file\n" +
		"\t-p  grab specified process-ID and cache its symbol tables\n" +
		"\t-P  enable or list probes matching the specified provider name\n" +
		"\t-q  set quiet mode (only output explicitly traced data)\n" +
		"\t-s  enable or list probes according to the specified D script\n" +
		"\t-S  print the BPF programs the D compiler makes\n" +
		"\t-U  undefine symbol when invoking preprocessor\n" +
		"\t-v  set verbose mode (report stability attributes, arguments)\n" +
		"\t-V  report DTrace API version\n" +
		"\t-w  permit destructive actions\n" +
		"\t-x  enable or modify compiler and tracing options\n" +
		"\t-X  specify ISO C conformance settings for preprocessor\n" +
		"\t-Z  permit probe descriptions that match zero probes\n" +
		"\n" +
		"\t" + prog + " run FILE.star [args]   run a Starlark script\n" +
		"\t" + prog + " repl                   the Starlark REPL (also " + prog + " alone, on a terminal)\n" +
		"\t" + prog + " tool NAME [flags]      a ready-made tool; " + prog + " tool lists them\n" +
		"\t" + prog + " --help                 print this help\n"
}

// Exit statuses of dtrace: 0 on success (or the status given to exit()),
// 1 on an error, 2 for bad usage.
const (
	ExitSuccess = 0
	ExitError   = 1
	ExitUsage   = 2
)
