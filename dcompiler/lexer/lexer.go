// Package lexer turns D source text into tokens.
//
// D's lexer is modal, as in DTrace: at the start of a clause the text is a
// probe description ("syscall::open*:entry", "profile-997"), in which
// characters such as '-', '*' and '?' are part of the name; inside predicates
// and action lists it is C. The parser asks for the mode it expects.
package lexer

import (
	"strconv"
	"strings"

	"github.com/dstar-trace/dstar/dcompiler/source"
)

// Kind is a token's kind.
type Kind int

const (
	EOF Kind = iota
	Ident
	Int    // integer or character constant; Val holds the value
	String // string literal; Text holds the decoded value
	Macro  // $1, $target, $$1; Text holds the name without '$'
	Agg    // @ or @name; Text holds the name without '@'
	ProbeDesc
	Pragma // a control line ("#pragma D ...", "#error ..."); Text holds what follows '#'
	Op     // operator or punctuation; Text holds it
	Sym    // a kernel symbol: `name or module`name; Text holds it as written
)

// Token is one lexical token.
type Token struct {
	Kind Kind
	Pos  source.Pos
	End  source.Pos
	Text string
	Val  uint64
	// Suffix holds an integer constant's u/l suffix letters, lower-cased.
	Suffix string
}

func (t Token) String() string {
	switch t.Kind {
	case EOF:
		return "end of input"
	case String:
		return strconv.Quote(t.Text)
	}
	return t.Text
}

// Is reports whether t is the operator or punctuation op.
func (t Token) Is(op string) bool { return t.Kind == Op && t.Text == op }

// Lexer scans one file.
type Lexer struct {
	f   *source.File
	src string
	off int
}

// New returns a lexer over f.
func New(f *source.File) *Lexer { return &Lexer{f: f, src: f.Text} }

// Offset is where the next token starts scanning.
func (l *Lexer) Offset() int { return l.off }

// Reset moves the scan position to off (for the parser's backtracking).
func (l *Lexer) Reset(off int) { l.off = off }

func (l *Lexer) errorf(off int, format string, args ...any) error {
	return source.Errorf(l.f, source.Pos(off), "D_SYNTAX", format, args...)
}

// tagErrorf is errorf with a tag of its own.
func (l *Lexer) tagErrorf(off int, tag, format string, args ...any) error {
	return source.Errorf(l.f, source.Pos(off), tag, format, args...)
}

// skipSpace skips white space and comments.
func (l *Lexer) skipSpace() error {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.off++
		case strings.HasPrefix(l.src[l.off:], "/*"):
			end := strings.Index(l.src[l.off+2:], "*/")
			// As DTrace's lexer, which is at the end of the file (or at
			// the nested opening) when it finds the fault.
			if nested := strings.Index(l.src[l.off+2:], "/*"); nested >= 0 && (end < 0 || nested < end) {
				return l.errorf(l.off+2+nested, "/* encountered inside a comment")
			}
			if end < 0 {
				return l.errorf(len(l.src), "end-of-file encountered before matching */")
			}
			l.off += end + 4
		case strings.HasPrefix(l.src[l.off:], "//"):
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.off++
			}
		default:
			return nil
		}
	}
	return nil
}

// atLineStart reports whether only blanks precede off on its line.
func (l *Lexer) atLineStart(off int) bool {
	for i := off - 1; i >= 0; i-- {
		switch l.src[i] {
		case '\n':
			return true
		case ' ', '\t':
		default:
			return false
		}
	}
	return true
}

// PeekByte returns the next byte after white space and comments, or 0 at
// the end of input. The scan position does not move.
func (l *Lexer) PeekByte() byte {
	save := l.off
	defer func() { l.off = save }()
	if l.skipSpace() != nil || l.off >= len(l.src) {
		return 0
	}
	return l.src[l.off]
}

// NextOuter scans a token at clause level: a pragma line, a probe
// description, or the punctuation ',', '/', '{' that follows descriptions.
func (l *Lexer) NextOuter() (Token, error) {
	if err := l.skipSpace(); err != nil {
		return Token{}, err
	}
	start := l.off
	if l.off >= len(l.src) {
		return Token{Kind: EOF, Pos: source.Pos(start), End: source.Pos(start)}, nil
	}
	c := l.src[l.off]
	if c == '#' && l.atLineStart(l.off) {
		return l.controlLine()
	}
	switch c {
	case ',', '/', '{', ';':
		l.off++
		return Token{Kind: Op, Pos: source.Pos(start), End: source.Pos(l.off), Text: string(c)}, nil
	}
	for l.off < len(l.src) {
		c := l.src[l.off]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == '{' || c == '/' || c == ';' {
			break
		}
		if !isDescChar(c) {
			if l.off == start {
				return Token{}, l.errorf(start, "syntax error near %q", string(c))
			}
			break
		}
		l.off++
	}
	return Token{Kind: ProbeDesc, Pos: source.Pos(start), End: source.Pos(l.off), Text: l.src[start:l.off]}, nil
}

// controlLine scans a line that starts with '#' (#pragma, #error, a
// line marker), which DTrace takes wherever a token may start; Text holds
// what follows the '#'.
func (l *Lexer) controlLine() (Token, error) {
	start := l.off
	end := strings.IndexByte(l.src[l.off:], '\n')
	if end < 0 {
		// DTrace reads a control line up to its newline.
		return Token{}, l.errorf(len(l.src), "end-of-file encountered before end of control line")
	}
	l.off += end
	text := strings.TrimSpace(l.src[start+1 : l.off])
	return Token{Kind: Pragma, Pos: source.Pos(start), End: source.Pos(l.off), Text: text}, nil
}

func isDescChar(c byte) bool {
	return IsIdent(c) || strings.IndexByte(":-*?[]!^$.+`~", c) >= 0
}

// IsIdent reports whether c may appear in an identifier (after its first
// character).
func IsIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ops lists operators, longest first so the scan is greedy.
var ops = []string{
	"<<=", ">>=", "...",
	"->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "^^",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
	"+", "-", "*", "/", "%", "&", "|", "^", "~", "!", "<", ">", "=",
	"?", ":", ",", ";", "(", ")", "[", "]", "{", "}", ".", "`",
}

// Next scans a token of C-like D text.
func (l *Lexer) Next() (Token, error) {
	if err := l.skipSpace(); err != nil {
		return Token{}, err
	}
	start := l.off
	tok := func(k Kind, text string) (Token, error) {
		return Token{Kind: k, Pos: source.Pos(start), End: source.Pos(l.off), Text: text}, nil
	}
	if l.off >= len(l.src) {
		return tok(EOF, "")
	}
	c := l.src[l.off]
	switch {
	case c == '#' && l.atLineStart(l.off):
		return l.controlLine()
	case c >= '0' && c <= '9':
		return l.number()
	case IsIdent(c):
		for l.off < len(l.src) && IsIdent(l.src[l.off]) {
			l.off++
		}
		if l.symbolAhead() {
			return l.symbol(start)
		}
		return tok(Ident, l.src[start:l.off])
	case l.symbolAhead():
		return l.symbol(start)
	case c == '`' && (l.off+1 >= len(l.src) || l.src[l.off+1] != '`' && !IsIdent(l.src[l.off+1])):
		// A lone scoping mark is a name to DTrace (one no symbol has).
		return l.symbol(start)
	case c == '"':
		s, err := l.quoted('"')
		if err != nil {
			return Token{}, err
		}
		return tok(String, s)
	case c == '\'':
		s, err := l.quoted('\'')
		if err != nil {
			return Token{}, err
		}
		if len(s) == 0 {
			return Token{}, l.tagErrorf(start, "D_CHR_NULL", "empty character constant")
		}
		if len(s) > 8 {
			return Token{}, l.tagErrorf(start, "D_CHR_OFLOW", "character constant is too long")
		}
		var v uint64
		for i := 0; i < len(s); i++ {
			v = v<<8 | uint64(s[i])
		}
		if len(s) == 1 {
			v = uint64(int64(int8(s[0])))
		}
		t, _ := tok(Int, l.src[start:l.off])
		t.Val = v
		// One character is a char; more are packed into an int (or a
		// long, past four), as C and DTrace pack them.
		if len(s) == 1 {
			t.Suffix = "char"
		}
		return t, nil
	case c == '$':
		l.off++
		if l.off < len(l.src) && l.src[l.off] == '$' {
			l.off++
		}
		for l.off < len(l.src) && IsIdent(l.src[l.off]) {
			l.off++
		}
		name := l.src[start+1 : l.off]
		if name == "" || name == "$" {
			return Token{}, l.errorf(start, "syntax error near \"$\"")
		}
		return tok(Macro, name)
	case c == '@':
		l.off++
		for l.off < len(l.src) && IsIdent(l.src[l.off]) {
			l.off++
		}
		return tok(Agg, l.src[start+1:l.off])
	}
	for _, op := range ops {
		if strings.HasPrefix(l.src[l.off:], op) {
			l.off += len(op)
			return tok(Op, op)
		}
	}
	l.off++
	return Token{}, l.errorf(start, "invalid character %q", string(c))
}

// symbolAhead reports whether a backquote and a name follow: the scoping
// mark of a kernel symbol (a user symbol's two backquotes are not taken).
func (l *Lexer) symbolAhead() bool {
	return l.off+1 < len(l.src) && l.src[l.off] == '`' && isIdentStart(l.src[l.off+1])
}

// symbol scans the rest of a kernel symbol begun at start, from its
// backquote.
func (l *Lexer) symbol(start int) (Token, error) {
	l.off++
	for l.off < len(l.src) && IsIdent(l.src[l.off]) {
		l.off++
	}
	return Token{Kind: Sym, Pos: source.Pos(start), End: source.Pos(l.off), Text: l.src[start:l.off]}, nil
}

func isDigit(c byte) bool     { return c >= '0' && c <= '9' }
func isHexLetter(c byte) bool { return c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isIdentStart(c byte) bool { return IsIdent(c) && (c < '0' || c > '9') }

// number scans an integer constant: decimal, octal (leading 0) or hex, with
// any of the u, l, ul, ll, ull suffixes in either case.
func (l *Lexer) number() (Token, error) {
	start := l.off
	base := 10
	digits := l.off
	if strings.HasPrefix(l.src[l.off:], "0x") || strings.HasPrefix(l.src[l.off:], "0X") {
		base = 16
		l.off += 2
		digits = l.off
	} else if l.src[l.off] == '0' {
		base = 8
	}
	// As DTrace's lexer, the constant ends at the first character that
	// is no digit: in "10ms" an identifier follows it.
	for l.off < len(l.src) && (isDigit(l.src[l.off]) || base == 16 && isHexLetter(l.src[l.off])) {
		l.off++
	}
	text := l.src[digits:l.off]
	sufStart := l.off
	for l.off < len(l.src) && isSuffix(l.src[l.off]) {
		l.off++
	}
	suffix := strings.ToLower(l.src[sufStart:l.off])
	switch suffix {
	case "", "u", "l", "ul", "lu", "ll", "ull", "llu":
	default:
		return Token{}, l.errorf(start, "invalid integer constant suffix %q", l.src[sufStart:l.off])
	}
	if l.off < len(l.src) && l.src[l.off] == '.' {
		for l.off < len(l.src) && (IsIdent(l.src[l.off]) || l.src[l.off] == '.') {
			l.off++
		}
		return Token{}, l.errorf(start, "invalid digit in constant %s", l.src[start:l.off])
	}
	if text == "" {
		return Token{}, l.errorf(start, "invalid integer constant %s", l.src[start:l.off])
	}
	v, err := strconv.ParseUint(text, base, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return Token{}, l.tagErrorf(start, "D_INT_OFLOW", "constant %s results in integer overflow", l.src[start:l.off])
		}
		// Such as an 8 in an octal constant: DTrace names the digit.
		bad := strings.IndexFunc(text, func(r rune) bool {
			_, err := strconv.ParseUint(string(r), base, 8)
			return err != nil
		})
		if bad >= 0 && text[bad] >= '0' && text[bad] <= '9' {
			return Token{}, l.tagErrorf(start, "D_INT_DIGIT", "constant %s contains invalid digit %c", l.src[start:l.off], text[bad])
		}
		return Token{}, l.errorf(start, "invalid digit in constant %s", l.src[start:l.off])
	}
	return Token{Kind: Int, Pos: source.Pos(start), End: source.Pos(l.off), Text: l.src[start:l.off], Val: v, Suffix: suffix}, nil
}

func isSuffix(c byte) bool { return c == 'u' || c == 'U' || c == 'l' || c == 'L' }

// quoted scans a string or character literal ending in q, decoding C
// escapes.
func (l *Lexer) quoted(q byte) (string, error) {
	l.off++
	var b strings.Builder
	for {
		if l.off >= len(l.src) || l.src[l.off] == '\n' {
			// DTrace has read the newline when it finds the fault, so
			// the line it names is the next.
			at := min(l.off+1, len(l.src))
			if q == '"' {
				return "", l.tagErrorf(at, "D_STR_NL", "newline encountered in string literal")
			}
			return "", l.tagErrorf(at, "D_CHR_NL", "newline encountered in character constant")
		}
		c := l.src[l.off]
		if c == q {
			l.off++
			return b.String(), nil
		}
		if c != '\\' {
			b.WriteByte(c)
			l.off++
			continue
		}
		l.off++
		if l.off >= len(l.src) {
			continue
		}
		e := l.src[l.off]
		l.off++
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '\\', '"':
			b.WriteByte(e)
		case 'x':
			n := 0
			v := 0
			for n < 2 && l.off < len(l.src) && isHex(l.src[l.off]) {
				v = v*16 + hexVal(l.src[l.off])
				l.off++
				n++
			}
			if n == 0 {
				return "", l.errorf(l.off-2, "invalid escape sequence \\x")
			}
			b.WriteByte(byte(v))
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := int(e - '0')
			for n := 1; n < 3 && l.off < len(l.src) && l.src[l.off] >= '0' && l.src[l.off] <= '7'; n++ {
				v = v*8 + int(l.src[l.off]-'0')
				l.off++
			}
			b.WriteByte(byte(v))
		default:
			// As DTrace's stresc2chr: any other character after a
			// backslash ('\?', '\'', '\c') keeps the backslash.
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c >= 'a':
		return int(c-'a') + 10
	case c >= 'A':
		return int(c-'A') + 10
	}
	return int(c - '0')
}
