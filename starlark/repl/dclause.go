package repl

import (
	"regexp"
	"strings"

	"github.com/dstar-trace/dstar/starlark/script"
)

// isDClause reports whether line starts a D clause: one or more probe
// descriptions, separated by commas, followed by '{', or by '/' (a
// predicate), or alone on the line. A line that is also valid Starlark
// (`a / b`, `x[1:2]`, `a,`) is Starlark, except before '{', which no
// Starlark statement has there. A lone description must have a colon:
// `BEGIN` alone may be a Starlark name (see mayStartDClause).
func isDClause(line string) bool {
	rest, colon, ok := descPrefix(line)
	switch {
	case !ok:
		return false
	case strings.HasPrefix(rest, "{"):
		return true
	case strings.HasPrefix(rest, "/"):
		return !isStarlark(line)
	case rest == "":
		return colon && !isStarlark(line)
	}
	return false
}

// dNames are the descriptions without a colon that a D clause commonly
// starts with on a line of their own.
var dNames = regexp.MustCompile(`^(BEGIN|END|ERROR|profile-\w+|tick-\w+)$`)

// mayStartDClause reports whether line, which isDClause rejected, may be
// the first line of a D clause whose predicate or body starts on the next
// line: descriptions without a colon alone on the line, that are not
// valid Starlark (tick-1s), or that name BEGIN, END, ERROR or a profile
// probe when Starlark does not define the name (defined reports that).
func mayStartDClause(line string, defined func(string) bool) bool {
	rest, colon, ok := descPrefix(line)
	if !ok || rest != "" || colon {
		return false
	}
	if !isStarlark(line) {
		return true
	}
	s := strings.TrimSpace(line)
	name, _, _ := strings.Cut(s, "-")
	return dNames.MatchString(s) && !defined(name)
}

// opensDClause reports whether line continues a lone description as a D
// clause: it starts with a predicate or a body.
func opensDClause(line string) bool {
	s := strings.TrimSpace(line)
	return strings.HasPrefix(s, "{") || strings.HasPrefix(s, "/")
}

// descPrefix scans the probe descriptions (separated by commas) line
// starts with. It returns the rest of the line, and whether a
// description had a colon; ok is false when line does not start with
// one.
func descPrefix(line string) (rest string, colon, ok bool) {
	s := strings.TrimSpace(line)
	i := 0
	for {
		j := i
		for j < len(s) && isDescChar(s[j]) {
			j++
		}
		if j == i {
			return "", false, false
		}
		colon = colon || strings.Contains(s[i:j], ":")
		i = skipSpace(s, j)
		if i < len(s) && s[i] == ',' {
			i = skipSpace(s, i+1)
			if i < len(s) {
				continue
			}
		}
		return s[i:], colon, true
	}
}

// isDescChar is the D lexer's set of probe-description characters.
func isDescChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte(":-*?[]!^$.+`~", c) >= 0
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// isStarlark reports whether line alone parses as Starlark.
func isStarlark(line string) bool {
	_, err := script.Dialect.Parse("<stdin>", line+"\n", 0)
	return err == nil
}

// braces follows a D clause's text line by line, counting braces outside
// strings, character constants and comments, to tell when it is complete.
type braces struct {
	depth   int
	opened  bool // a '{' has been seen
	comment bool // inside /* */
}

// feed scans one line.
func (b *braces) feed(line string) {
	for i := 0; i < len(line); i++ {
		c := line[i]
		if b.comment {
			if c == '*' && i+1 < len(line) && line[i+1] == '/' {
				b.comment = false
				i++
			}
			continue
		}
		switch c {
		case '"', '\'':
			// Skip to the closing quote; a string does not span lines.
			for i++; i < len(line) && line[i] != c; i++ {
				if line[i] == '\\' {
					i++
				}
			}
		case '/':
			if i+1 < len(line) && line[i+1] == '/' {
				return
			}
			if i+1 < len(line) && line[i+1] == '*' {
				b.comment = true
				i++
			}
		case '{':
			b.depth++
			b.opened = true
		case '}':
			b.depth--
		}
	}
}

// complete reports whether the clause's braces have balanced.
func (b *braces) complete() bool {
	return b.opened && b.depth <= 0 && !b.comment
}
