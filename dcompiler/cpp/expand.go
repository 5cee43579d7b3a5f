package cpp

import (
	"fmt"
	"strings"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/parser"
	"github.com/dstar-trace/dstar/dcompiler/source"

	"github.com/dstar-trace/dstar/dcompiler/lexer"
)

// expand replaces macros in a line of text, leaving string and character
// literals and comments alone.
func (p *pp) expand(s string) string {
	var b strings.Builder
	p.expandTo(&b, s, map[string]bool{})
	return b.String()
}

// expandTo writes s to b with its macros replaced. As in C, a macro is
// not expanded again inside its own expansion (active holds those being
// expanded), which ends self-reference however long a chain of macros
// is; expansions are written straight to b so that a chain of n macros
// costs time in proportion to its text, not n times it.
func (p *pp) expandTo(b *strings.Builder, s string, active map[string]bool) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(s))
			b.WriteString(s[i:j])
			i = j
		case strings.HasPrefix(s[i:], "//"):
			b.WriteString(s[i:])
			i = len(s)
		case lexer.IsIdent(c) && !(c >= '0' && c <= '9'):
			j := i
			for j < len(s) && lexer.IsIdent(s[j]) {
				j++
			}
			word := s[i:j]
			m, ok := p.macros[word]
			if !ok || active[word] {
				b.WriteString(word)
				i = j
				continue
			}
			if m.params == nil {
				active[word] = true
				p.expandTo(b, m.body, active)
				delete(active, word)
				i = j
				continue
			}
			args, end, ok := callArgs(s, j)
			if !ok {
				b.WriteString(word)
				i = j
				continue
			}
			body := m.body
			for k, param := range m.params {
				if k < len(args) {
					// As C: an argument's macros are expanded
					// before it is put in the body, where this macro
					// no longer expands (MAX(MAX(a, b), c)).
					var arg strings.Builder
					p.expandTo(&arg, strings.TrimSpace(args[k]), active)
					body = replaceWord(body, param, arg.String())
				}
			}
			active[word] = true
			p.expandTo(b, body, active)
			delete(active, word)
			i = end
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && lexer.IsIdent(s[j]) {
				j++
			}
			b.WriteString(s[i:j])
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
}

// callArgs reads "(a, b)" at s[i:], with nested parentheses; it returns
// the arguments and where the call ends.
func callArgs(s string, i int) ([]string, int, bool) {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i >= len(s) || s[i] != '(' {
		return nil, 0, false
	}
	depth, start := 0, i+1
	var args []string
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				if a := s[start:j]; strings.TrimSpace(a) != "" || len(args) > 0 {
					args = append(args, a)
				}
				return args, j + 1, true
			}
		case ',':
			if depth == 1 {
				args = append(args, s[start:j])
				start = j + 1
			}
		}
	}
	return nil, 0, false
}

// replaceWord replaces whole-word occurrences of old in s.
func replaceWord(s, old, new string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], old) && (i == 0 || !lexer.IsIdent(s[i-1])) &&
			(i+len(old) == len(s) || !lexer.IsIdent(s[i+len(old)])) {
			b.WriteString(new)
			i += len(old)
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// eval evaluates an #if expression: defined(X), macros expanded, other
// identifiers 0, then C's integer arithmetic.
func (p *pp) eval(s string) (int64, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "defined") && (i+7 == len(s) || !lexer.IsIdent(s[i+7])) {
			j := i + 7
			for j < len(s) && s[j] == ' ' {
				j++
			}
			paren := j < len(s) && s[j] == '('
			if paren {
				j++
			}
			k := j
			for k < len(s) && lexer.IsIdent(s[k]) {
				k++
			}
			name := strings.TrimSpace(s[j:k])
			if name == "" {
				return 0, fmt.Errorf("operator \"defined\" requires an identifier")
			}
			if paren {
				for k < len(s) && s[k] != ')' {
					k++
				}
				k++
			}
			if _, ok := p.macros[name]; ok {
				b.WriteString(" 1 ")
			} else {
				b.WriteString(" 0 ")
			}
			i = min(k, len(s))
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	expanded := p.expand(b.String())
	// Identifiers left are not macros: 0, as in C.
	var z strings.Builder
	for i := 0; i < len(expanded); {
		c := expanded[i]
		if lexer.IsIdent(c) && !(c >= '0' && c <= '9') {
			j := i
			for j < len(expanded) && lexer.IsIdent(expanded[j]) {
				j++
			}
			z.WriteString("0")
			i = j
			continue
		}
		if c >= '0' && c <= '9' {
			j := i
			for j < len(expanded) && lexer.IsIdent(expanded[j]) {
				j++
			}
			z.WriteString(expanded[i:j])
			i = j
			continue
		}
		z.WriteByte(c)
		i++
	}
	x, err := parser.ParseExpr(source.NewFile("#if", z.String()))
	if err != nil {
		return 0, fmt.Errorf("invalid #if expression: %s", strings.TrimSpace(s))
	}
	return constEval(x)
}

// constEval evaluates an integer constant expression.
func constEval(e ast.Expr) (int64, error) {
	switch e := e.(type) {
	case *ast.IntLit:
		return int64(e.Val), nil
	case *ast.Paren:
		return constEval(e.X)
	case *ast.Unary:
		x, err := constEval(e.X)
		if err != nil {
			return 0, err
		}
		switch e.Op {
		case "-":
			return -x, nil
		case "+":
			return x, nil
		case "~":
			return ^x, nil
		case "!":
			return b2i(x == 0), nil
		}
	case *ast.Cond:
		c, err := constEval(e.C)
		if err != nil {
			return 0, err
		}
		if c != 0 {
			return constEval(e.T)
		}
		return constEval(e.F)
	case *ast.Binary:
		x, err := constEval(e.X)
		if err != nil {
			return 0, err
		}
		y, err := constEval(e.Y)
		if err != nil {
			return 0, err
		}
		switch e.Op {
		case "+":
			return x + y, nil
		case "-":
			return x - y, nil
		case "*":
			return x * y, nil
		case "/", "%":
			if y == 0 {
				return 0, fmt.Errorf("division by zero in #if")
			}
			if e.Op == "/" {
				return x / y, nil
			}
			return x % y, nil
		case "<<":
			return x << uint(y), nil
		case ">>":
			return x >> uint(y), nil
		case "<":
			return b2i(x < y), nil
		case ">":
			return b2i(x > y), nil
		case "<=":
			return b2i(x <= y), nil
		case ">=":
			return b2i(x >= y), nil
		case "==":
			return b2i(x == y), nil
		case "!=":
			return b2i(x != y), nil
		case "&&":
			return b2i(x != 0 && y != 0), nil
		case "||":
			return b2i(x != 0 || y != 0), nil
		case "&":
			return x & y, nil
		case "|":
			return x | y, nil
		case "^":
			return x ^ y, nil
		}
	}
	return 0, fmt.Errorf("invalid #if expression")
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
