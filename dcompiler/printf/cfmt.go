// This file formats single values with C printf semantics (as glibc does in
// the C locale), which differ from Go's fmt in many corners: %#o, % d, %x of
// negative numbers, %c of an int, zero padding after a sign or "0x".

package printf

import (
	"math"
	"strconv"
	"strings"
)

// spec is a fully resolved C conversion: flags, width and precision after
// any '*' arguments have been applied.
type spec struct {
	left, plus, space, alt, zero bool
	width                        int
	prec                         int // -1: none
}

// pad appends body to dst padded to the spec's width with spaces.
func (sp *spec) pad(dst []byte, body string) []byte {
	n := sp.width - len(body)
	if n <= 0 {
		return append(dst, body...)
	}
	if sp.left {
		dst = append(dst, body...)
		return appendRepeat(dst, ' ', n)
	}
	dst = appendRepeat(dst, ' ', n)
	return append(dst, body...)
}

// padNumber appends a number made of a sign or prefix and digits, padded as
// C pads numbers: zeros go between the prefix and the digits.
func (sp *spec) padNumber(dst []byte, prefix, digits string, zeroOK bool) []byte {
	n := sp.width - len(prefix) - len(digits)
	switch {
	case n <= 0:
		dst = append(dst, prefix...)
		return append(dst, digits...)
	case sp.left:
		dst = append(dst, prefix...)
		dst = append(dst, digits...)
		return appendRepeat(dst, ' ', n)
	case sp.zero && zeroOK:
		dst = append(dst, prefix...)
		dst = appendRepeat(dst, '0', n)
		return append(dst, digits...)
	}
	dst = appendRepeat(dst, ' ', n)
	dst = append(dst, prefix...)
	return append(dst, digits...)
}

func appendRepeat(dst []byte, c byte, n int) []byte {
	for ; n > 0; n-- {
		dst = append(dst, c)
	}
	return dst
}

// appendInt formats an integer for %d/%i (signed) or %u/%o/%x/%X (unsigned).
// neg and mag are the sign and magnitude.
func (sp *spec) appendInt(dst []byte, verb byte, neg bool, mag uint64) []byte {
	base := 10
	switch verb {
	case 'o':
		base = 8
	case 'x', 'X':
		base = 16
	}
	digits := strconv.FormatUint(mag, base)
	if verb == 'X' {
		digits = strings.ToUpper(digits)
	}
	if sp.prec >= 0 && len(digits) < sp.prec {
		digits = strings.Repeat("0", sp.prec-len(digits)) + digits
	}
	prefix := ""
	switch verb {
	case 'd', 'i':
		switch {
		case neg:
			prefix = "-"
		case sp.plus:
			prefix = "+"
		case sp.space:
			prefix = " "
		}
	case 'o':
		if sp.alt && digits[0] != '0' {
			digits = "0" + digits
		}
	case 'x', 'X':
		if sp.alt && mag != 0 {
			prefix = "0" + string(verb)
		}
	}
	// C ignores the '0' flag when a precision is given.
	return sp.padNumber(dst, prefix, digits, sp.prec < 0)
}

// appendChar formats %c: the low byte of the value.
func (sp *spec) appendChar(dst []byte, c byte) []byte {
	return sp.pad(dst, string([]byte{c}))
}

// appendString formats %s: at most prec bytes of s.
func (sp *spec) appendString(dst []byte, s string) []byte {
	if sp.prec >= 0 && len(s) > sp.prec {
		s = s[:sp.prec]
	}
	return sp.pad(dst, s)
}

// appendFloat formats %e %E %f %g %G.
func (sp *spec) appendFloat(dst []byte, verb byte, f float64) []byte {
	prefix := ""
	switch {
	case math.Signbit(f) && !math.IsNaN(f):
		prefix = "-"
	case sp.plus:
		prefix = "+"
	case sp.space:
		prefix = " "
	}
	upper := verb == 'E' || verb == 'G'
	if math.IsInf(f, 0) || math.IsNaN(f) {
		body := "inf"
		if math.IsNaN(f) {
			body = "nan"
		}
		if upper {
			body = strings.ToUpper(body)
		}
		return sp.padNumber(dst, prefix, body, false)
	}
	f = math.Abs(f)
	prec := sp.prec
	if prec < 0 {
		prec = 6
	}
	var body string
	switch verb {
	case 'f', 'F':
		body = strconv.FormatFloat(f, 'f', prec, 64)
		if sp.alt && prec == 0 {
			body += "."
		}
	case 'e', 'E':
		body = formatE(f, prec, sp.alt)
	case 'g', 'G':
		body = formatG(f, prec, sp.alt)
	}
	if upper {
		body = strings.ToUpper(body)
	}
	return sp.padNumber(dst, prefix, body, true)
}

// formatE formats f in C's %e style; Go's exponent already has at least two
// digits, as C's does.
func formatE(f float64, prec int, alt bool) string {
	s := strconv.FormatFloat(f, 'e', prec, 64)
	if alt && prec == 0 {
		i := strings.IndexByte(s, 'e')
		s = s[:i] + "." + s[i:]
	}
	return s
}

// formatG formats f in C's %g style: %e or %f by the exponent, then
// trailing zeros removed unless '#' is given.
func formatG(f float64, prec int, alt bool) string {
	if prec == 0 {
		prec = 1
	}
	e := strconv.FormatFloat(f, 'e', prec-1, 64)
	x, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	var s string
	if prec > x && x >= -4 {
		s = strconv.FormatFloat(f, 'f', prec-1-x, 64)
		if alt && !strings.Contains(s, ".") {
			s += "."
		}
		if !alt {
			s = trimFraction(s)
		}
		return s
	}
	s = e
	if alt && prec == 1 {
		i := strings.IndexByte(s, 'e')
		s = s[:i] + "." + s[i:]
	}
	if !alt {
		i := strings.IndexByte(s, 'e')
		s = trimFraction(s[:i]) + s[i:]
	}
	return s
}

// trimFraction removes trailing zeros after a decimal point, and the point
// itself if nothing follows it.
func trimFraction(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
