package output

import (
	"strings"
	"testing"

	"github.com/dstar-trace/dstar/dcompiler/printf"
)

func TestProbeHeader(t *testing.T) {
	// The heading of every non-quiet example in the Oracle Linux DTrace
	// Guide and the illumos Dynamic Tracing Guide.
	if got, want := ProbeHeader(), "CPU     ID                    FUNCTION:NAME\n"; got != want {
		t.Errorf("ProbeHeader() = %q, want %q", got, want)
	}
	if got, want := FlowHeader(), "CPU FUNCTION                                 \n"; got != want {
		t.Errorf("FlowHeader() = %q, want %q", got, want)
	}
}

func TestProbeLine(t *testing.T) {
	tests := []struct {
		cpu, id        int
		function, name string
		want           string
	}{
		// "dtrace -n BEGIN" in the guides: "  0      1                           :BEGIN"
		// (the trailing space does not show there).
		{0, 1, "", "BEGIN", "  0      1                           :BEGIN "},
		{1, 17374, "read", "entry", "  1  17374 " + strings.Repeat(" ", 22) + "read:entry "},
		{12, 123456, "do_sys_openat2", "entry", " 12 123456 " + strings.Repeat(" ", 12) + "do_sys_openat2:entry "},
		// Fields wider than their columns push the rest along, as in C.
		{0, 1234567, "a_function_name_longer_than_thirty_two", "return",
			"  0 1234567 a_function_name_longer_than_thirty_two:return "},
	}
	for _, tt := range tests {
		if got := ProbeLine(tt.cpu, tt.id, tt.function, tt.name); got != tt.want {
			t.Errorf("ProbeLine(%d, %d, %q, %q) = %q, want %q", tt.cpu, tt.id, tt.function, tt.name, got, tt.want)
		}
	}
}

func TestFlowLine(t *testing.T) {
	got := FlowLine(0, 2, " -> ", "read")
	want := "  0    -> read" + strings.Repeat(" ", 41-len("   -> read")) + " "
	if got != want {
		t.Errorf("FlowLine = %q, want %q", got, want)
	}
}

// The dtrace-utils tests under test/unittest/actions/trace run with
// _DTRACE_TESTING set, which drops the CPU and ID columns ("%32s " alone);
// the rest of each line is what Trace and the record's newline make.
func TestTraceNonQuiet(t *testing.T) {
	tests := []struct {
		name string
		v    printf.Value
		want string // the line after "%3d %6d "
	}{
		// tst.int8_t.r
		{"int8_t", printf.Sized(0xff, 1, true), "                          :BEGIN   -1\n"},
		// tst.uint16_t.r
		{"uint16_t", printf.Sized(0xffff, 2, false), "                          :BEGIN  65535\n"},
		// tst.int32_t.r
		{"int32_t", printf.Sized(0xffffffff, 4, true), "                          :BEGIN          -1\n"},
		// tst.uint64_t.r
		{"uint64_t", printf.Uint(1<<64 - 1), "                          :BEGIN  18446744073709551615\n"},
		// tst.str.r
		{"str", printf.Str("a"), "                          :BEGIN   a                                \n"},
		// tst.str-empty.r
		{"str-empty", printf.Str(""), "                          :BEGIN                                    \n"},
	}
	for _, tt := range tests {
		got := ProbeLine(0, 1, "", "BEGIN")[11:] + Trace(tt.v, false) + "\n"
		if got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestTraceWidths(t *testing.T) {
	tests := []struct {
		v     printf.Value
		quiet bool
		want  string
	}{
		{printf.Int(-1), false, "                  -1"},
		{printf.Int(42), true, "42"},
		{printf.Uint(42), false, "                   42"},
		{printf.Sized(42, 4, false), false, "         42"},
		{printf.Sized(0xff, 1, false), false, " 255"},
		{printf.Str("hello"), true, "hello"},
	}
	for _, tt := range tests {
		if got := Trace(tt.v, tt.quiet); got != tt.want {
			t.Errorf("Trace(%v, %v) = %q, want %q", tt.v, tt.quiet, got, tt.want)
		}
	}
}

func TestRawBytes(t *testing.T) {
	got := RawBytes([]byte("hello, world\x00\x01\x02\x03\x04\xff"))
	want := "\n" +
		"             0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f  0123456789abcdef\n" +
		"         0: 68 65 6c 6c 6f 2c 20 77 6f 72 6c 64 00 01 02 03  hello, world....\n" +
		"        10: 04 ff                                            ..\n"
	if got != want {
		t.Errorf("RawBytes =\n%q\nwant\n%q", got, want)
	}
	if got := Bytes([]byte("abc\x00\x00"), 10); got != "  abc       " {
		t.Errorf("Bytes(string) = %q", got)
	}
	if got := Bytes([]byte("ab\x00c"), 10); got[0] != '\n' {
		t.Errorf("Bytes(binary) = %q, want a dump", got)
	}
}

func TestList(t *testing.T) {
	if got, want := ListHeader(), "   ID   PROVIDER            MODULE                          FUNCTION NAME\n"; got != want {
		t.Errorf("ListHeader() = %q, want %q", got, want)
	}
	got := ListLine(1, "dtrace", "", "", "BEGIN")
	want := "    1     dtrace                                                     BEGIN\n"
	if got != want {
		t.Errorf("ListLine = %q, want %q", got, want)
	}
}

func TestMessages(t *testing.T) {
	tests := []struct{ got, want string }{
		// test/unittest/aggs/tst.count_notquiet.r (stderr)
		{Matched("script", "test/unittest/aggs/tst.count_notquiet.d", 2),
			"script 'test/unittest/aggs/tst.count_notquiet.d' matched 2 probes"},
		{Matched("description", "BEGIN ", 1), "description 'BEGIN ' matched 1 probe"},
		{Drops(1, 0, false), "1 drop on CPU 0"},
		{Drops(12, 3, false), "12 drops on CPU 3"},
		{Drops(7, 1, true), "7 aggregation drops on CPU 1"},
		// test/unittest/error/tst.DTRACEFLT_DIVZERO.div.r
		{ProbeError(ProbeFault{Clause: 4, ProbeID: 1, Provider: "dtrace", Name: "BEGIN",
			Fault: FaultDivZero, PC: 20}),
			"error in dt_clause_4 for probe ID 1 (dtrace:::BEGIN): divide-by-zero at BPF pc 20"},
		{ProbeError(ProbeFault{Clause: 0, ProbeID: 7, Provider: "syscall", Function: "read", Name: "entry",
			Fault: FaultBadAddr, Addr: 0, PC: -1}),
			"error in dt_clause_0 for probe ID 7 (syscall::read:entry): invalid address (0x0)"},
		{ProbeError(ProbeFault{Clause: 1, ProbeID: 1, Provider: "dtrace", Name: "BEGIN",
			Fault: FaultBadIndex, Addr: 8, PC: 3}),
			"error in dt_clause_1 for probe ID 1 (dtrace:::BEGIN): index out of bounds (8) at BPF pc 3"},
		// test/unittest/actions/setopt/tst.badopt.r
		{ProbeError(ProbeFault{Clause: 0, ProbeID: 1, Provider: "dtrace", Name: "BEGIN",
			Fault: FaultLibrary, PC: -1, Msg: `couldn't set option "Nixon" to "1": Invalid option name`}),
			`error in dt_clause_0 for probe ID 1 (dtrace:::BEGIN): couldn't set option "Nixon" to "1": Invalid option name`},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	u := Usage("dstar")
	if !strings.HasPrefix(u, "Usage: dstar [-32|-64] [-CeFGhHlqSvVwZ] [-b bufsz] [-c cmd] [-D name[=def]]\n\t[-I path]") ||
		!strings.Contains(u, "\n\t-Z  permit probe descriptions that match zero probes\n") ||
		!strings.HasSuffix(u, "\n\tdstar --help                 print this help\n") {
		t.Errorf("Usage = %q", u)
	}
}
