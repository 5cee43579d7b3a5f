// Package source holds D source text and renders positions in it.
//
// Positions are byte offsets into a File; they are turned into line and
// column only when an error is shown, by the one renderer every stage of the
// compiler shares, so that every message points at the source the same way.
package source

import (
	"fmt"
	"sort"
	"strings"
)

// Pos is a byte offset into a File's text. NoPos means unknown.
type Pos int

// NoPos is the position of something that has no place in the source.
const NoPos Pos = -1

// File is a named D source text.
type File struct {
	Name  string // as the user gave it: "x.d", or "" for -n descriptions
	Text  string
	lines []int // offsets of line starts, built on first use

	// Library says the file is one of the D library's, which every
	// program is compiled with.
	Library bool
}

// NewFile returns a File for text called name.
func NewFile(name, text string) *File { return &File{Name: name, Text: text} }

// Position is a Pos resolved to 1-based line and column (column in bytes).
type Position struct {
	Line, Col int
}

// Position resolves p. Offsets past the end resolve to the end.
func (f *File) Position(p Pos) Position {
	if f.lines == nil {
		f.lines = []int{0}
		for i := 0; i < len(f.Text); i++ {
			if f.Text[i] == '\n' {
				f.lines = append(f.lines, i+1)
			}
		}
	}
	off := int(p)
	if off < 0 {
		off = 0
	}
	if off > len(f.Text) {
		off = len(f.Text)
	}
	i := sort.Search(len(f.lines), func(i int) bool { return f.lines[i] > off }) - 1
	return Position{Line: i + 1, Col: off - f.lines[i] + 1}
}

// LineText returns the text of 1-based line n without its newline.
func (f *File) LineText(n int) string {
	f.Position(0)
	if n < 1 || n > len(f.lines) {
		return ""
	}
	start := f.lines[n-1]
	end := len(f.Text)
	if n < len(f.lines) {
		end = f.lines[n] - 1
	}
	return f.Text[start:end]
}

// Error is a compile error at a position in a file.
type Error struct {
	File *File
	Pos  Pos
	Tag  string // DTrace's error tag, e.g. "D_SYNTAX"
	Msg  string
	// Region is where in a clause a semantic error was found: "predicate"
	// or "action list". dtrace(1) names it for programs given as strings
	// (-n), which have no useful line numbers.
	Region string
	// NoLine says dtrace reports this error without a line (as it does
	// its code generator's): Error gives the message alone, and the
	// excerpt still shows where.
	NoLine bool
	// LineAt, when set, is where the message's line is taken from
	// instead of Pos: DTrace numbers an operator's error by the token
	// its parser had read when it reduced the operator. 0 when unset.
	LineAt Pos
}

// Errorf makes an Error at p.
func Errorf(f *File, p Pos, tag, format string, args ...any) *Error {
	return &Error{File: f, Pos: p, Tag: tag, Msg: fmt.Sprintf(format, args...)}
}

// Line is the error's 1-based line.
func (e *Error) Line() int {
	if e.Pos == NoPos || e.File == nil {
		return 0
	}
	if e.LineAt > 0 && e.LineAt != NoPos {
		return e.File.Position(e.LineAt).Line
	}
	return e.File.Position(e.Pos).Line
}

// Error renders DTrace's form: "line N: message".
func (e *Error) Error() string {
	if e.Line() == 0 || e.NoLine {
		return e.Msg
	}
	return fmt.Sprintf("line %d: %s", e.Line(), e.Msg)
}

// InRegion returns e's message as dtrace(1) prints it for -n programs:
// "in action list: message", or just the message without a region.
func (e *Error) InRegion() string {
	if e.Region == "" {
		return e.Msg
	}
	return "in " + e.Region + ": " + e.Msg
}

// Excerpt renders where the error is: "file:line:col", the source line, and
// a caret under the column. Tabs in the line are kept so the caret lines up.
// excerptSide is how much of a long line Excerpt shows either side of the
// error.
const excerptSide = 60

func (e *Error) Excerpt() string {
	if e.File == nil || e.Pos == NoPos {
		return ""
	}
	pos := e.File.Position(e.Pos)
	name := e.File.Name
	if name == "" {
		name = "<command line>"
	}
	line := e.File.LineText(pos.Line)
	col := pos.Col
	if len(line) > 2*excerptSide+20 {
		// A generated line may be megabytes long: show the part around
		// the error.
		from, to := max(0, col-1-excerptSide), min(len(line), col-1+excerptSide)
		cut := line[from:to]
		if from > 0 {
			cut = "..." + cut
			col += 3 - from
		}
		if to < len(line) {
			cut += "..."
		}
		line = cut
	}
	var caret strings.Builder
	for i := 0; i < col-1 && i < len(line); i++ {
		if line[i] == '\t' {
			caret.WriteByte('\t')
		} else {
			caret.WriteByte(' ')
		}
	}
	caret.WriteByte('^')
	return fmt.Sprintf("%s:%d:%d:\n\t%s\n\t%s", name, pos.Line, pos.Col, line, caret.String())
}
