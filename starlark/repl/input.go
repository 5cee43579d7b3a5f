package repl

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strings"

	"github.com/peterh/liner"
	"golang.org/x/sys/unix"
)

// errAborted is Ctrl-C at the prompt: the input typed so far is dropped.
var errAborted = errors.New("input aborted")

// lineReader reads input a line at a time, without the newline.
type lineReader interface {
	// readLine returns the next line, io.EOF at the end of input, or
	// errAborted.
	readLine(prompt string) (string, error)
	close()
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// terminal reads the process's standard input with liner: prompts, line
// editing, completion and history.
type terminal struct {
	st      *liner.State
	history string // file, "" for none
}

func newTerminal(history string, complete liner.WordCompleter) *terminal {
	st := liner.NewLiner()
	st.SetCtrlCAborts(true)
	st.SetTabCompletionStyle(liner.TabPrints)
	st.SetWordCompleter(complete)
	if history != "" {
		if f, err := os.Open(history); err == nil {
			st.ReadHistory(f)
			f.Close()
		}
	}
	return &terminal{st: st, history: history}
}

func (t *terminal) readLine(prompt string) (string, error) {
	line, err := t.st.Prompt(prompt)
	if err == liner.ErrPromptAborted {
		return "", errAborted
	}
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(line) != "" {
		t.st.AppendHistory(line)
	}
	return line, nil
}

// close saves the history and gives the terminal back its modes.
func (t *terminal) close() {
	if t.history != "" {
		if f, err := os.OpenFile(t.history, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err == nil {
			t.st.WriteHistory(f)
			f.Close()
		}
	}
	t.st.Close()
}

// plain reads lines from a reader that is not a terminal: no prompts, no
// editing. A goroutine reads ahead so that a read can be abandoned when
// quit is closed (a signal while the REPL waits for input).
type plain struct {
	lines chan lineResult
	quit  <-chan struct{}
	done  chan struct{}
}

type lineResult struct {
	line string
	err  error
}

func newPlain(r io.Reader, quit <-chan struct{}) *plain {
	p := &plain{lines: make(chan lineResult), quit: quit, done: make(chan struct{})}
	go p.read(bufio.NewReader(r))
	return p
}

func (p *plain) read(br *bufio.Reader) {
	for {
		s, err := br.ReadString('\n')
		res := lineResult{err: err}
		if s != "" {
			// A last line without a newline is a line; the error comes
			// with the next read.
			res = lineResult{line: strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")}
		}
		select {
		case p.lines <- res:
		case <-p.done:
			return
		}
		if s == "" && err != nil {
			return
		}
	}
}

func (p *plain) readLine(string) (string, error) {
	select {
	case r := <-p.lines:
		return r.line, r.err
	case <-p.quit:
		return "", io.EOF
	}
}

func (p *plain) close() { close(p.done) }
