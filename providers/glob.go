package providers

import "strings"

// globMatch reports whether s matches the shell-style pattern p, with
// DTrace's rules (those of gmatch(3GEN)): '*' matches any run of
// characters, '?' any one character, "[...]" one character of a set with
// ranges ("a-z") negated by a leading '!' or '^', and '\' quotes the next
// character. A '[' without its ']' matches itself.
func globMatch(p, s string) bool {
	// Iterative matching with one backtrack point: the last '*' seen.
	star, starS := -1, 0
	pi, si := 0, 0
	for si < len(s) {
		if pi < len(p) {
			switch c := p[pi]; c {
			case '*':
				star, starS = pi, si
				pi++
				continue
			case '?':
				pi++
				si++
				continue
			case '[':
				if ok, n, valid := matchClass(p[pi:], s[si]); valid {
					if ok {
						pi += n
						si++
						continue
					}
					break
				}
				if s[si] == '[' {
					pi++
					si++
					continue
				}
			case '\\':
				if pi+1 < len(p) && p[pi+1] == s[si] {
					pi += 2
					si++
					continue
				}
			default:
				if c == s[si] {
					pi++
					si++
					continue
				}
			}
		}
		if star < 0 {
			return false
		}
		starS++
		pi, si = star+1, starS
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// matchClass matches c against the bracket expression at the start of p. It
// returns whether c is in the set, the length of the expression, and whether
// the expression is well formed (has its closing ']').
func matchClass(p string, c byte) (in bool, n int, valid bool) {
	i := 1
	neg := false
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		neg = true
		i++
	}
	first := true
	for i < len(p) {
		lo := p[i]
		if lo == ']' && !first {
			return in != neg, i + 1, true
		}
		first = false
		if lo == '\\' && i+1 < len(p) {
			i++
			lo = p[i]
		}
		hi := lo
		if i+2 < len(p) && p[i+1] == '-' && p[i+2] != ']' {
			hi = p[i+2]
			if hi == '\\' && i+3 < len(p) {
				i++
				hi = p[i+2]
			}
			i += 2
		}
		if lo <= c && c <= hi {
			in = true
		}
		i++
	}
	return false, 0, false
}

// isGlob reports whether s contains glob metacharacters, that is, whether it
// can match more than the one string it spells.
func isGlob(s string) bool { return strings.ContainsAny(s, "*?[\\") }
