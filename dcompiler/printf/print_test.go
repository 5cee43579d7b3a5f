package printf

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"
)

// Expected strings come from glibc's printf for the equivalent C format
// (with "ll" added for 64-bit values), except where a comment names the
// DTrace rule or the dtrace-utils test that shows DTrace's output.
func TestSprint(t *testing.T) {
	neg1 := uint64(math.MaxUint64)
	tests := []struct {
		format string
		args   []Value
		want   string
	}{
		{"hello\n", nil, "hello\n"},
		{"100%%", nil, "100%"},
		{"%d", []Value{Int(-42)}, "-42"},
		{"%i", []Value{Int(42)}, "42"},
		{"%d", []Value{Int(math.MinInt64)}, "-9223372036854775808"},
		{"%d", []Value{Int(math.MaxInt64)}, "9223372036854775807"},
		{"%u", []Value{Int(-1)}, "18446744073709551615"},
		{"%x", []Value{Int(-1)}, "ffffffffffffffff"},
		{"%X", []Value{Int(-255)}, "FFFFFFFFFFFFFF01"},
		{"%x", []Value{Int(math.MinInt64)}, "8000000000000000"},
		{"%o", []Value{Int(-1)}, "1777777777777777777777"},
		// pfcheck_dint: %d of an unsigned type prints as %u.
		{"%d", []Value{Uint(neg1)}, "18446744073709551615"},
		{"%+d", []Value{Uint(5)}, "5"},
		// Values are printed at their recorded size (pfprint_sint/uint).
		{"%d", []Value{Sized(0xff, 1, true)}, "-1"},
		{"%d", []Value{Sized(0xff, 1, false)}, "255"},
		{"%x", []Value{Sized(neg1, 4, true)}, "ffffffff"},
		{"%u", []Value{Sized(neg1, 4, true)}, "4294967295"},
		{"%d", []Value{Sized(0x1_0000_0005, 4, true)}, "5"},
		{"%hd", []Value{Sized(0xffff, 2, true)}, "-1"},
		{"%hu", []Value{Sized(0xffff, 2, false)}, "65535"},
		{"%hx", []Value{Sized(0xffff, 2, true)}, "ffff"},
		{"%ld %lu %lx", []Value{Int(-5), Int(-5), Int(-5)}, "-5 18446744073709551611 fffffffffffffffb"},
		{"%lld %llu %llX", []Value{Int(-5), Int(-5), Int(-5)}, "-5 18446744073709551611 FFFFFFFFFFFFFFFB"},
		{"%c", []Value{Int(65)}, "A"},
		{"%c", []Value{Int(0x141)}, "A"}, // the low byte
		{"%3c|%-3c", []Value{Int('x'), Int('y')}, "  x|y  "},
		{"%lc", []Value{Int(97)}, "a"},
		// test/unittest/printf/tst.basics.r: "%p = 61" for (void *)'a':
		// DTrace prints %p as %x, without "0x".
		{"%p", []Value{Uint(97)}, "61"},
		{"%p", []Value{Uint(0xffff8000dead0000)}, "ffff8000dead0000"},
		{"%#p", []Value{Uint(97)}, "0x61"},
		{"%s", []Value{Str("hello")}, "hello"},
		{"%.3s", []Value{Str("hello")}, "hel"},
		{"%-10s|", []Value{Str("ab")}, "ab        |"},
		{"%10s|", []Value{Str("ab")}, "        ab|"},
		{"%10.2s|", []Value{Str("abc")}, "        ab|"},
		{"%05s", []Value{Str("ab")}, "   ab"},
		{"%5d", []Value{Int(42)}, "   42"},
		{"%05d", []Value{Int(42)}, "00042"},
		{"%05d", []Value{Int(-42)}, "-0042"},
		{"%+d %+d", []Value{Int(42), Int(-42)}, "+42 -42"},
		{"% d|% d", []Value{Int(42), Int(-42)}, " 42|-42"},
		{"%+ d", []Value{Int(42)}, "+42"},
		{"%.5d", []Value{Int(-42)}, "-00042"},
		{"%08.3d", []Value{Int(7)}, "     007"},
		{"%#x %#X %#x", []Value{Int(255), Int(255), Int(0)}, "0xff 0XFF 0"},
		{"%#05x", []Value{Int(255)}, "0x0ff"},
		{"%#o %#o %#.3o", []Value{Int(8), Int(0), Int(8)}, "010 0 010"},
		{"%-+5d|", []Value{Int(7)}, "+7   |"},
		// test/unittest/printf/tst.flags.r (the first line, "   0x123",
		// is masked as "{ptr}" there).
		{"# %#8x\n", []Value{Int(0x123)}, "#    0x123\n"},
		{"0 %08x\n", []Value{Int(0x123)}, "0 00000123\n"},
		{"- %-8x\n", []Value{Int(0x123)}, "- 123     \n"},
		{"+ %+8d\n", []Value{Int(123)}, "+     +123\n"},
		{"  % 8d\n", []Value{Int(123)}, "       123\n"},
		// test/unittest/printf/tst.widths1.r: '?' is a 16-wide field.
		{"%?d\n", []Value{Int(5)}, "               5\n"},
		// DTrace passes a precision to printf(3C) only when it is > 0.
		{"%.0d", []Value{Int(0)}, "0"},
		{"%.0s", []Value{Str("abc")}, "abc"},
		{"%.*s", []Value{Int(0), Str("abc")}, "abc"},
		{"%.*s", []Value{Int(-3), Str("abc")}, "abc"},
		// DTrace's parser lets '0' after '-' win.
		{"%-05d", []Value{Int(42)}, "00042"},
		{"%0-5d|", []Value{Int(42)}, "42   |"},
		{"%*d|", []Value{Int(5), Int(42)}, "   42|"},
		{"%*d|", []Value{Int(-5), Int(42)}, "42   |"},
		{"%*.*d|", []Value{Int(8), Int(4), Int(42)}, "    0042|"},
		{"%.*s|", []Value{Int(2), Str("hello")}, "he|"},
		{"%'d", []Value{Int(1234567)}, "1234567"}, // no grouping in the C locale
		// %k prints a stack as stack( ) does: a newline, then a frame a line.
		{"%k|", []Value{Stack([]string{"vmlinux`f+0x1", "vmlinux`g"})}, "\n              vmlinux`f+0x1\n              vmlinux`g\n|"},
		{"%-12k|", []Value{Stack([]string{"m`f"})}, "\n              m`f         \n|"},
		{"%e", []Value{Float(1234.5)}, "1.234500e+03"},
		{"%E", []Value{Float(1234.5)}, "1.234500E+03"},
		{"%f", []Value{Float(3.14159)}, "3.141590"},
		{"%g %g %g", []Value{Float(0.0001), Float(100000), Float(1e6)}, "0.0001 100000 1e+06"},
		{"%G", []Value{Float(1e-5)}, "1E-05"},
		// A precision of 0 is dropped here too: "%.0e" is "%e".
		{"%.0e %#.1e", []Value{Float(12), Float(12)}, "1.200000e+01 1.2e+01"},
		{"%.1g %#.1g %.1e", []Value{Float(12), Float(12), Float(12)}, "1e+01 1.e+01 1.2e+01"},
		{"%+.2f|% 08.2f", []Value{Float(3.14159), Float(-3.14159)}, "+3.14|-0003.14"},
		{"%#g", []Value{Float(1)}, "1.00000"},
		{"%f", []Value{Float(math.Inf(-1))}, "-inf"},
		{"%5.1f", []Value{Int(3)}, "  3.0"},
		{"%S", []Value{Str("a\tb\"\\\x01 c\n")}, `a\tb\"\\\001 c\n`},
		{"%C", []Value{Int('\n')}, `\n`},
		{"%C", []Value{Int('x')}, `x`},
		{"%a", []Value{Str("vmlinux`do_sys_open+0x10")}, "vmlinux`do_sys_open+0x10"},
		{"%a", []Value{Uint(0xffffffff81000000)}, "0xffffffff81000000"},
		{"%-30k|", []Value{Str("x")}, "x                             |"},
	}
	for _, tt := range tests {
		f, err := Parse(tt.format)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.format, err)
			continue
		}
		if got := f.Sprint(tt.args); got != tt.want {
			t.Errorf("Sprint(%q, %v) = %q, want %q", tt.format, tt.args, got, tt.want)
		}
	}
}

func TestSprintTime(t *testing.T) {
	defer func(l *time.Location) { timeLocation = l }(timeLocation)
	timeLocation = time.UTC
	ns := Int(1700000000 * 1e9)
	tests := []struct{ format, want string }{
		// "%Y" is ctime rearranged as "1973 Dec  3 17:20:00" (pfprint_time).
		{"%Y", "2023 Nov 14 22:13:20"},
		// "%T" is strftime "%a, %d %b %G %T %Z" (pfprint_time822).
		{"%T", "Tue, 14 Nov 2023 22:13:20 UTC"},
	}
	for _, tt := range tests {
		f, _ := Parse(tt.format)
		if got := f.Sprint([]Value{ns}); got != tt.want {
			t.Errorf("Sprint(%q) = %q, want %q", tt.format, got, tt.want)
		}
	}
	f, _ := Parse("%Y")
	if got := f.Sprint([]Value{Int(1704067200*1e9 + 5*86400e9)}); got != "2024 Jan  6 00:00:00" {
		t.Errorf("day padding: got %q", got)
	}
}

func TestFprintAgg(t *testing.T) {
	f, err := Parse("%-10s %@8d %@d\n")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	// With one aggregation value, the second %@ prints it again.
	if err := f.FprintAgg(&b, []Value{Str("bash")}, []Value{Int(42)}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "bash             42 42\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	b.Reset()
	if err := f.FprintAgg(&b, []Value{Str("sh")}, []Value{Int(1), Int(2)}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "sh                1 2\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFprintMismatch(t *testing.T) {
	f, _ := Parse("%d and %d\n")
	var b bytes.Buffer
	err := f.Fprint(&b, []Value{Int(1)})
	if !errors.Is(err, ErrMismatch) {
		t.Errorf("err = %v, want ErrMismatch", err)
	}
	if b.String() != "1 and " {
		t.Errorf("partial output = %q", b.String())
	}
	if ErrMismatch.Error() != "Data record list does not match statement" {
		t.Errorf("ErrMismatch text = %q", ErrMismatch.Error())
	}
}

func TestFprintAggTable(t *testing.T) {
	f, err := Parse("%s = %-8@d|%@x\n")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	// A drawn table prints as it is, whatever the conversion's flags.
	if err := f.FprintAgg(&b, []Value{Str("k")}, []Value{Table("\nTABLE\n"), Int(255)}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), "k = \nTABLE\n|ff\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
