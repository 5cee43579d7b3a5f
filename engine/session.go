package engine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dstar-trace/dstar/dcompiler"
	"github.com/dstar-trace/dstar/engine/output"
	"github.com/dstar-trace/dstar/providers"
)

// Options configure a session; they are DTrace's -x options.
type Options struct {
	Quiet bool
	// FlowIndent is -F: probe lines indent at entry probes and unindent at
	// return probes, quiet or not.
	FlowIndent bool
	// RawBytes is -x rawbytes: trace( ) dumps a string's bytes in hex.
	RawBytes   bool
	Out        io.Writer // standard output: records, aggregations
	Err        io.Writer // standard error: faults, drops
	Prog       string    // the name messages are prefixed with ("dstar")
	SwitchRate time.Duration
	// StatusRate is -x statusrate: as in dtrace, exit() is acted on at
	// the next status check, a multiple of it after the session began
	// (0: at once).
	StatusRate time.Duration
	// AggRate is -x aggrate: when set, printa( ) in a clause prints the
	// aggregations as last read, every AggRate (0: as they are now).
	AggRate   time.Duration
	SpecSize  int  // bytes a speculation may hold (-x specsize)
	PrintSize int  // -x printsize: how much of a value print( ) shows
	JSON      bool // one JSON object per line (-x outputformat=json)
	// AggSort orders aggregation rows (-x aggsortkey, aggsortrev,
	// aggsortkeypos); the zero value sorts by value.
	AggSort output.SortOptions
	// AggPerCPU prints each CPU's part of an aggregation's rows too.
	AggPerCPU bool
	// Folded prints stack-keyed aggregations as folded stacks (-x
	// stackfmt=folded), one line each, for flame graph tools.
	Folded bool
	// NoInline is -x noinline: user stacks show only the functions that
	// were called, not those the compiler inlined into them.
	NoInline bool
	// OnCPU, with CPU, is -x cpu: BEGIN, END and ERROR run on that CPU,
	// and so do tick-N and profile-N. (The program, compiled with the
	// same option, records nothing on other CPUs.)
	OnCPU bool
	CPU   int
	// SkipRefused (-x skiprefused) enables the probes the kernel accepts
	// and skips, with a warning saying how many and why, those it
	// refuses; without it a refusal fails the enabling.
	SkipRefused bool
	// Release, when set, is handed the files whose close only waits on
	// the kernel's clean-up, once nothing fires from them (the perf
	// events of tracepoints: about 27 ms each, one after another): the
	// caller closes them when it pleases. Unset, they are closed here.
	Release func([]*os.File)
	// OnEvent, when set, receives every event instead of it being printed.
	OnEvent func(*Event)
}

// Session is a tracing session: the enablings it runs and where their
// output goes.
type Session struct {
	opts Options

	mu        sync.Mutex // serialises output and enabling changes
	firstOut  io.Writer  // where output went before freopen()
	outFile   *os.File   // the file freopen() opened, if any
	enablings []*Enabling
	headerOut bool // the CPU/ID/FUNCTION:NAME header has been printed
	flow      flowState

	start    time.Time
	done     chan struct{} // closed when a program calls exit() or Stop is called
	doneOnce sync.Once
	status   int
	stats    Stats
	// closedCuts are the user stacks cut short by closed enablings.
	closedCuts atomic.Uint64
	// failed is set by Fail: output was lost, and the status says so.
	failed   atomic.Bool
	failOnce sync.Once
	// preload are the processes whose unwind tables each program loads
	// before its probes fire (PreloadUserStacks).
	preload []int
}

// PreloadUserStacks has every program enabled from now on load process
// pid's unwind tables before its probes start firing, so that its first
// user stacks are whole: enabled first and loaded after
// (Enabling.LoadUserStacks), stacks walked meanwhile are cut short.
func (s *Session) PreloadUserStacks(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.preload, pid) {
		s.preload = append(s.preload, pid)
	}
}

// Stats counts what a session's programs produced.
type Stats struct {
	Records uint64 // output records delivered
	Drops   uint64 // records and aggregation updates lost
	Errors  uint64 // run-time faults
	// UStackCuts counts the user stacks cut short, each ending in a
	// marker frame: code in no file, or whose table was not loaded
	// yet; no unwind rule; a word of the stack unreadable.
	UStackCuts uint64
}

// Stats returns the session's counts so far.
func (s *Session) Stats() Stats {
	enablings := s.Enablings()
	s.mu.Lock()
	st := s.stats
	s.mu.Unlock()
	st.UStackCuts = s.closedCuts.Load()
	for _, e := range enablings {
		st.UStackCuts += e.ustackCuts()
	}
	return st
}

// NewSession makes a session.
func NewSession(opts Options) *Session {
	if opts.Out == nil {
		opts.Out = os.Stdout
	}
	if opts.Err == nil {
		opts.Err = os.Stderr
	}
	if opts.Prog == "" {
		opts.Prog = "dstar"
	}
	if opts.SwitchRate == 0 {
		opts.SwitchRate = 10 * time.Millisecond
	}
	// A period of a few nanoseconds (a bare switchrate=10 is 10 ns) would
	// make the consumer spin: a millisecond is as often as it reads.
	opts.SwitchRate = max(opts.SwitchRate, time.Millisecond)
	opts.PrintSize = PrintSize(opts.PrintSize)
	if opts.SpecSize == 0 {
		opts.SpecSize = 4 << 10
	}
	return &Session{opts: opts, start: time.Now(), done: make(chan struct{})}
}

// Done is closed when tracing should stop: a program called exit(), or
// Stop was called.
func (s *Session) Done() <-chan struct{} { return s.done }

// Status is the exit status a program asked for with exit(n).
func (s *Session) Status() int {
	if s.failed.Load() {
		return 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Stop asks the session to stop, as exit() would.
func (s *Session) Stop() { s.finish(-1) }

// Fail reports err (once: later calls are ignored) and stops tracing
// with status 1, as dtrace does when its output cannot be written. It
// takes no lock that output holds, so a writer may call it.
func (s *Session) Fail(err error) {
	s.failOnce.Do(func() {
		s.failed.Store(true)
		s.warnf("%v", err)
		s.finish(-1)
	})
}

// finish records an exit( ) status and stops tracing. The last exit( )
// read decides the status, as in dtrace: END's exit(0) after BEGIN's
// exit(1) exits 0.
// PrintSize is what dtrace makes of -x printsize n (0: not set): at most
// 64 KiB, 8 KiB by default, in whole 8-byte words.
func PrintSize(n int) int {
	if n <= 0 || n > 65536 {
		n = 8192
	}
	return (n + 7) &^ 7
}

// exited acts on a program's exit(status) at the next status check.
func (s *Session) exited(status int) {
	if r := s.opts.StatusRate; r > 0 {
		wait := r - time.Since(s.start)%r
		time.AfterFunc(wait, func() { s.finish(status) })
		return
	}
	s.finish(status)
}

func (s *Session) finish(status int) {
	if status >= 0 {
		s.mu.Lock()
		s.status = status
		s.mu.Unlock()
	}
	s.doneOnce.Do(func() { close(s.done) })
}

// Enable loads prog, attaches its probes, fires BEGIN, and starts
// consuming its records. On error nothing stays attached or loaded.
func (s *Session) Enable(prog *dcompiler.Program, reg *providers.Registry) (*Enabling, error) {
	if prog.Code.BufTooSmall {
		return nil, errors.New("Enabling exceeds size of buffer")
	}
	e, err := load(s, prog, reg)
	if err != nil {
		return nil, err
	}
	if err := e.attach(); err != nil {
		e.Close()
		return nil, err
	}
	preloadSymbols(prog.Code)
	s.mu.Lock()
	s.enablings = append(s.enablings, e)
	preload := slices.Clone(s.preload)
	s.mu.Unlock()
	// Attached but gated until BEGIN: no stack is walked yet. A file
	// that cannot be read only cuts the stacks through it.
	for _, pid := range preload {
		e.LoadUserStacks(pid)
	}
	if err := e.begin(); err != nil {
		s.remove(e)
		e.Close()
		return nil, err
	}
	return e, nil
}

func (s *Session) remove(e *Enabling) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.enablings {
		if x == e {
			s.enablings = append(s.enablings[:i], s.enablings[i+1:]...)
			return
		}
	}
}

// Detach fires e's END clauses and releases its kernel objects; its last
// aggregation values stay readable through e.Snapshot.
func (s *Session) Detach(e *Enabling) error {
	err := e.Disable()
	s.remove(e)
	if cerr := e.Close(); err == nil {
		err = cerr
	}
	return err
}

// Enablings returns the session's enablings in the order they were made.
func (s *Session) Enablings() []*Enabling {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Enabling(nil), s.enablings...)
}

// Close disables every enabling that is still running (firing its END),
// and releases every kernel object the session holds.
func (s *Session) Close() error {
	var errs []error
	for _, e := range s.Enablings() {
		if err := e.Disable(); err != nil {
			errs = append(errs, err)
		}
	}
	var wg sync.WaitGroup
	for _, e := range s.Enablings() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.Close()
		}()
		s.remove(e)
	}
	wg.Wait()
	if s.outFile != nil {
		s.outFile.Close()
	}
	return errors.Join(errs...)
}

// deliver prints or hands on an event. It is called with s.mu held.
func (s *Session) deliver(ev *Event) {
	switch ev.Kind {
	case KindDrop:
		s.stats.Drops += ev.Count
	case KindError:
		s.stats.Errors++
	default:
		s.stats.Records++
	}
	if s.opts.OnEvent != nil {
		s.opts.OnEvent(ev)
		return
	}
	if s.opts.JSON {
		writeJSON(s.opts.Out, ev)
		return
	}
	w := s.opts.Out
	if ev.Stderr {
		w = s.opts.Err
	}
	io.WriteString(w, ev.Text)
}

// warnf prints a message prefixed with the program's name on stderr.
func (s *Session) warnf(format string, args ...any) {
	fmt.Fprintf(s.opts.Err, "%s: %s\n", s.opts.Prog, fmt.Sprintf(format, args...))
}
