// This file lays out trace()'s output and the raw byte dumps DTrace falls
// back to for data that is not a printable string (dt_consume.c:
// dt_print_trace, dt_print_bytes, dt_print_rawbytes).

package output

import (
	"strconv"
	"strings"

	"github.com/dstar-trace/dstar/dcompiler/printf"
)

// Trace returns how trace() prints v. In quiet mode the value is printed
// bare. Otherwise a string is "  %-33s" and an integer is right-aligned in
// a field that depends on its size and signedness, after one space:
//
//	size  signed  unsigned
//	   8      19        20
//	   4      10        10
//	   2       5         5
//	   1       3         3
//
// These are dtrace-utils' widths (DTrace on Linux); illumos used 16, 8, 5
// and 3 and printed values narrower than 32 bits as unsigned.
func Trace(v printf.Value, quiet bool) string {
	switch v.Kind {
	case printf.StringValue:
		if quiet {
			return v.Str
		}
		return "  " + padRight(v.Str, 33)
	case printf.FloatValue:
		s := strconv.FormatFloat(v.Float, 'g', -1, 64)
		if quiet {
			return s
		}
		return " " + padLeft(s, 19)
	}
	s := v.String()
	if quiet {
		return s
	}
	width := 0
	switch v.Size {
	case 1:
		width = 3
	case 2:
		width = 5
	case 4:
		width = 10
	default:
		width = 19
		if !v.Signed {
			width = 20
		}
	}
	return " " + padLeft(s, width)
}

// Bytes returns how DTrace prints a record of raw bytes that may hold a
// string (an aggregation's string key, for one): if buf is printable
// characters followed only by NULs, or printable throughout, the string
// left-aligned in width columns after two spaces ("  %-*s"); otherwise a hex
// dump (RawBytes). A NUL in the first byte (an empty string) makes a dump.
func Bytes(buf []byte, width int) string {
	for i, c := range buf {
		if isprint(c) || isspace(c) || c == '\b' || c == '\a' {
			continue
		}
		if c == 0 && i > 0 {
			for _, d := range buf[i+1:] {
				if d != 0 {
					return RawBytes(buf)
				}
			}
			return "  " + padRight(string(buf[:i]), width)
		}
		return RawBytes(buf)
	}
	if len(buf) == 0 {
		return ""
	}
	return "  " + padRight(string(buf), width)
}

func isprint(c byte) bool { return c >= ' ' && c <= '~' }

func isspace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// RawBytes returns DTrace's hex dump of buf, as tracemem() and unprintable
// data print: a newline, a ruler of column digits, then 16 bytes a line with
// their offset, hex values and characters ('.' for unprintable ones).
func RawBytes(buf []byte) string {
	if len(buf) == 0 {
		return ""
	}
	const margin = "     "
	var b strings.Builder
	b.WriteString("\n" + margin + "      ")
	for _, c := range "0123456789abcdef" {
		b.WriteString("  ")
		b.WriteRune(c)
	}
	b.WriteString("  0123456789abcdef\n")
	for i := 0; i < len(buf); i += 16 {
		line := buf[i:min(i+16, len(buf))]
		b.WriteString(margin + padLeft(strconv.FormatInt(int64(i), 16), 5) + ":")
		for _, c := range line {
			b.WriteString(" ")
			if c < 0x10 {
				b.WriteByte('0')
			}
			b.WriteString(strconv.FormatUint(uint64(c), 16))
		}
		b.WriteString(strings.Repeat("   ", 16-len(line)))
		b.WriteString("  ")
		for _, c := range line {
			if c < ' ' || c > '~' {
				c = '.'
			}
			b.WriteByte(c)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Symbol is an address as sym( ), mod( ), usym( ) and the like print it,
// as an action and as an aggregation key alike: in 50 columns after two
// spaces, quiet or not (dt_print_sym's format).
func Symbol(name string) string { return "  " + padRight(name, 50) }

// StackIndent is how far dtrace(1) indents each frame of a stack.
const StackIndent = printf.StackIndent

// Stack is a stack as stack( ) and stack-keyed aggregations print it: a
// newline, then each frame on a line of its own, indented.
func Stack(frames []string) string {
	var b strings.Builder
	b.WriteString("\n")
	for _, f := range frames {
		b.WriteString(strings.Repeat(" ", StackIndent))
		b.WriteString(f)
		b.WriteString("\n")
	}
	return b.String()
}
