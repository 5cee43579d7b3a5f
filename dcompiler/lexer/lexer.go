// Package lexer turns D source text into tokens.
//
// D's lexer is modal, as in DTrace: at the start of a clause the text is a
// probe description ("syscall::open*:entry", "profile-997"), in which
// characters such as '-', '*' and '?' are part of the name; inside predicates
// and action lists it is C. The parser asks for the mode it expects.
package lexer

import (
	"fmt"
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
	Pragma // "#pragma D ..." line; Text holds what follows "#pragma"
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

// skipSpace skips white space and comments.
func (l *Lexer) skipSpace() error {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.off++
		case strings.HasPrefix(l.src[l.off:], "/*"):
			end := strings.Index(l.src[l.off+2:], "*/")
			if end < 0 {
				return l.errorf(l.off, "end-of-file encountered before matching */")
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
		end := strings.IndexByte(l.src[l.off:], '\n')
		if end < 0 {
			end = len(l.src) - l.off
		}
		line := l.src[l.off : l.off+end]
		l.off += end
		rest := strings.TrimSpace(strings.TrimPrefix(line, "#"))
		if !strings.HasPrefix(rest, "pragma") {
			// As dtrace names it: the directive's word ("#if"), when it
			// has one.
			word := rest
			if i := strings.IndexFunc(rest, func(r rune) bool { return !IsIdent(byte(r)) }); i >= 0 {
				word = rest[:i]
			}
			if word == "" || !isIdentStart(word[0]) {
				return Token{}, source.Errorf(l.f, source.Pos(start), "D_PRAGCTL_INVAL", "invalid control directive")
			}
			return Token{}, source.Errorf(l.f, source.Pos(start), "D_PRAGCTL_INVAL", "invalid control directive: #%s", word)
		}
		return Token{Kind: Pragma, Pos: source.Pos(start), End: source.Pos(l.off), Text: strings.TrimSpace(rest[len("pragma"):])}, nil
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
			return Token{}, l.errorf(start, "invalid character constant")
		}
		if len(s) > 8 {
			return Token{}, l.errorf(start, "character constant is too long")
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
	for l.off < len(l.src) && IsIdent(l.src[l.off]) && !isSuffix(l.src[l.off]) {
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
	if l.off < len(l.src) && (IsIdent(l.src[l.off]) || l.src[l.off] == '.') {
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
			return Token{}, l.errorf(start, "integer constant %s is too large", l.src[start:l.off])
		}
		return Token{}, l.errorf(start, "invalid digit in constant %s", l.src[start:l.off])
	}
	return Token{Kind: Int, Pos: source.Pos(start), End: source.Pos(l.off), Text: l.src[start:l.off], Val: v, Suffix: suffix}, nil
}

func isSuffix(c byte) bool { return c == 'u' || c == 'U' || c == 'l' || c == 'L' }

// quoted scans a string or character literal ending in q, decoding C
// escapes.
func (l *Lexer) quoted(q byte) (string, error) {
	start := l.off
	l.off++
	var b strings.Builder
	for {
		if l.off >= len(l.src) || l.src[l.off] == '\n' {
			if q == '"' {
				return "", l.errorf(start, "newline encountered in string literal")
			}
			return "", l.errorf(start, "newline encountered in character constant")
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
		case '\\', '\'', '"', '?':
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
			return "", l.errorf(l.off-2, "invalid escape sequence %s", fmt.Sprintf("\\%c", e))
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
