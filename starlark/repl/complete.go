package repl

import (
	"path"
	"sort"
	"strings"

	"go.starlark.net/starlark"

	"github.com/dstar-trace/dstar/providers"
)

// keywords are Starlark's keywords, completed as names.
var keywords = []string{
	"and", "break", "continue", "def", "elif", "else", "for", "if", "in",
	"lambda", "load", "not", "or", "pass", "return", "while",
}

// complete is liner's word completer. It completes, by where the cursor
// is: a ':' command's name; a probe description (the first word of a line
// when it has a colon, or :list's argument), field by field; a Starlark
// name, or an attribute after a dot. A first word without a colon may be
// either a Starlark name or a provider.
func (r *shell) complete(line string, pos int) (head string, completions []string, tail string) {
	runes := []rune(line)
	if pos > len(runes) {
		pos = len(runes)
	}
	before, tail := string(runes[:pos]), string(runes[pos:])
	lead := strings.TrimLeft(before, " \t")
	indent := before[:len(before)-len(lead)]

	if cmd, ok := strings.CutPrefix(lead, ":"); ok {
		name, arg, spaced := strings.Cut(cmd, " ")
		if !spaced {
			for _, c := range commands {
				if strings.HasPrefix(c.name, name) {
					completions = append(completions, ":"+c.name)
				}
			}
			return indent, completions, tail
		}
		if c, err := lookupCommand(name); err == nil && c.name == "list" {
			word := strings.TrimLeft(arg, " ")
			return before[:len(before)-len(word)], r.completeProbe(word), tail
		}
		return before, nil, tail
	}

	// A probe description: the line's first word, or one after another
	// description and a comma.
	ws := len(before)
	for ws > 0 && isDescChar(before[ws-1]) {
		ws--
	}
	desc, pre := before[ws:], strings.TrimSpace(before[:ws])
	if pre == "" || strings.HasSuffix(pre, ",") && descList(strings.TrimSuffix(pre, ",")) {
		if strings.Contains(desc, ":") {
			return before[:ws], r.completeProbe(desc), tail
		}
		if pre == "" && desc != "" && strings.IndexFunc(desc, func(c rune) bool { return c > 127 || !isIdentChar(byte(c)) }) < 0 {
			// A provider, BEGIN/END/ERROR, or a Starlark name.
			set := map[string]bool{}
			for _, name := range r.names(desc) {
				set[name] = true
			}
			for _, p := range providers.Default().Providers() {
				if strings.HasPrefix(p.Name()+":", desc) {
					set[p.Name()+":"] = true
				}
			}
			for _, name := range []string{"BEGIN", "END", "ERROR"} {
				if strings.HasPrefix(name, desc) {
					set[name] = true
				}
			}
			return before[:ws], sorted(set), tail
		}
	}

	// A Starlark name or dotted attribute.
	ws = len(before)
	for ws > 0 && (isIdentChar(before[ws-1]) || before[ws-1] == '.') {
		ws--
	}
	word := before[ws:]
	dot := strings.LastIndexByte(word, '.')
	if dot < 0 {
		return before[:ws], r.names(word), tail
	}
	v := r.lookup(word[:dot])
	attrs, ok := v.(starlark.HasAttrs)
	if !ok {
		return before, nil, tail
	}
	prefix := word[dot+1:]
	for _, name := range attrs.AttrNames() {
		if strings.HasPrefix(name, prefix) {
			completions = append(completions, name)
		}
	}
	sort.Strings(completions)
	return before[:ws+dot+1], completions, tail
}

// descList reports whether s is probe descriptions separated by commas.
func descList(s string) bool {
	for _, d := range strings.Split(s, ",") {
		d = strings.TrimSpace(d)
		if d == "" {
			return false
		}
		for i := 0; i < len(d); i++ {
			if !isDescChar(d[i]) {
				return false
			}
		}
	}
	return true
}

func isIdentChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// names returns the globals, built-ins and keywords that start with prefix.
func (r *shell) names(prefix string) []string {
	set := map[string]bool{}
	add := func(name string) {
		if strings.HasPrefix(name, prefix) {
			set[name] = true
		}
	}
	for name := range r.globals {
		add(name)
	}
	for name := range starlark.Universe {
		add(name)
	}
	for _, name := range keywords {
		add(name)
	}
	add("session") // made when first used
	return sorted(set)
}

// lookup evaluates a dotted name (a.b.c) without calling anything, for
// completion; nil if it names nothing.
func (r *shell) lookup(dotted string) starlark.Value {
	parts := strings.Split(dotted, ".")
	var v starlark.Value
	switch name := parts[0]; {
	case name == "session" && r.globals["session"] == nil:
		s, err := r.session()
		if err != nil {
			return nil
		}
		v = s
	case r.globals[name] != nil:
		v = r.globals[name]
	case starlark.Universe[name] != nil:
		v = starlark.Universe[name]
	default:
		return nil
	}
	for _, name := range parts[1:] {
		a, ok := v.(starlark.HasAttrs)
		if !ok {
			return nil
		}
		next, err := a.Attr(name)
		if err != nil || next == nil {
			return nil
		}
		v = next
	}
	return v
}

// completeProbe completes the last field of a probe description, given the
// fields before it: providers, then modules, functions and names. The
// probes are listed once, on first use.
func (r *shell) completeProbe(desc string) []string {
	fields := strings.Split(desc, ":")
	n := len(fields) - 1
	if n > 3 {
		return nil
	}
	if !r.probesRead {
		r.probesRead = true
		r.probes, _ = providers.Default().List(providers.Desc{})
	}
	set := map[string]bool{}
	head := strings.Join(fields[:n], ":")
	if n > 0 {
		head += ":"
	}
	for _, p := range r.probes {
		f := [4]string{p.Provider, p.Module, p.Function, p.Name}
		if !strings.HasPrefix(f[n], fields[n]) || !matchFields(fields[:n], f[:n]) {
			continue
		}
		c := head + f[n]
		if n < 3 {
			c += ":"
		}
		set[c] = true
	}
	return sorted(set)
}

// matchFields reports whether each pattern (a glob; empty matches
// anything) matches its field.
func matchFields(patterns []string, fields []string) bool {
	for i, p := range patterns {
		if p == "" || p == fields[i] {
			continue
		}
		if ok, _ := path.Match(p, fields[i]); !ok {
			return false
		}
	}
	return true
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
