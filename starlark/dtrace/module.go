package dtrace

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/dstar-trace/dstar/dcompiler"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/engine"
	"github.com/dstar-trace/dstar/engine/metrics"
	"github.com/dstar-trace/dstar/providers"
)

// Host is what the module needs from the program running the script.
type Host struct {
	Stdout, Stderr io.Writer
	Registry       *providers.Registry
	Args           []string // dtrace.args
	Prog           string   // name for messages ("dstar")
	// Interrupt delivers Ctrl-C to a blocking call (run, sleep,
	// wait_until), which then returns early.
	Interrupt <-chan struct{}
	// Metrics are what dtrace.export exports; `dstar serve` serves them.
	Metrics *metrics.Set
	// Release, when set, is every session's engine.Options.Release: it
	// takes the perf events a detach leaves to close.
	Release func([]*os.File)

	mu       sync.Mutex
	profiles map[string][]byte // dtrace.pprof's latest, by name=
	sessions []*Session
	blocking int // blocking calls in progress
}

// Blocking reports whether a blocking call is in progress, so that Ctrl-C
// should end it rather than cancel the script.
func (h *Host) Blocking() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.blocking > 0
}

func (h *Host) block(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if on {
		h.blocking++
	} else {
		h.blocking--
	}
}

// Close closes every session the script opened: whatever way a script
// ends, nothing stays attached.
func (h *Host) Close() {
	h.mu.Lock()
	sessions := h.sessions
	h.sessions = nil
	h.mu.Unlock()
	for _, s := range sessions {
		s.close()
	}
}

// forget drops closed session s from those Close closes: a script that
// opens a session per round would otherwise keep every round's programs
// and last aggregation values until it ends.
func (h *Host) forget(s *Session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, x := range h.sessions {
		if x == s {
			h.sessions = append(h.sessions[:i], h.sessions[i+1:]...)
			return
		}
	}
}

// Module returns the `dtrace` module.
func (h *Host) Module() *starlarkstruct.Module {
	args := make([]starlark.Value, len(h.Args))
	for i, a := range h.Args {
		args[i] = starlark.String(a)
	}
	members := starlark.StringDict{"args": starlark.NewList(args)}
	for _, f := range moduleFuncs {
		impl := f.impl
		members[f.name] = starlark.NewBuiltin("dtrace."+f.name, func(th *starlark.Thread, b *starlark.Builtin, a starlark.Tuple, kw []starlark.Tuple) (starlark.Value, error) {
			return impl(h, th, b, a, kw)
		})
	}
	return &starlarkstruct.Module{Name: "dtrace", Members: members}
}

type builtinImpl func(h *Host, th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error)

// moduleFuncs are the module's functions; Docs documents them.
var moduleFuncs = []struct {
	name string
	impl builtinImpl
}{
	{"compile", compileFn},
	{"export", exportFn},
	{"flamegraph", flamegraphFn},
	{"folded", foldedFn},
	{"pprof", pprofFn},
	{"probes", probesFn},
	{"session", sessionFn},
	{"sleep", sleepFn},
}

func compileFn(h *Host, th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var src string
	var dargs *starlark.List
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "src", &src, "args?", &dargs); err != nil {
		return nil, err
	}
	return h.compile(th, src, dargs, nil)
}

// compile compiles D source for a script. Errors carry the D line and
// column; the Starlark backtrace adds the script's call site.
func (h *Host) compile(th *starlark.Thread, src string, dargs *starlark.List, opts map[string]string) (*Program, error) {
	macros := []string{scriptName(th)}
	if dargs != nil {
		for i := 0; i < dargs.Len(); i++ {
			switch v := dargs.Index(i).(type) {
			case starlark.String:
				macros = append(macros, string(v))
			default:
				macros = append(macros, v.String())
			}
		}
	}
	f := source.NewFile("<D program>", src)
	size := func(name string, def int64) int {
		n, _ := engine.ParseSize(opts[name], def)
		return int(n)
	}
	cpu, onCPU := engine.ParseCPU(opts["cpu"])
	p, err := dcompiler.Compile([]*source.File{f}, dcompiler.Options{
		Providers: h.Registry, Macros: macros, OnCPU: onCPU, CPU: cpu,
		StrSize: size("strsize", 256), BufSize: size("bufsize", 4<<20),
		AggSize: size("aggsize", 4<<20), DynVarSize: size("dynvarsize", 1<<20),
		AllowZero: engine.OptionSet(opts, "zdefs"), DefaultArgs: engine.OptionSet(opts, "defaultargs"), ArgRef: engine.OptionSet(opts, "argref"),
		Destructive: engine.OptionSet(opts, "destructive"),
		StackFrames: size("stackframes", 0), UStackFrames: size("ustackframes", 0),
	})
	if err != nil {
		return nil, dError(err)
	}
	return &Program{prog: p, src: src}, nil
}

// dError words a compile error with where it is in the D source.
func dError(err error) error {
	se, ok := err.(*source.Error)
	if !ok {
		if u, ok := err.(interface{ Unwrap() error }); ok {
			if se2, ok := u.Unwrap().(*source.Error); ok {
				se = se2
			}
		}
	}
	if se == nil {
		return err
	}
	return fmt.Errorf("%s\n%s", se.Error(), se.Excerpt())
}

func scriptName(th *starlark.Thread) string {
	if th.CallStackDepth() > 1 {
		return th.CallFrame(th.CallStackDepth() - 1).Pos.Filename()
	}
	return "dstar"
}

func probesFn(h *Host, th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pattern string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "pattern", &pattern); err != nil {
		return nil, err
	}
	d, err := providers.ParseDesc(pattern)
	if err != nil {
		return nil, err
	}
	probes, err := h.Registry.List(d)
	if err != nil {
		return nil, err
	}
	out := make([]starlark.Value, len(probes))
	for i, p := range probes {
		out[i] = starlark.String(p.String())
	}
	return starlark.NewList(out), nil
}

func sleepFn(h *Host, th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var dv starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "duration", &dv); err != nil {
		return nil, err
	}
	d, err := duration(dv)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	h.block(true)
	defer h.block(false)
	select {
	case <-time.After(d):
	case <-h.Interrupt:
	}
	return starlark.None, nil
}

// duration reads an int or float of seconds, or a string like "500ms".
func duration(v starlark.Value) (time.Duration, error) {
	switch v := v.(type) {
	case starlark.Int:
		n, ok := v.Int64()
		if !ok {
			return 0, fmt.Errorf("duration %v out of range", v)
		}
		return time.Duration(n) * time.Second, nil
	case starlark.Float:
		return time.Duration(float64(v) * float64(time.Second)), nil
	case starlark.String:
		d, err := time.ParseDuration(string(v))
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q (want seconds, or a string such as \"500ms\" or \"2s\")", string(v))
		}
		return d, nil
	}
	return 0, fmt.Errorf("invalid duration %s (want int or float seconds, or a string such as \"2s\")", v.Type())
}

func (h *Host) stdout() io.Writer {
	if h.Stdout != nil {
		return h.Stdout
	}
	return os.Stdout
}

func (h *Host) stderr() io.Writer {
	if h.Stderr != nil {
		return h.Stderr
	}
	return os.Stderr
}

func (h *Host) prog() string {
	if h.Prog != "" {
		return h.Prog
	}
	return "dstar"
}

// Program is a compiled D program: dtrace.compile's result.
type Program struct {
	prog *dcompiler.Program
	src  string
}

var _ starlark.HasAttrs = (*Program)(nil)

func (p *Program) String() string {
	return fmt.Sprintf("<dtrace.program: %d probes>", len(p.prog.Probes()))
}
func (p *Program) Type() string          { return "dtrace.program" }
func (p *Program) Freeze()               {}
func (p *Program) Truth() starlark.Bool  { return true }
func (p *Program) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: dtrace.program") }
func (p *Program) AttrNames() []string   { return []string{"aggregations", "probes", "source"} }

func (p *Program) Attr(name string) (starlark.Value, error) {
	switch name {
	case "probes":
		var out []starlark.Value
		for _, pr := range p.prog.Probes() {
			out = append(out, starlark.String(pr.String()))
		}
		return starlark.NewList(out), nil
	case "aggregations":
		var out []starlark.Value
		for _, a := range p.prog.Info.Aggs {
			out = append(out, starlark.String("@"+a.Name))
		}
		return starlark.NewList(out), nil
	case "source":
		return starlark.String(p.src), nil
	}
	return nil, nil
}

// aggName accepts "@name", "name", "@" and "".
func aggName(s string) string { return strings.TrimPrefix(s, "@") }

// Status is what a host's sessions are doing: for an agent's reports.
type Status struct {
	Sessions int
	Probes   []string // of the attached programs, as "prov:mod:func:name"
	Stats    engine.Stats
}

// Status returns the open sessions' probes and counts.
func (h *Host) Status() Status {
	h.mu.Lock()
	sessions := append([]*Session(nil), h.sessions...)
	h.mu.Unlock()
	st := Status{Sessions: len(sessions)}
	for _, s := range sessions {
		es := s.eng.Stats()
		s.mu.Lock()
		es.Drops += s.queueDrops
		s.mu.Unlock()
		st.Stats.Records += es.Records
		st.Stats.Drops += es.Drops
		st.Stats.Errors += es.Errors
		for _, e := range s.attached() {
			for _, p := range e.prog.prog.Probes() {
				st.Probes = append(st.Probes, p.String())
			}
		}
	}
	return st
}
