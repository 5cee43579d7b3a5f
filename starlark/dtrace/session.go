package dtrace

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/dstar-trace/dstar/dcompiler/printf"
	"github.com/dstar-trace/dstar/engine"
	"github.com/dstar-trace/dstar/engine/output"
)

// queueSize bounds the events waiting for the script.
const queueSize = 8192

// Session is a tracing session: dtrace.session's result.
type Session struct {
	h      *Host
	eng    *engine.Session
	events chan *engine.Event
	quiet  bool
	opts   map[string]string // the -x options given

	mu         sync.Mutex
	dropped    uint64 // events the queue had no room for, not yet reported
	queueDrops uint64 // all events the queue had no room for
	lastReport time.Time
	// handler is the on_event the script last gave run(): events that
	// arrive between runs (shown by attach, detach and close) go to it
	// too, not to the output.
	handler   starlark.Callable
	enablings []*Enabling
	closed    bool
	// watched are the processes watch() was given; watching is closed
	// with the session, ending their watches.
	watched  []int
	watching chan struct{}
}

func sessionFn(h *Host, th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("%s: options are keyword arguments (quiet=True, bufsize=\"4m\", ...)", b.Name())
	}
	s := &Session{h: h, events: make(chan *engine.Event, queueSize)}
	opts := engine.Options{Out: h.stdout(), Err: h.stderr(), Prog: h.prog(), OnEvent: s.enqueue, Release: h.Release}
	s.opts = map[string]string{}
	for _, kv := range kwargs {
		name := string(kv[0].(starlark.String))
		val := ""
		switch v := kv[1].(type) {
		case starlark.String:
			val = string(v)
		case starlark.Bool:
			val = "0"
			if v {
				val = "1"
			}
		default:
			val = v.String()
		}
		if err := engine.CheckOption(name, val); err != nil {
			return nil, fmt.Errorf("%s: %v", b.Name(), err)
		}
		s.opts[name] = val
		switch name {
		case "quiet":
			s.quiet = bool(kv[1].Truth())
			opts.Quiet = s.quiet
		case "cpu":
			opts.CPU, opts.OnCPU = engine.ParseCPU(val)
		case "stackfmt":
			opts.Folded = val == "folded"
		case "noinline":
			opts.NoInline = engine.OptionSet(s.opts, "noinline")
		case "skiprefused":
			opts.SkipRefused = engine.OptionSet(s.opts, "skiprefused")
		case "flowindent":
			opts.FlowIndent = val != "0" && val != "false"
		case "switchrate":
			d, err := duration(kv[1])
			if err != nil {
				return nil, fmt.Errorf("%s: switchrate: %v", b.Name(), err)
			}
			opts.SwitchRate = d
		}
	}
	s.eng = engine.NewSession(opts)
	h.mu.Lock()
	h.sessions = append(h.sessions, s)
	h.mu.Unlock()
	return s, nil
}

// enqueue is the engine's event callback: it runs on the readers'
// goroutines and must never block them.
func (s *Session) enqueue(ev *engine.Event) {
	select {
	case s.events <- ev:
	default:
		s.mu.Lock()
		s.dropped++
		s.queueDrops++
		s.mu.Unlock()
	}
}

var _ starlark.HasAttrs = (*Session)(nil)

func (s *Session) String() string {
	return fmt.Sprintf("<dtrace.session: %d attached>", len(s.attached()))
}
func (s *Session) Type() string          { return "dtrace.session" }
func (s *Session) Freeze()               {}
func (s *Session) Truth() starlark.Bool  { return true }
func (s *Session) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: dtrace.session") }

// sessionMethods are a session's methods; Docs documents them.
var sessionMethods = map[string]func(s *Session, th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error){
	"attach":       (*Session).attach,
	"detach":       (*Session).detachFn,
	"run":          (*Session).run,
	"wait_until":   (*Session).waitUntil,
	"aggregations": (*Session).aggregations,
	"printa":       (*Session).printa,
	"clear":        (*Session).clear,
	"trunc":        (*Session).trunc,
	"stats":        (*Session).stats,
	"close":        (*Session).closeFn,
	"watch":        (*Session).watch,
}

func (s *Session) AttrNames() []string {
	names := []string{"enablings"}
	for n := range sessionMethods {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (s *Session) Attr(name string) (starlark.Value, error) {
	if name == "enablings" {
		var out []starlark.Value
		for _, e := range s.attached() {
			out = append(out, e)
		}
		return starlark.NewList(out), nil
	}
	m, ok := sessionMethods[name]
	if !ok {
		return nil, nil
	}
	return starlark.NewBuiltin(name, func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return m(s, th, b, args, kwargs)
	}).BindReceiver(s), nil
}

func (s *Session) attached() []*Enabling {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Enabling
	for _, e := range s.enablings {
		if !e.detached {
			out = append(out, e)
		}
	}
	return out
}

func (s *Session) checkOpen(what string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%s: session is closed", what)
	}
	return nil
}

// attach compiles (if given source), loads, attaches and fires BEGIN.
func (s *Session) attach(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var what starlark.Value
	var dargs *starlark.List
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "program", &what, "args?", &dargs); err != nil {
		return nil, err
	}
	if err := s.checkOpen(b.Name()); err != nil {
		return nil, err
	}
	var prog *Program
	switch v := what.(type) {
	case *Program:
		prog = v
	case starlark.String:
		p, err := s.h.compile(th, string(v), dargs, s.opts)
		if err != nil {
			return nil, err
		}
		prog = p
	default:
		return nil, fmt.Errorf("%s: want a D program (string or dtrace.program), got %s", b.Name(), what.Type())
	}
	en, err := s.eng.Enable(prog.prog, s.h.Registry)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	e := &Enabling{s: s, prog: prog, en: en, id: len(s.enablings) + 1}
	s.mu.Lock()
	s.enablings = append(s.enablings, e)
	s.mu.Unlock()
	// What BEGIN printed is shown now, not at the next run().
	if err := s.pump(th, nil, 0, nil); err != nil {
		return nil, err
	}
	return e, nil
}

func (s *Session) detachFn(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var e *Enabling
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "enabling", &e); err != nil {
		return nil, err
	}
	return starlark.None, e.detach(th)
}

// run pumps records for a duration.
func (s *Session) run(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var dv starlark.Value = starlark.None
	var onEvent starlark.Callable
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "duration?", &dv, "on_event?", &onEvent); err != nil {
		return nil, err
	}
	limit := time.Duration(-1)
	if dv != starlark.None {
		d, err := duration(dv)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", b.Name(), err)
		}
		limit = d
	}
	return starlark.None, s.pump(th, onEvent, limit, nil)
}

// waitUntil pumps records until predicate() holds or the timeout passes.
func (s *Session) waitUntil(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pred starlark.Callable
	var tv starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "predicate", &pred, "timeout", &tv); err != nil {
		return nil, err
	}
	limit, err := duration(tv)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	held := false
	check := func() (bool, error) {
		v, err := starlark.Call(th, pred, nil, nil)
		if err != nil {
			return false, err
		}
		held = bool(v.Truth())
		return held, nil
	}
	if ok, err := check(); err != nil || ok {
		return starlark.Bool(ok), err
	}
	err = s.pump(th, nil, limit, check)
	return starlark.Bool(held), err
}

// pump delivers queued events to onEvent (or prints them) until limit
// passes (limit 0: only what is queued; negative: until exit), a program
// calls exit(), onEvent returns False, check returns true, or Ctrl-C.
func (s *Session) pump(th *starlark.Thread, onEvent starlark.Callable, limit time.Duration, check func() (bool, error)) error {
	between := false
	if onEvent != nil {
		s.handler = onEvent
	} else if limit == 0 && check == nil {
		// attach and detach show what arrived since the last run to
		// the handler that run had.
		onEvent, between = s.handler, true
	}
	if limit != 0 || check != nil {
		// Only a pump that waits is a blocking call for Ctrl-C: one
		// that drains what is queued (attach, detach) returns at once,
		// and a Ctrl-C then must cancel the script, not be lost.
		s.h.block(true)
		defer s.h.block(false)
	}
	var deadline <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s.reportQueueDrops()
		if limit == 0 {
			select {
			case ev := <-s.events:
				if stop, err := s.handle(th, ev, onEvent); err != nil || stop && !between {
					return err
				}
				continue
			default:
				return nil
			}
		}
		select {
		case ev := <-s.events:
			stop, err := s.handle(th, ev, onEvent)
			if err != nil || stop {
				return err
			}
		case <-tick.C:
		case <-deadline:
			return s.pump(th, onEvent, 0, nil)
		case <-s.h.Interrupt:
			return nil
		}
		if check != nil {
			if ok, err := check(); err != nil || ok {
				return err
			}
		}
	}
}

// handle gives one event to the script; stop reports that pumping should
// end.
func (s *Session) handle(th *starlark.Thread, ev *engine.Event, onEvent starlark.Callable) (stop bool, err error) {
	if onEvent != nil {
		v, err := starlark.Call(th, onEvent, starlark.Tuple{newEvent(ev)}, nil)
		if err != nil {
			return true, err
		}
		if v == starlark.False {
			return true, nil
		}
	} else {
		w := s.h.stdout()
		if ev.Stderr {
			w = s.h.stderr()
		}
		io.WriteString(w, ev.Text)
	}
	return ev.Kind == engine.KindExit, nil
}

// reportQueueDrops reports events the script's queue had no room for, at
// most once a second.
func (s *Session) reportQueueDrops() {
	s.mu.Lock()
	n := s.dropped
	if n > 0 && time.Since(s.lastReport) >= time.Second {
		s.dropped = 0
		s.lastReport = time.Now()
	} else {
		n = 0
	}
	s.mu.Unlock()
	if n > 0 {
		fmt.Fprintf(s.h.stderr(), "%s: %d events dropped: the script did not keep up\n", s.h.prog(), n)
	}
}

// aggregations returns {"@name": {(key, ...): value}} over the session's
// programs, detached ones included.
func (s *Session) aggregations(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	out := starlark.NewDict(4)
	s.mu.Lock()
	enablings := append([]*Enabling(nil), s.enablings...)
	s.mu.Unlock()
	for _, e := range enablings {
		snap, err := e.en.Snapshot()
		if err != nil {
			return nil, fmt.Errorf("%s: %v", b.Name(), err)
		}
		for _, a := range snap.Aggs {
			d := starlark.NewDict(len(a.Rows))
			for _, r := range a.Rows {
				key := make(starlark.Tuple, len(r.Keys))
				for i, k := range r.Keys {
					key[i] = value(k)
				}
				d.SetKey(key, aggValue(a, r))
			}
			out.SetKey(starlark.String("@"+a.Name()), d)
		}
	}
	return out, nil
}

// printa prints aggregations as dtrace(1) does at exit.
func (s *Session) printa(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var name starlark.Value = starlark.None
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "name?", &name); err != nil {
		return nil, err
	}
	var aggs []*output.Aggregation
	found := false
	s.mu.Lock()
	enablings := append([]*Enabling(nil), s.enablings...)
	s.mu.Unlock()
	for _, e := range enablings {
		snap, err := e.en.Snapshot()
		if err != nil {
			return nil, fmt.Errorf("%s: %v", b.Name(), err)
		}
		for _, a := range snap.Aggs {
			if n, ok := name.(starlark.String); ok && aggName(string(n)) != a.Name() {
				continue
			}
			found = true
			out := a.Output(e.prog.prog.Info.Opts.StrSize)
			out.Folded = s.opts["stackfmt"] == "folded"
			aggs = append(aggs, out)
		}
	}
	if n, ok := name.(starlark.String); ok && !found {
		return nil, fmt.Errorf("%s: no aggregation %s", b.Name(), string(n))
	}
	return starlark.None, output.WriteFinal(s.h.stdout(), aggs)
}

// eachAgg calls f on every live enabling that has aggregation name.
func (s *Session) eachAgg(what, name string, f func(e *engine.Enabling) error) error {
	found := false
	s.mu.Lock()
	enablings := append([]*Enabling(nil), s.enablings...)
	s.mu.Unlock()
	for _, e := range enablings {
		if e.en.HasAgg(name) {
			found = true
			if err := f(e.en); err != nil {
				return fmt.Errorf("%s: %v", what, err)
			}
		}
	}
	if !found {
		return fmt.Errorf("%s: no aggregation @%s", what, name)
	}
	return nil
}

func (s *Session) clear(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var name string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "name", &name); err != nil {
		return nil, err
	}
	n := aggName(name)
	// Unlike D's clear( ), which keeps the keys with zero values, this
	// empties the aggregation: what a script reads next is only new data.
	return starlark.None, s.eachAgg(b.Name(), n, func(e *engine.Enabling) error { return e.Trunc(n, 0) })
}

func (s *Session) trunc(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var name string
	var keep int
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "name", &name, "n", &keep); err != nil {
		return nil, err
	}
	n := aggName(name)
	return starlark.None, s.eachAgg(b.Name(), n, func(e *engine.Enabling) error { return e.Trunc(n, keep) })
}

func (s *Session) stats(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	st := s.eng.Stats()
	s.mu.Lock()
	st.Drops += s.queueDrops
	s.mu.Unlock()
	return starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{
		"records": starlark.MakeUint64(st.Records),
		"drops":   starlark.MakeUint64(st.Drops),
		"errors":  starlark.MakeUint64(st.Errors),
		// User stacks cut short (ending in a marker frame).
		"ustack_cuts": starlark.MakeUint64(st.UStackCuts),
	}), nil
}

func (s *Session) closeFn(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	s.close()
	return starlark.None, nil
}

// watch follows process pid as dstar -p does: its mappings are kept
// read while the session is open, so that its stacks are named after it
// exits, and its unwind tables are loaded by every program before its
// probes fire (now, for those already attached), so that its first user
// stacks are whole.
func (s *Session) watch(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pid int
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "pid", &pid); err != nil {
		return nil, err
	}
	if err := s.checkOpen(b.Name()); err != nil {
		return nil, err
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); pid <= 0 || err != nil {
		return nil, fmt.Errorf("%s: process %d: no such process", b.Name(), pid)
	}
	s.mu.Lock()
	if slices.Contains(s.watched, pid) {
		s.mu.Unlock()
		return starlark.None, nil
	}
	s.watched = append(s.watched, pid)
	if s.watching == nil {
		s.watching = make(chan struct{})
	}
	stop := s.watching
	s.mu.Unlock()
	engine.WatchProcess(pid, stop)
	s.eng.PreloadUserStacks(pid)
	for _, e := range s.attached() {
		e.en.LoadUserStacks(pid)
	}
	return starlark.None, nil
}

// close fires END of every attached program and releases everything.
func (s *Session) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	if s.watching != nil {
		defer close(s.watching)
	}
	s.mu.Unlock()
	for _, e := range s.attached() {
		s.eng.Detach(e.en)
		e.detached = true
	}
	s.eng.Close()
	s.flush()
	s.h.forget(s)
}

// flush prints what is queued, as the command line would: what END
// printed when the script ends without pumping again. Events meant for a
// script's handler are not printed: the script is past handling them.
func (s *Session) flush() {
	s.mu.Lock()
	s.lastReport = time.Time{}
	s.mu.Unlock()
	s.reportQueueDrops()
	if s.handler != nil {
		return
	}
	for {
		select {
		case ev := <-s.events:
			w := s.h.stdout()
			if ev.Stderr {
				w = s.h.stderr()
			}
			io.WriteString(w, ev.Text)
		default:
			return
		}
	}
}

// Enabling is a program attached to a session: attach's result.
type Enabling struct {
	s        *Session
	prog     *Program
	en       *engine.Enabling
	id       int
	detached bool
}

var _ starlark.HasAttrs = (*Enabling)(nil)

func (e *Enabling) String() string {
	state := "attached"
	if e.detached {
		state = "detached"
	}
	return fmt.Sprintf("<dtrace.enabling %d: %d probes, %s>", e.id, len(e.prog.prog.Probes()), state)
}
func (e *Enabling) Type() string          { return "dtrace.enabling" }
func (e *Enabling) Freeze()               {}
func (e *Enabling) Truth() starlark.Bool  { return true }
func (e *Enabling) Hash() (uint32, error) { return uint32(e.id), nil }
func (e *Enabling) AttrNames() []string {
	return []string{"attached", "detach", "id", "program"}
}

func (e *Enabling) Attr(name string) (starlark.Value, error) {
	switch name {
	case "id":
		return starlark.MakeInt(e.id), nil
	case "program":
		return e.prog, nil
	case "attached":
		return starlark.Bool(!e.detached), nil
	case "detach":
		return starlark.NewBuiltin("detach", func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
				return nil, err
			}
			return starlark.None, e.detach(th)
		}).BindReceiver(e), nil
	}
	return nil, nil
}

// detach fires END, releases the program's kernel objects, and shows what
// END printed.
func (e *Enabling) detach(th *starlark.Thread) error {
	if e.detached {
		return nil
	}
	e.detached = true
	if err := e.s.eng.Detach(e.en); err != nil {
		return err
	}
	return e.s.pump(th, nil, 0, nil)
}

// Event is one output record handed to on_event.
func newEvent(ev *engine.Event) *starlarkstruct.Struct {
	probe := ""
	if ev.Probe != nil {
		probe = ev.Probe.String()
	}
	vals := make([]starlark.Value, len(ev.Values))
	for i, v := range ev.Values {
		vals[i] = value(v)
	}
	kind := string(ev.Kind)
	if ev.Kind == engine.KindProbe {
		kind = "trace"
	}
	return starlarkstruct.FromStringDict(starlark.String("dtrace.event"), starlark.StringDict{
		"kind":      starlark.String(kind),
		"probe":     starlark.String(probe),
		"cpu":       starlark.MakeInt(ev.CPU),
		"pid":       starlark.MakeInt(ev.PID),
		"timestamp": starlark.MakeUint64(ev.Timestamp),
		"values":    starlark.NewList(vals),
		"text":      starlark.String(ev.Text),
	})
}

// value converts a recorded datum to Starlark.
func value(v printf.Value) starlark.Value {
	switch v.Kind {
	case printf.StringValue, printf.SymbolValue:
		return starlark.String(v.Str)
	case printf.FloatValue:
		return starlark.Float(v.Float)
	case printf.StackValue:
		// A tuple, not a list, so that a stack can be part of an
		// aggregation's key in a dict.
		frames := make(starlark.Tuple, len(v.Frames))
		for i, f := range v.Frames {
			frames[i] = starlark.String(f)
		}
		return frames
	}
	if v.Signed {
		return starlark.MakeInt64(v.Int64())
	}
	return starlark.MakeUint64(v.Uint64())
}

var _ = strconv.Itoa

// aggValue is a row's value as a script sees it: an int, or a histogram
// for the distribution functions.
func aggValue(a *engine.AggData, r *engine.AggRow) starlark.Value {
	switch a.Layout.Func {
	case "quantize", "lquantize", "llquantize":
		return newHistogram(a, r)
	case "stddev":
		return starlark.MakeUint64(output.StddevValue(int64(r.Count), r.Sum, r.SumSq, 0))
	}
	return starlark.MakeInt64(r.Value)
}
