// This file holds the C-style field helpers the layouts are built from:
// widths count bytes, as printf(3C) counts them, not runes as Go's fmt does.

package output

import "strconv"

// padLeft right-aligns s in a field of width bytes (C's "%*s").
func padLeft(s string, width int) string {
	if n := width - len(s); n > 0 {
		return spaces(n) + s
	}
	return s
}

// padRight left-aligns s in a field of width bytes (C's "%-*s").
func padRight(s string, width int) string {
	if n := width - len(s); n > 0 {
		return s + spaces(n)
	}
	return s
}

func spaces(n int) string {
	const sp = "                                                                "
	if n <= len(sp) {
		return sp[:n]
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = ' '
	}
	return string(b)
}

// dec formats a signed integer right-aligned in width bytes ("%*lld").
func dec(v int64, width int) string { return padLeft(strconv.FormatInt(v, 10), width) }

// udec formats an unsigned integer right-aligned in width bytes ("%*llu").
func udec(v uint64, width int) string { return padLeft(strconv.FormatUint(v, 10), width) }
