// Package script runs Starlark programs against dstar: files given to
// `dstar run`, the embedded tools of `dstar tool`, and the REPL's input.
// It sets up the dialect, the predeclared modules (dtrace, json, time,
// math, struct), load() of "@stdlib//" modules and of files beside the
// script, and Ctrl-C: it ends a blocking call (run, sleep, wait_until) or
// else cancels the script.
package script

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.starlark.net/lib/json"
	"go.starlark.net/lib/math"
	startime "go.starlark.net/lib/time"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"

	"github.com/dstar-trace/dstar/engine/metrics"
	"github.com/dstar-trace/dstar/engine/sink"
	"github.com/dstar-trace/dstar/providers"
	"github.com/dstar-trace/dstar/starlark/dtrace"
	"github.com/dstar-trace/dstar/stdlib"
)

// Dialect is the Starlark dialect scripts are written in.
var Dialect = &syntax.FileOptions{
	Set: true, While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true,
}

// Options configure a run.
type Options struct {
	Stdout, Stderr io.Writer
	Args           []string // dtrace.args
	Prog           string   // name messages carry
	// StdoutName names Stdout in a write error ("" is "<stdout>").
	StdoutName string
	// Release takes the perf events the scripts' detaches leave to close
	// (engine.Options.Release); nil closes them in the detach.
	Release func([]*os.File)
}

// Runner runs Starlark code with the dtrace module, one thread at a time.
type Runner struct {
	opts      Options
	host      *dtrace.Host
	thread    *starlark.Thread
	interrupt chan struct{}
	loaded    map[string]*loadEntry
	dir       string // of the main script, for relative loads
}

type loadEntry struct {
	globals starlark.StringDict
	err     error
}

// New makes a runner.
func New(opts Options) *Runner {
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	r := &Runner{opts: opts, interrupt: make(chan struct{}, 1), loaded: map[string]*loadEntry{}}
	r.host = &dtrace.Host{
		Stdout: opts.Stdout, Stderr: opts.Stderr, Registry: providers.Default(),
		Args: opts.Args, Prog: opts.Prog, Interrupt: r.interrupt, Release: opts.Release,
	}
	r.thread = &starlark.Thread{
		Name:  "main",
		Print: func(_ *starlark.Thread, msg string) { fmt.Fprintln(opts.Stdout, msg) },
		Load:  r.load,
	}
	return r
}

// Thread is the runner's Starlark thread.
func (r *Runner) Thread() *starlark.Thread { return r.thread }

// Predeclared returns the names every script sees.
func (r *Runner) Predeclared() starlark.StringDict {
	return starlark.StringDict{
		"dtrace": r.host.Module(),
		"json":   json.Module,
		"time":   startime.Module,
		"math":   math.Module,
		"struct": starlark.NewBuiltin("struct", starlarkstruct.Make),
	}
}

// Close closes every session the scripts opened.
func (r *Runner) Close() { r.host.Close() }

// Status returns what the scripts' sessions are doing.
func (r *Runner) Status() dtrace.Status { return r.host.Status() }

// Profile returns the latest profile the scripts made with
// dtrace.pprof(..., name=name).
func (r *Runner) Profile(name string) ([]byte, bool) { return r.host.Profile(name) }

// Metrics returns what the scripts export with dtrace.export.
func (r *Runner) Metrics() *metrics.Set { return r.host.MetricSet() }

// Stop ends the script for good: the Starlark code is cancelled and a
// blocking call returns. An agent stopping a script uses it; Close then
// releases the sessions.
func (r *Runner) Stop() {
	r.thread.Cancel("stopped")
	select {
	case r.interrupt <- struct{}{}:
	default:
	}
}

// interruptGrace is how long Starlark code between blocking calls has,
// after Ctrl-C, to reach the next one (which then returns at once) before
// it is cancelled: a tool printing its report between two runs finishes
// it, and a script that computes forever is still stopped.
const interruptGrace = 500 * time.Millisecond

// Interrupt handles Ctrl-C: a blocking call returns early (the one running,
// or else the next one); code that reaches none within interruptGrace is
// cancelled. It reports whether code may be cancelled.
func (r *Runner) Interrupt() bool {
	select {
	case r.interrupt <- struct{}{}:
	default:
	}
	if r.host.Blocking() {
		return false
	}
	time.AfterFunc(interruptGrace, func() {
		if len(r.interrupt) > 0 { // no blocking call took it
			r.thread.Cancel("interrupted")
		}
	})
	return true
}

// ResetInterrupt makes the thread usable again after a cancellation (the
// REPL goes on after Ctrl-C) and forgets a pending interrupt.
func (r *Runner) ResetInterrupt() {
	r.thread.Uncancel()
	select {
	case <-r.interrupt:
	default:
	}
}

// ExecFile runs a script file (or src, when not nil) to completion.
func (r *Runner) ExecFile(filename string, src any) error {
	if r.dir == "" {
		r.dir = filepath.Dir(filename)
	}
	_, err := starlark.ExecFileOptions(Dialect, r.thread, filename, src, r.Predeclared())
	return err
}

// Check parses a script and resolves its names without running it: an
// agent refuses a script with a syntax error or an undefined name when
// it starts, naming the file, line and column.
func Check(filename string, src []byte) error {
	pre := New(Options{Stdout: io.Discard, Stderr: io.Discard}).Predeclared()
	_, _, err := starlark.SourceProgramOptions(Dialect, filename, src, func(name string) bool {
		_, ok := pre[name]
		return ok || starlark.Universe.Has(name)
	})
	return err
}

// load resolves load() statements: "@stdlib//NAME.star" from the
// embedded library, anything else relative to the main script.
func (r *Runner) load(th *starlark.Thread, module string) (starlark.StringDict, error) {
	if e, ok := r.loaded[module]; ok {
		if e == nil {
			return nil, fmt.Errorf("cycle in load graph")
		}
		return e.globals, e.err
	}
	var src []byte
	var err error
	if name, ok := strings.CutPrefix(module, "@stdlib//"); ok {
		src, err = fs.ReadFile(stdlib.FS, name)
		if err != nil {
			return nil, fmt.Errorf("no module %s in the standard library", module)
		}
	} else {
		src, err = os.ReadFile(filepath.Join(r.dir, module))
		if err != nil {
			return nil, err
		}
	}
	r.loaded[module] = nil
	child := &starlark.Thread{Name: "load " + module, Print: r.thread.Print, Load: r.load}
	globals, err := starlark.ExecFileOptions(Dialect, child, module, src, r.Predeclared())
	r.loaded[module] = &loadEntry{globals, err}
	return globals, err
}

// Run runs a script as `dstar run` does: Ctrl-C ends a blocking call or
// cancels the script (a second one leaves at once), errors print with
// their Starlark backtrace, and every session is closed at the end. A
// failed write to standard output is reported once and ends the script.
// It returns the exit status.
func Run(filename string, src any, opts Options) int {
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	prog := opts.Prog
	if prog == "" {
		prog = "dstar"
	}
	out := sink.New(opts.Stdout, opts.StdoutName, false)
	opts.Stdout = out
	r := New(opts)
	out.OnFail(func(err *sink.Error) {
		fmt.Fprintf(r.opts.Stderr, "%s: %v\n", prog, err)
		r.thread.Cancel(err.Error())
		r.Interrupt()
	})
	stop := r.catchInterrupts()
	defer stop()
	err := r.ExecFile(filename, src)
	r.Close()
	if out.Err() != nil {
		return 1 // reported, and the script's end is its consequence
	}
	if err != nil {
		PrintError(opts.Stderr, err)
		return 1
	}
	return 0
}

// catchInterrupts routes SIGINT and SIGTERM to Interrupt until stop is
// called. A second signal after a cancellation exits at once: the kernel
// releases every BPF object with the process.
func (r *Runner) catchInterrupts() (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	var once sync.Once
	go func() {
		cancelled := false
		for {
			select {
			case <-done:
				return
			case <-sigs:
				if cancelled {
					os.Exit(1)
				}
				cancelled = r.Interrupt()
			}
		}
	}()
	return func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
		})
	}
}

// PrintError prints a Starlark error with its backtrace.
func PrintError(w io.Writer, err error) {
	var evalErr *starlark.EvalError
	if errors.As(err, &evalErr) {
		fmt.Fprintln(w, evalErr.Backtrace())
		return
	}
	fmt.Fprintln(w, err)
}
