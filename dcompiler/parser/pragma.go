package parser

import (
	"strings"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/lexer"
	"github.com/dstar-trace/dstar/dcompiler/source"
)

// DTrace reads control lines in its lexer, wherever a token may start
// (between clauses, inside one, inside a declaration), and checks their
// form there; what needs the program's names (an option's value, an
// identifier's attributes) the checker sees to.

// pragmaWord is a word of a control line: a quoted string, an integer, or
// anything else up to white space.
type pragmaWord struct {
	text   string
	quoted bool
	num    bool
}

// pragmaWords splits a control line as DTrace's lexer does.
func pragmaWords(s string) []pragmaWord {
	var out []pragmaWord
	for {
		s = strings.TrimLeft(s, " \t\f\v\r")
		if s == "" {
			return out
		}
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				end = len(s) - 1
			}
			out = append(out, pragmaWord{text: s[1 : 1+end], quoted: true})
			s = s[min(end+2, len(s)):]
			continue
		}
		end := strings.IndexAny(s, " \t\f\v\r\"")
		if end < 0 {
			end = len(s)
		}
		w := s[:end]
		out = append(out, pragmaWord{text: w, num: isNumber(w)})
		s = s[end:]
	}
}

func isNumber(w string) bool {
	if w == "" || w[0] < '0' || w[0] > '9' {
		return false
	}
	for i := 0; i < len(w); i++ {
		if !lexer.IsIdent(w[i]) {
			return false
		}
	}
	return true
}

// Where a directive may stand: after '#', after "#pragma", or only after
// "#pragma D".
const (
	pragmaDir = iota
	pragmaSub
	pragmaD
)

var pragmaKinds = map[string]int{
	"attributes": pragmaD, "binding": pragmaD, "depends_on": pragmaD, "option": pragmaD,
	"error": pragmaDir, "ident": pragmaDir, "line": pragmaDir,
}

// control handles a control line the lexer returned, once however often
// backtracking reads it.
func (p *parser) control(t lexer.Token) error {
	if p.controls[t.Pos] {
		return nil
	}
	if p.controls == nil {
		p.controls = map[source.Pos]bool{}
	}
	p.controls[t.Pos] = true
	errf := func(tag, format string, args ...any) error {
		return source.Errorf(p.f, t.Pos, tag, format, args...)
	}
	words := pragmaWords(t.Text)
	kind := pragmaDir
	for i, w := range words {
		if w.num {
			return nil // a line marker, "# 12 "file"", as cpp writes
		}
		if w.quoted {
			return errf("D_PRAGCTL_INVAL", "invalid control directive")
		}
		if kind == pragmaDir && w.text == "pragma" {
			kind = pragmaSub
			continue
		}
		if kind == pragmaSub && w.text == "D" {
			kind = pragmaD
			continue
		}
		args := words[i+1:]
		k, known := pragmaKinds[w.text]
		if !known || k > kind {
			switch kind {
			case pragmaDir:
				return errf("D_PRAGCTL_INVAL", "invalid control directive: #%s", w.text)
			case pragmaSub:
				return nil // an unknown pragma, which C ignores
			}
			return errf("D_PRAGMA_INVAL", "invalid D pragma: %s", w.text)
		}
		idents := 0
		for _, a := range args {
			if a.quoted || a.num {
				break
			}
			idents++
		}
		switch w.text {
		case "error":
			var msg strings.Builder
			for _, a := range args {
				if !a.num {
					msg.WriteString(a.text + " ")
				}
			}
			return errf("D_PRAGERR", "#error: %s", msg.String())
		case "attributes":
			if idents < 2 {
				return errf("D_PRAGMA_MALFORM", "malformed #pragma attributes <attributes> <ident>")
			}
			if !validAttributes(args[0].text) {
				return errf("D_PRAGMA_INVAL", "invalid attributes specified by #pragma attributes")
			}
		case "binding":
			if len(args) < 2 || !args[0].quoted || args[1].quoted || args[1].num {
				return errf("D_PRAGMA_MALFORM", "malformed #pragma binding \"version\" <ident>")
			}
		case "depends_on":
			if idents < 2 {
				return errf("D_PRAGMA_MALFORM", "malformed #pragma depends_on <class> <name>")
			}
			switch args[0].text {
			case "library":
				if !p.f.Library {
					return errf("D_PRAGMA_DEPEND", "main program may not explicitly depend on a library")
				}
			case "provider", "module":
			default:
				return errf("D_PRAGMA_INVAL", "invalid class %s specified by #pragma depends_on", args[0].text)
			}
		case "option":
			if idents < 1 {
				return errf("D_PRAGMA_MALFORM", "malformed #pragma option <option>=<val>")
			}
			if len(args) > 1 {
				return errf("D_PRAGMA_MALFORM", "superfluous arguments specified for #pragma option")
			}
		}
		if kind == pragmaD {
			rest := strings.TrimSpace(strings.TrimPrefix(t.Text, "pragma"))
			p.pragmas = append(p.pragmas, &ast.Pragma{File: p.f, Pos: t.Pos, Text: rest})
		}
		return nil
	}
	return nil
}

// validAttributes reports whether s is a stability attribute as DTrace
// writes one: name/data/class, each part optional from the right.
func validAttributes(s string) bool {
	stabilities := []string{"internal", "private", "obsolete", "external", "unstable", "evolving", "stable", "standard"}
	classes := []string{"unknown", "cpu", "platform", "group", "isa", "common"}
	parts := strings.Split(s, "/")
	if len(parts) > 3 {
		return false
	}
	for i, part := range parts {
		if part == "" {
			return true // the rest are left as they are
		}
		list := stabilities
		if i == 2 {
			list = classes
		}
		found := false
		for _, w := range list {
			found = found || strings.EqualFold(w, part)
		}
		if !found {
			return false
		}
	}
	return true
}
