package repl

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"

	"github.com/dstar-trace/dstar/engine/sink"
	"github.com/dstar-trace/dstar/providers"
	"github.com/dstar-trace/dstar/starlark/dtrace"
	"github.com/dstar-trace/dstar/starlark/script"
)

// The prompts: for a new input, and for the lines of an incomplete one.
const (
	promptMain = "dstar> "
	promptMore = "...> "
)

// HistoryFile is where the history is kept, under the home directory.
const HistoryFile = ".dstar_history"

// Options configure a REPL.
type Options struct {
	// Stdin is what is read when Terminal is false. With Terminal, input
	// comes from the process's standard input, through liner.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Prog           string // the name messages carry ("dstar")
	// Terminal turns on prompts, line editing, completion and history.
	// Standard input and output must be a terminal.
	Terminal bool
	// History is the history file; "" is ~/.dstar_history. Only a
	// terminal keeps history.
	History string
	// StdoutName names Stdout in a write error ("" is "<stdout>").
	StdoutName string
	// Release is script.Options.Release.
	Release func([]*os.File)
}

// replDialect is the scripts' dialect, with load() binding globally as
// go.starlark.net's REPL does.
var replDialect = func() *syntax.FileOptions {
	d := *script.Dialect
	d.LoadBindsGlobally = true
	return &d
}()

// shell is one interactive session: the Starlark thread and globals, the
// input, and the REPL's tracing session (the global `session`).
type shell struct {
	opts    Options
	runner  *script.Runner
	thread  *starlark.Thread
	dtrace  *starlarkstruct.Module
	globals starlark.StringDict
	in      lineReader
	pending []string // lines read ahead, to be read again
	eof     bool     // the input ended inside an input

	mu       sync.Mutex
	busy     bool // executing, rather than waiting for input
	quit     chan struct{}
	quitOnce sync.Once

	probes     []*providers.Probe // for completion, listed once
	probesRead bool
}

// Run runs a REPL until end of input or :quit, closes every session, and
// returns the exit status: 0, or 1 when a signal ended it.
//
// Output that cannot be written is reported once and ends the REPL with
// status 1.
func Run(opts Options) int {
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	out := sink.New(opts.Stdout, opts.StdoutName, false)
	opts.Stdout = out
	r := newShell(opts)
	out.OnFail(func(err *sink.Error) {
		r.errorf("%v", err)
		r.quitOnce.Do(func() { close(r.quit) })
		r.runner.Interrupt()
	})
	stop := r.catchSignals()
	defer stop()
	r.loop()
	r.close()
	if r.quitting() {
		return 1
	}
	return 0
}

// newShell makes a REPL; close releases what it holds.
func newShell(opts Options) *shell {
	if opts.Stdin == nil {
		opts.Stdin = os.Stdin
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Prog == "" {
		opts.Prog = "dstar"
	}
	runner := script.New(script.Options{Stdout: opts.Stdout, Stderr: opts.Stderr, Prog: opts.Prog, Release: opts.Release})
	r := &shell{opts: opts, runner: runner, thread: runner.Thread(), globals: starlark.StringDict{}, quit: make(chan struct{})}
	for name, v := range runner.Predeclared() {
		r.globals[name] = v
	}
	r.dtrace = r.globals["dtrace"].(*starlarkstruct.Module)
	if opts.Terminal {
		history := opts.History
		if history == "" {
			if home, err := os.UserHomeDir(); err == nil {
				history = filepath.Join(home, HistoryFile)
			}
		}
		r.in = newTerminal(history, r.complete)
	} else {
		r.in = newPlain(opts.Stdin, r.quit)
	}
	return r
}

// loop reads and runs inputs until the end of input or :quit.
func (r *shell) loop() {
	for {
		line, err := r.next(promptMain)
		if err == errAborted {
			continue
		}
		if err != nil {
			if err != io.EOF {
				r.errorf("%v", err)
			} else if r.opts.Terminal {
				fmt.Fprintln(r.opts.Stdout)
			}
			return
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		quit := r.eval(line)
		r.pump()
		if quit || r.eof || r.quitting() {
			return
		}
	}
}

// close closes the REPL's session, showing what END printed, then every
// other session, and gives back the terminal.
func (r *shell) close() {
	defer r.in.close()
	if s := r.current(); s != nil {
		r.exec(func() {
			if _, err := r.call(s, "close"); err != nil {
				r.printError(err)
			}
		})
	}
	r.runner.Close()
}

// next returns the next input line: one read ahead, or a new one.
func (r *shell) next(prompt string) (string, error) {
	if len(r.pending) > 0 {
		line := r.pending[0]
		r.pending = r.pending[1:]
		return line, nil
	}
	return r.in.readLine(prompt)
}

// eval runs one input that starts with line, reading more lines when the
// input needs them. It reports whether the REPL should end.
func (r *shell) eval(line string) (quit bool) {
	trimmed := strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(trimmed, ":"):
		r.exec(func() { quit = r.command(trimmed[1:]) })
	case isDClause(line):
		r.evalD(line)
	case mayStartDClause(line, r.defined):
		// Whether `BEGIN` is D depends on the next line.
		next, err := r.next(promptMore)
		switch {
		case err == errAborted:
		case err == nil && opensDClause(next):
			r.evalD(line + "\n" + next)
		default:
			if err == nil {
				r.pending = append(r.pending, next)
			} else if err == io.EOF {
				r.eof = true
			}
			r.evalStarlark(line)
		}
	default:
		r.evalStarlark(line)
	}
	return quit
}

// defined reports whether Starlark code sees a name.
func (r *shell) defined(name string) bool {
	return r.globals[name] != nil || starlark.Universe[name] != nil
}

// exec runs f as code in execution: Ctrl-C interrupts it rather than the
// prompt, and leaves the thread usable afterwards.
func (r *shell) exec(f func()) {
	r.mu.Lock()
	r.busy = true
	r.mu.Unlock()
	r.runner.ResetInterrupt()
	defer func() {
		r.mu.Lock()
		r.busy = false
		r.mu.Unlock()
		r.runner.ResetInterrupt()
	}()
	f()
}

// evalD reads the rest of a D clause and attaches it to the session.
func (r *shell) evalD(first string) {
	src, err := r.readD(first)
	if err == errAborted {
		return
	}
	if err != nil {
		r.errorf("%v", err)
		return
	}
	r.exec(func() {
		s, err := r.session()
		if err != nil {
			r.printError(err)
			return
		}
		v, err := r.call(s, "attach", starlark.String(src))
		if err != nil {
			r.printCause(err)
			return
		}
		if e, ok := v.(*dtrace.Enabling); ok {
			n := len(probesOf(e))
			r.errorf("enabling %s matched %d probe%s", attr(e, "id"), n, plural(n))
		}
	})
}

// readD reads lines until the braces of the clause that starts with first
// (a line or more) balance.
func (r *shell) readD(first string) (string, error) {
	var b braces
	var src strings.Builder
	lines := strings.Split(first, "\n")
	for {
		line := lines[0]
		lines = lines[1:]
		src.WriteString(line)
		src.WriteByte('\n')
		b.feed(line)
		if b.complete() {
			return src.String(), nil
		}
		if len(lines) > 0 {
			continue
		}
		line, err := r.next(promptMore)
		if err == io.EOF {
			r.eof = true
			return "", errors.New("input ended inside a D clause")
		}
		if err != nil {
			return "", err
		}
		lines = append(lines, line)
	}
}

// evalStarlark reads a Starlark statement and runs it; an expression's
// value is printed and kept in `_`.
func (r *shell) evalStarlark(first string) {
	f, err := r.parse(first)
	if err == errAborted {
		return
	}
	if err != nil {
		r.printError(err)
		return
	}
	r.exec(func() {
		if mentions(f, "session") && r.globals["session"] == nil {
			if _, err := r.session(); err != nil {
				r.printError(err)
				return
			}
		}
		if len(f.Stmts) == 1 {
			if stmt, ok := f.Stmts[0].(*syntax.ExprStmt); ok {
				v, err := starlark.EvalExprOptions(f.Options, r.thread, stmt.X, r.globals)
				if err != nil {
					r.printError(err)
					return
				}
				r.globals["_"] = v
				if v != starlark.None {
					fmt.Fprintln(r.opts.Stdout, v)
				}
				return
			}
		}
		if err := starlark.ExecREPLChunk(f, r.thread, r.globals); err != nil {
			r.printError(err)
		}
	})
}

// compoundStart matches the first line of a compound statement.
var compoundStart = regexp.MustCompile(`^\s*(def|if|for|while)\b`)

// parse reads one Starlark statement, first and as many more lines as it
// needs. A compound statement ends at a line that starts again in the
// first column (not else or elif), which is kept for the next input, at
// the end of input, and on a terminal at a blank line. Without a terminal
// blank lines are skipped, so that a file's functions may have them.
func (r *shell) parse(first string) (*syntax.File, error) {
	compound := compoundStart.MatchString(first)
	fed := false
	var readErr error
	readline := func() ([]byte, error) {
		if !fed {
			fed = true
			return []byte(first + "\n"), nil
		}
		if r.eof {
			readErr = errors.New("<stdin>: input ended inside a statement")
			return nil, readErr
		}
		line, err := r.next(promptMore)
		for err == nil && compound && !r.opts.Terminal && strings.TrimSpace(line) == "" {
			line, err = r.next(promptMore)
		}
		switch {
		case err == io.EOF:
			r.eof = true
			return []byte("\n"), nil
		case err != nil:
			readErr = err
			return nil, err
		case compound && startsOver(line):
			r.pending = append(r.pending, line)
			return []byte("\n"), nil
		}
		return []byte(line + "\n"), nil
	}
	f, err := replDialect.ParseCompoundStmt("<stdin>", readline)
	if readErr != nil {
		return nil, readErr
	}
	return f, err
}

// startsOver reports whether a line read inside a compound statement
// begins a new statement.
func startsOver(line string) bool {
	if line == "" || line[0] == ' ' || line[0] == '\t' {
		return false
	}
	for _, p := range []string{"else", "elif", "#", ")", "]", "}"} {
		if strings.HasPrefix(line, p) {
			return false
		}
	}
	return true
}

// mentions reports whether f uses the identifier name.
func mentions(f *syntax.File, name string) bool {
	found := false
	for _, stmt := range f.Stmts {
		syntax.Walk(stmt, func(n syntax.Node) bool {
			if id, ok := n.(*syntax.Ident); ok && id.Name == name {
				found = true
			}
			return !found
		})
	}
	return found
}

// current returns the REPL's session, or nil before there is one.
func (r *shell) current() *dtrace.Session {
	s, _ := r.globals["session"].(*dtrace.Session)
	return s
}

// session returns the REPL's session, making it on first use.
func (r *shell) session() (*dtrace.Session, error) {
	if s := r.current(); s != nil {
		return s, nil
	}
	v, err := starlark.Call(r.thread, r.dtrace.Members["session"], nil, nil)
	if err != nil {
		return nil, err
	}
	if old, ok := r.globals["session"]; ok {
		r.errorf("the global session was a %s; it is now a new dtrace.session", old.Type())
	}
	r.globals["session"] = v
	return v.(*dtrace.Session), nil
}

// pump prints the records the session has queued.
func (r *shell) pump() {
	s := r.current()
	if s == nil {
		return
	}
	r.exec(func() {
		if _, err := r.call(s, "run", starlark.MakeInt(0)); err != nil {
			r.printError(err)
		}
	})
}

// call calls a method of v.
func (r *shell) call(v starlark.HasAttrs, method string, args ...starlark.Value) (starlark.Value, error) {
	m, err := v.Attr(method)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("%s has no method %s", v.Type(), method)
	}
	return starlark.Call(r.thread, m, args, nil)
}

// attr returns an attribute of v, or None.
func attr(v starlark.HasAttrs, name string) starlark.Value {
	a, err := v.Attr(name)
	if err != nil || a == nil {
		return starlark.None
	}
	return a
}

// probesOf returns the probes an enabling's program matched.
func probesOf(e *dtrace.Enabling) []string {
	prog, ok := attr(e, "program").(starlark.HasAttrs)
	if !ok {
		return nil
	}
	list, ok := attr(prog, "probes").(*starlark.List)
	if !ok {
		return nil
	}
	var out []string
	for i := 0; i < list.Len(); i++ {
		if s, ok := starlark.AsString(list.Index(i)); ok {
			out = append(out, s)
		}
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// printError prints an error, with its Starlark backtrace when it has one.
func (r *shell) printError(err error) { script.PrintError(r.opts.Stderr, err) }

// printCause prints the error of a call the REPL made for a D clause or
// a command: the message alone, as the call site is not the user's.
func (r *shell) printCause(err error) {
	var ee *starlark.EvalError
	if errors.As(err, &ee) && ee.Unwrap() != nil {
		err = ee.Unwrap()
	}
	r.errorf("%v", err)
}

// errorf prints a message prefixed with the program's name.
func (r *shell) errorf(format string, args ...any) {
	fmt.Fprintf(r.opts.Stderr, "%s: %s\n", r.opts.Prog, fmt.Sprintf(format, args...))
}

// catchSignals routes SIGINT and SIGTERM until stop is called. While code
// runs, either interrupts it (script.Runner.Interrupt). SIGTERM then ends
// the REPL; so does SIGINT while a REPL without a terminal waits for
// input (on a terminal, Ctrl-C at the prompt reaches liner as a key).
func (r *shell) catchSignals() (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				r.signal(sig)
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

func (r *shell) signal(sig os.Signal) {
	r.mu.Lock()
	busy := r.busy
	r.mu.Unlock()
	term := sig == syscall.SIGTERM
	if term || !busy && !r.opts.Terminal {
		r.quitOnce.Do(func() { close(r.quit) })
	}
	switch {
	case busy:
		r.runner.Interrupt()
	case term && r.opts.Terminal:
		// liner is waiting for a key and cannot be woken: leave now, with
		// the terminal given back and every session closed.
		r.runner.Close()
		r.in.close()
		os.Exit(1)
	}
}

// quitting reports whether a signal asked the REPL to end.
func (r *shell) quitting() bool {
	select {
	case <-r.quit:
		return true
	default:
		return false
	}
}
