// This file defines the error values of the package and their DTrace wording.

package printf

import "fmt"

// Error is a format or argument error, worded as DTrace words it.
type Error struct {
	// Tag is DTrace's error tag (dt_errtags.h), e.g. "D_SYNTAX" or
	// "D_PRINTF_ARG_TYPE"; dtrace prints it as "[TAG] " under -xerrtags.
	Tag string
	// Msg is the message without the "line N: " prefix and without a
	// trailing newline. Some messages span several lines.
	Msg string
}

func (e *Error) Error() string { return e.Msg }

func errorf(tag, format string, args ...any) *Error {
	return &Error{Tag: tag, Msg: fmt.Sprintf(format, args...)}
}

// ErrMismatch is returned by Fprint when the values do not fit the format:
// too few of them, or a value of the wrong kind for %s. It carries the text
// of DTrace's EDT_DMISMATCH.
var ErrMismatch = &Error{Tag: "EDT_DMISMATCH", Msg: "Data record list does not match statement"}
