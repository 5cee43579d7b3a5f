// Package cpp is the C preprocessor dtrace -C runs over scripts, written
// for D: #define (object- and function-like), #undef, #include "..." and
// <...>, #if/#ifdef/#ifndef/#elif/#else/#endif with C's integer
// expressions and defined(), #error, and -D/-U/-I. #pragma lines pass
// through, since D has its own. Lines of the main file keep their numbers:
// directives become empty lines.
package cpp

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/dstar-trace/dstar/dcompiler/lexer"
)

// Options configure a run.
type Options struct {
	Defines  map[string]string // -D NAME[=VALUE] (VALUE "" means 1)
	Undefs   []string          // -U NAME
	Includes []string          // -I DIR, searched in order
	// Stdc is dtrace's -X mode: "a" (the default) and "t" define
	// __STDC__ as 0, "c" as 1, and "s" (K&R C) leaves it undefined.
	Stdc string
	// Included, when set, is told of each file #include reads and how
	// deeply it is nested (1 for the script's own), for -H.
	Included func(depth int, path string)
}

// Error is a preprocessing error at a line of a file.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Errors are the errors of a run, in order: as cpp, a run goes on past
// the errors it can recover from and reports them all.
type Errors []*Error

func (es Errors) Error() string {
	var lines []string
	for _, e := range es {
		lines = append(lines, e.Error())
	}
	return strings.Join(lines, "\n")
}

type macro struct {
	params []string // nil for an object-like macro
	body   string
}

type pp struct {
	opts   Options
	macros map[string]*macro
	depth  int
	errs   Errors // errors the run has gone on past
}

// Run preprocesses src, the text of file name.
func Run(name, src string, opts Options) (string, error) {
	p := &pp{opts: opts, macros: map[string]*macro{}}
	for k, v := range predefined() {
		p.macros[k] = &macro{body: v}
	}
	switch opts.Stdc {
	case "", "a", "t":
		p.macros["__STDC__"] = &macro{body: "0"}
	case "c":
		p.macros["__STDC__"] = &macro{body: "1"}
	}
	if opts.Stdc == "" || opts.Stdc == "a" {
		// dtrace's default, -Xa, runs cpp -std=c99: strict ISO C, so
		// that the system's headers (<endian.h>) declare no GNU inline
		// functions, only macros and types.
		p.macros["__STDC_VERSION__"] = &macro{body: "199901L"}
		p.macros["__STRICT_ANSI__"] = &macro{body: "1"}
	}
	for k, v := range opts.Defines {
		if v == "" {
			v = "1"
		}
		p.macros[k] = &macro{body: v}
	}
	for _, u := range opts.Undefs {
		delete(p.macros, u)
	}
	var out strings.Builder
	if err := p.file(name, src, &out); err != nil {
		return "", append(p.errs, err.(*Error))
	}
	if len(p.errs) > 0 {
		return "", p.errs
	}
	return out.String(), nil
}

// predefined are the macros dtrace defines for D programs.
func predefined() map[string]string {
	m := map[string]string{
		"__linux": "1", "__linux__": "1", "__unix": "1", "__SUNW_D": "1",
		"__SUNW_D_VERSION": "0x02000000", "__SUNW_D_64": "1", "__dstar": "1",
	}
	switch runtime.GOARCH {
	case "amd64":
		m["__x86_64"], m["__x86_64__"], m["__amd64"] = "1", "1", "1"
	case "arm64":
		m["__aarch64__"] = "1"
	}
	// What cpp says of the data model, which the system's headers test.
	for k, v := range map[string]string{
		"__LP64__": "1", "_LP64": "1", "__ELF__": "1", "__CHAR_BIT__": "8",
		"__SIZEOF_SHORT__": "2", "__SIZEOF_INT__": "4", "__SIZEOF_LONG__": "8",
		"__SIZEOF_LONG_LONG__": "8", "__SIZEOF_POINTER__": "8",
		"__ORDER_LITTLE_ENDIAN__": "1234", "__ORDER_BIG_ENDIAN__": "4321",
		"__BYTE_ORDER__": "__ORDER_LITTLE_ENDIAN__",
	} {
		m[k] = v
	}
	return m
}

// systemDirs are where cpp looks for <...> after the -I directories:
// the system's include directories, the multiarch one (bits/) first.
func systemDirs() []string {
	arch := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[runtime.GOARCH]
	return []string{"/usr/local/include", "/usr/include/" + arch, "/usr/include"}
}

// cond is one level of #if nesting.
type cond struct {
	taking bool   // this branch's lines are kept
	taken  bool   // some branch of this #if has been kept
	parent bool   // the enclosing level keeps lines
	line   int    // of its #if
	dir    string // the last directive of it so far: if, ifdef, elif, else...
}

func (p *pp) file(name, src string, out *strings.Builder) error {
	if p.depth > 32 {
		return &Error{name, 1, "#include nested too deeply"}
	}
	p.depth++
	defer func() { p.depth-- }()
	var stack []cond
	keeping := func() bool { return len(stack) == 0 || stack[len(stack)-1].taking }
	lines := strings.Split(src, "\n")
	if len(lines) > 1 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1] // the text after the last newline
	}
	inComment := false
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		line := lines[i]
		// Backslash-newline joins lines; keep the count with empty lines.
		joined := 0
		for strings.HasSuffix(line, "\\") && i+1 < len(lines) {
			i++
			joined++
			line = line[:len(line)-1] + lines[i]
		}
		// Comments are spaces, as to cpp: a "#" inside one (a header's
		// "   #if __GNUC_PREREQ (2,8)" example) is no directive.
		line = stripComments(line, &inComment)
		errf := func(format string, args ...any) error {
			return &Error{name, lineNo, fmt.Sprintf(format, args...)}
		}
		// report records an error the run goes on past, as cpp does.
		report := func(format string, args ...any) {
			p.errs = append(p.errs, &Error{name, lineNo, fmt.Sprintf(format, args...)})
		}
		trimmed := strings.TrimSpace(line)
		if !strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, "#!") {
			if keeping() {
				out.WriteString(p.expand(line))
			}
			out.WriteString(strings.Repeat("\n", joined+1))
			continue
		}
		dir, rest := splitDirective(trimmed[1:])
		switch dir {
		case "if", "ifdef", "ifndef":
			c := cond{parent: keeping(), line: lineNo, dir: dir}
			if c.parent {
				v, err := p.test(dir, rest)
				if err != nil {
					// cpp goes on as if the test were false.
					report("%v", err)
					v = false
				}
				c.taking, c.taken = v, v
			}
			stack = append(stack, c)
		case "elif", "else":
			if len(stack) == 0 {
				report("#%s without #if", dir)
				break
			}
			c := &stack[len(stack)-1]
			if c.dir == "else" {
				// Its lines are skipped, as cpp skips them.
				report("#%s after #else", dir)
				p.errs = append(p.errs, &Error{name, c.line, "the conditional began here"})
				c.taking = false
				break
			}
			c.dir = dir
			if dir == "else" {
				c.taking = c.parent && !c.taken
				c.taken = true
				break
			}
			c.taking = false
			if c.parent && !c.taken {
				v, err := p.test("if", rest)
				if err != nil {
					report("%v", err)
					v = false
				}
				c.taking, c.taken = v, v
			}
		case "endif":
			if len(stack) == 0 {
				report("#endif without #if")
				break
			}
			stack = stack[:len(stack)-1]
		default:
			if !keeping() {
				break
			}
			switch dir {
			case "define":
				if err := p.define(rest); err != nil {
					report("%v", err)
				}
			case "undef":
				delete(p.macros, strings.TrimSpace(rest))
			case "include":
				text, path, err := p.include(name, strings.TrimSpace(rest))
				if err != nil {
					return errf("%v", err)
				}
				if p.opts.Included != nil {
					p.opts.Included(p.depth, path)
				}
				var inc strings.Builder
				if err := p.file(path, text, &inc); err != nil {
					return err
				}
				// Only the lines that hold something: a header's
				// directives and comments must not move the including
				// file's lines (errors name them).
				var kept []string
				for _, l := range strings.Split(inc.String(), "\n") {
					if strings.TrimSpace(l) != "" {
						kept = append(kept, l)
					}
				}
				out.WriteString(strings.Join(kept, "\n"))
			case "pragma":
				out.WriteString(line)
			case "error":
				report("#error %s", strings.TrimSpace(rest))
			case "line", "ident", "":
			default:
				report("invalid preprocessing directive #%s", dir)
			}
		}
		out.WriteString(strings.Repeat("\n", joined+1))
	}
	// cpp names each open conditional's last directive, at its #if.
	for i := len(stack) - 1; i >= 0; i-- {
		p.errs = append(p.errs, &Error{name, stack[i].line, "unterminated #" + stack[i].dir})
	}
	return nil
}

// stripComments replaces the comments in a line with a space each;
// inComment carries an unfinished /* */ comment from line to line.
func stripComments(line string, inComment *bool) string {
	if !*inComment && !strings.Contains(line, "/*") && !strings.Contains(line, "//") {
		return line
	}
	var b strings.Builder
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case *inComment:
			if strings.HasPrefix(line[i:], "*/") {
				*inComment = false
				b.WriteByte(' ')
				i++
			}
		case quote != 0:
			b.WriteByte(c)
			if c == '\\' && i+1 < len(line) {
				i++
				b.WriteByte(line[i])
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
			b.WriteByte(c)
		case strings.HasPrefix(line[i:], "/*"):
			*inComment = true
			i++
		case strings.HasPrefix(line[i:], "//"):
			return b.String()
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func splitDirective(s string) (string, string) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && lexer.IsIdent(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

// define records "#define NAME body" or "#define NAME(a, b) body".
func (p *pp) define(s string) error {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && lexer.IsIdent(s[i]) {
		i++
	}
	name := s[:i]
	if s == "" {
		return fmt.Errorf("no macro name given in #define directive")
	}
	if name == "" || name[0] >= '0' && name[0] <= '9' {
		return fmt.Errorf("macro names must be identifiers")
	}
	m := &macro{}
	rest := s[i:]
	if strings.HasPrefix(rest, "(") {
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return fmt.Errorf("missing ')' in macro parameter list")
		}
		m.params = []string{}
		for _, a := range strings.Split(rest[1:end], ",") {
			if a = strings.TrimSpace(a); a != "" {
				m.params = append(m.params, a)
			}
		}
		rest = rest[end+1:]
	}
	m.body = strings.TrimSpace(rest)
	p.macros[name] = m
	return nil
}

// include finds and reads an included file: "name" beside the including
// file first, then the -I directories, then the system's; <name> in the
// -I directories, then the system's.
func (p *pp) include(from, spec string) (string, string, error) {
	if len(spec) < 2 {
		return "", "", fmt.Errorf("#include expects \"FILENAME\" or <FILENAME>")
	}
	var dirs []string
	switch {
	case spec[0] == '"' && spec[len(spec)-1] == '"':
		dirs = append([]string{filepath.Dir(from)}, p.opts.Includes...)
		dirs = append(dirs, systemDirs()...)
	case spec[0] == '<' && spec[len(spec)-1] == '>':
		dirs = append(append([]string{}, p.opts.Includes...), systemDirs()...)
	default:
		return "", "", fmt.Errorf("#include expects \"FILENAME\" or <FILENAME>")
	}
	name := spec[1 : len(spec)-1]
	for _, d := range dirs {
		path := filepath.Join(d, name)
		if b, err := os.ReadFile(path); err == nil {
			return string(b), path, nil
		}
	}
	return "", "", fmt.Errorf("cannot find include file %s", spec)
}

// test evaluates an #if, #ifdef or #ifndef condition.
func (p *pp) test(dir, rest string) (bool, error) {
	rest = strings.TrimSpace(rest)
	switch dir {
	case "ifdef":
		_, ok := p.macros[rest]
		return ok, nil
	case "ifndef":
		_, ok := p.macros[rest]
		return !ok, nil
	}
	v, err := p.eval(rest)
	return v != 0, err
}
