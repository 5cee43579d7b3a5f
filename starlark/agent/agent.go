// Package agent is `dstar serve`: a long-running agent that runs Starlark
// scripts, each in its own goroutine with its own sessions, restarts a
// script that fails (with backoff), reloads changed scripts on demand,
// and serves over HTTP what they export (Prometheus metrics), what they
// are doing (/scripts) and whether the agent is alive (/healthz). No
// endpoint compiles D, loads scripts or changes probes.
package agent

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dstar-trace/dstar/starlark/script"
)

// Config configures an agent.
type Config struct {
	// Paths are script files, or directories whose *.star files are run.
	Paths          []string
	Stdout, Stderr io.Writer // what scripts print, and the agent's log
	Prog           string    // name messages carry ("dstar")
	// BackoffMin and BackoffMax bound the wait before a failed script is
	// restarted: it doubles after each failure in a row. Zero means 1 s
	// and 1 min.
	BackoffMin, BackoffMax time.Duration
}

// Agent runs scripts.
type Agent struct {
	cfg     Config
	mu      sync.Mutex
	scripts map[string]*Script // by path
	closed  bool
}

// Script is one script the agent runs.
type Script struct {
	Path string
	hash [sha256.Size]byte
	src  []byte
	a    *Agent

	mu       sync.Mutex
	state    string // starting, running, done, failed, stopped
	err      string
	restarts int
	started  time.Time
	runner   *script.Runner
	stop     chan struct{}
	done     chan struct{}
}

// The states of a script.
const (
	StateStarting = "starting" // being started (again)
	StateRunning  = "running"  // its code is running
	StateDone     = "done"     // its code returned: its sessions stay attached and exported
	StateFailed   = "failed"   // it failed and waits to be restarted
	StateStopped  = "stopped"  // stopped by the agent
)

// New checks the configuration and reads the scripts, without starting
// them: a path that cannot be read, a directory with no scripts or a
// script that does not parse is an error naming the file (and line).
func New(cfg Config) (*Agent, error) {
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Prog == "" {
		cfg.Prog = "dstar"
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = time.Second
	}
	if cfg.BackoffMax <= 0 {
		cfg.BackoffMax = time.Minute
	}
	a := &Agent{cfg: cfg, scripts: map[string]*Script{}}
	found, err := a.scan()
	if err != nil {
		return nil, err
	}
	for _, s := range found {
		a.scripts[s.Path] = s
	}
	return a, nil
}

// scan reads every script the configured paths name.
func (a *Agent) scan() ([]*Script, error) {
	if len(a.cfg.Paths) == 0 {
		return nil, errors.New("no scripts: name script files or directories")
	}
	var files []string
	for _, p := range a.cfg.Paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		m, err := filepath.Glob(filepath.Join(p, "*.star"))
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: no *.star scripts in the directory", p)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	files = slices.Compact(files)
	var out []*Script
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := script.Check(f, src); err != nil {
			return nil, err
		}
		out = append(out, &Script{Path: f, src: src, hash: sha256.Sum256(src), a: a, state: StateStarting})
	}
	return out, nil
}

// Start starts every script.
func (a *Agent) Start() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.sorted() {
		s.start()
	}
}

// sorted returns the scripts in path order. a.mu is held.
func (a *Agent) sorted() []*Script {
	var out []*Script
	for _, s := range a.scripts {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Scripts returns the scripts the agent runs, in path order.
func (a *Agent) Scripts() []*Script {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sorted()
}

// Reload reads the scripts again: new ones start, removed ones stop, and
// changed ones restart; unchanged ones go on undisturbed. If the scripts
// cannot be read or one does not parse, nothing changes and the error
// says why.
func (a *Agent) Reload() error {
	found, err := a.scan()
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	keep := map[string]bool{}
	for _, n := range found {
		keep[n.Path] = true
		old := a.scripts[n.Path]
		if old != nil && old.hash == n.hash {
			continue
		}
		if old != nil {
			old.halt()
			n.restarts = old.Restarts()
		}
		a.scripts[n.Path] = n
		n.start()
	}
	for p, s := range a.scripts {
		if !keep[p] {
			s.halt()
			delete(a.scripts, p)
		}
	}
	return nil
}

// Close stops every script and releases what it attached.
func (a *Agent) Close() {
	a.mu.Lock()
	a.closed = true
	scripts := a.sorted()
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range scripts {
		wg.Add(1)
		go func() { defer wg.Done(); s.halt() }()
	}
	wg.Wait()
}

func (a *Agent) logf(format string, args ...any) {
	fmt.Fprintf(a.cfg.Stderr, "%s: %s\n", a.cfg.Prog, fmt.Sprintf(format, args...))
}

// start runs the script in its own goroutine.
func (s *Script) start() {
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.loop()
}

// halt stops the script and waits until its sessions are released.
func (s *Script) halt() {
	s.mu.Lock()
	stop, done := s.stop, s.done
	r := s.runner
	s.mu.Unlock()
	if stop == nil {
		return
	}
	select {
	case <-stop:
	default:
		close(stop)
	}
	if r != nil {
		r.Stop()
	}
	<-done
}

// loop runs the script until it is stopped, restarting it with backoff
// when it fails.
func (s *Script) loop() {
	defer close(s.done)
	backoff := s.a.cfg.BackoffMin
	for {
		r := script.New(script.Options{Stdout: s.a.cfg.Stdout, Stderr: s.a.cfg.Stderr, Prog: s.a.cfg.Prog})
		s.mu.Lock()
		stopped := isClosed(s.stop)
		if !stopped {
			s.runner, s.state, s.started = r, StateRunning, time.Now()
		}
		s.mu.Unlock()
		if stopped {
			s.setState(StateStopped, "")
			return
		}
		err := r.ExecFile(s.Path, s.src)
		if isClosed(s.stop) {
			r.Close()
			s.setState(StateStopped, "")
			return
		}
		if err == nil {
			// The script set up its sessions and returned: they stay
			// attached, their metrics served, until the agent stops it.
			s.setState(StateDone, "")
			<-s.stop
			r.Close()
			s.setState(StateStopped, "")
			return
		}
		r.Close()
		msg := scriptError(err)
		s.a.logf("%s failed (restarting in %v): %s", s.Path, backoff, msg)
		s.mu.Lock()
		s.state, s.err, s.runner = StateFailed, msg, nil
		s.restarts++
		s.mu.Unlock()
		select {
		case <-s.stop:
			s.setState(StateStopped, msg)
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, s.a.cfg.BackoffMax)
	}
}

func (s *Script) setState(state, err string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = state
	if err != "" || state != StateStopped {
		s.err = err
	}
	if state == StateStopped {
		s.runner = nil
	}
}

// scriptError is err as `dstar run` prints it, on one line.
func scriptError(err error) string {
	var b strings.Builder
	script.PrintError(&b, err)
	return strings.TrimSpace(b.String())
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Restarts is how many times the script failed and was started again.
func (s *Script) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Runner is the script's runner while its code runs or its sessions stay
// attached, or nil.
func (s *Script) Runner() *script.Runner {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runner
}
