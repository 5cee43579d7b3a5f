// This file gives scripts pprof profiles of stack-keyed aggregations:
// dtrace.pprof.

package dtrace

import (
	"bytes"
	"fmt"
	"os"

	"go.starlark.net/starlark"

	"github.com/dstar-trace/dstar/engine/pprof"
	"github.com/dstar-trace/dstar/engine/sink"
)

// pprofFn is dtrace.pprof(s, "@agg", path=None, name=None, type=, unit=,
// labels=[]) or dtrace.pprof(agg, path, ...) with an aggregation as
// s.aggregations() gives it (frames as text only: no addresses or build
// IDs).
func pprofFn(h *Host, th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var first, second starlark.Value
	var path, name string
	typ, unit := "samples", "count"
	var labels *starlark.List
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "agg", &first, "what?", &second,
		"path?", &path, "name?", &name, "type?", &typ, "unit?", &unit, "labels?", &labels); err != nil {
		return nil, err
	}
	var names []string
	if labels != nil {
		for i := range labels.Len() {
			l, ok := starlark.AsString(labels.Index(i))
			if !ok {
				return nil, fmt.Errorf("%s: labels: want strings, not %s", b.Name(), labels.Index(i).Type())
			}
			names = append(names, l)
		}
	}
	var samples []pprof.Sample
	switch v := first.(type) {
	case *Session:
		agg, ok := starlark.AsString(second)
		if !ok {
			return nil, fmt.Errorf("%s: after a session, want an aggregation's name (\"@stacks\")", b.Name())
		}
		var err error
		samples, err = v.profileSamples(aggName(agg), names)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", b.Name(), err)
		}
	case *starlark.Dict:
		if p, ok := starlark.AsString(second); ok && path == "" {
			path = p
		}
		var err error
		samples, err = dictSamples(v, names)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", b.Name(), err)
		}
	default:
		return nil, fmt.Errorf("%s: want a session and an aggregation's name, or an aggregation (a dict), not %s", b.Name(), first.Type())
	}
	if path == "" && name == "" {
		return nil, fmt.Errorf("%s: give path= (a file to write) or name= (served by dstar serve at /debug/pprof/NAME)", b.Name())
	}
	var buf bytes.Buffer
	if err := pprof.Write(&buf, samples, pprof.Type{Name: typ, Unit: unit}); err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	if path != "" {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return nil, fmt.Errorf("%s: %v", b.Name(), &sink.Error{Name: path, Err: err})
		}
	}
	if name != "" {
		h.mu.Lock()
		if h.profiles == nil {
			h.profiles = map[string][]byte{}
		}
		h.profiles[name] = buf.Bytes()
		h.mu.Unlock()
	}
	return starlark.None, nil
}

// Profile returns the latest profile the script made with name=name.
func (h *Host) Profile(name string) ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.profiles[name]
	return p, ok
}

// profileSamples reads aggregation name from the session's programs as
// samples, with the stacks' addresses.
func (s *Session) profileSamples(name string, labels []string) ([]pprof.Sample, error) {
	var out []pprof.Sample
	found := false
	for _, e := range s.allEnablings() {
		a, err := e.en.Aggregation(name)
		if err != nil {
			return nil, err
		}
		if a == nil {
			continue
		}
		found = true
		ss, err := pprof.FromAgg(a, labels)
		if err != nil {
			return nil, err
		}
		out = append(out, ss...)
	}
	if !found {
		return nil, fmt.Errorf("no program of the session has aggregation @%s", name)
	}
	return out, nil
}

// dictSamples reads an aggregation as s.aggregations() gives it: stacks
// are tuples of frame strings.
func dictSamples(d *starlark.Dict, labels []string) ([]pprof.Sample, error) {
	var out []pprof.Sample
	for _, kv := range d.Items() {
		key, ok := kv[0].(starlark.Tuple)
		if !ok {
			key = starlark.Tuple{kv[0]}
		}
		n, ok := kv[1].(starlark.Int)
		v, exact := n.Int64()
		if !ok || !exact {
			return nil, fmt.Errorf("values must be counts or sums (ints), not %s", kv[1].Type())
		}
		s := pprof.Sample{Value: v}
		other := 0
		for _, k := range key {
			if t, ok := k.(starlark.Tuple); ok {
				var st pprof.Stack
				for _, f := range t {
					fs, _ := starlark.AsString(f)
					st.Frames = append(st.Frames, fs)
				}
				s.Stacks = append(s.Stacks, st)
				continue
			}
			l := pprof.Label{Key: fmt.Sprintf("key%d", other)}
			if other < len(labels) {
				l.Key = labels[other]
			}
			other++
			if i, ok := k.(starlark.Int); ok {
				l.Num, _ = i.Int64()
				l.IsNum = true
			} else if str, ok := starlark.AsString(k); ok {
				l.Str = str
			} else {
				l.Str = k.String()
			}
			s.Labels = append(s.Labels, l)
		}
		if len(s.Stacks) == 0 {
			return nil, fmt.Errorf("a key without a stack: %s", kv[0])
		}
		out = append(out, s)
	}
	return out, nil
}
