// This file gives scripts Prometheus metrics from aggregations:
// dtrace.export. The metrics are the host's; `dstar serve` serves them.

package dtrace

import (
	"fmt"
	"slices"
	"strings"

	"go.starlark.net/starlark"

	"github.com/dstar-trace/dstar/dcompiler/codegen"
	"github.com/dstar-trace/dstar/engine"
	"github.com/dstar-trace/dstar/engine/metrics"
)

// MetricSet returns the metrics the script exports, made on first use.
func (h *Host) MetricSet() *metrics.Set {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.Metrics == nil {
		h.Metrics = &metrics.Set{}
	}
	return h.Metrics
}

// exportFn is dtrace.export(s, agg, name=, help=, labels=, max_series=,
// interval=).
func exportFn(h *Host, th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var s *Session
	var agg, name, help string
	var labels *starlark.List
	var maxSeries int
	var interval starlark.Value = starlark.None
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "session", &s, "agg", &agg, "name", &name,
		"help?", &help, "labels?", &labels, "max_series?", &maxSeries, "interval?", &interval); err != nil {
		return nil, err
	}
	spec := metrics.Spec{Agg: strings.TrimPrefix(agg, "@"), Name: name, Help: help, MaxSeries: maxSeries}
	if !strings.HasPrefix(agg, "@") {
		return nil, fmt.Errorf("%s: aggregation %q: want its name with '@' (\"@\", \"@lat\")", b.Name(), agg)
	}
	if labels != nil {
		for i := range labels.Len() {
			l, ok := starlark.AsString(labels.Index(i))
			if !ok {
				return nil, fmt.Errorf("%s: labels: want strings, not %s", b.Name(), labels.Index(i).Type())
			}
			spec.Labels = append(spec.Labels, l)
		}
	}
	if interval != starlark.None {
		d, err := duration(interval)
		if err != nil {
			return nil, fmt.Errorf("%s: interval: %v", b.Name(), err)
		}
		spec.Interval = d
	}
	// The layout comes from a program that has the aggregation: the
	// metric's kind and labels are checked now, not at the first scrape.
	var layout *engine.AggData
	for _, e := range s.allEnablings() {
		a, err := e.en.Aggregation(spec.Agg)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", b.Name(), err)
		}
		if a != nil {
			layout = a
			break
		}
	}
	if layout == nil {
		return nil, fmt.Errorf("%s: no program of the session has aggregation %s (attach it first)", b.Name(), agg)
	}
	m, err := metrics.New(spec, layout.Layout, s.aggSource(layout.Layout))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	if err := h.MetricSet().Add(m); err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	return starlark.None, nil
}

// allEnablings returns the session's enablings, detached ones included.
func (s *Session) allEnablings() []*Enabling {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Enabling(nil), s.enablings...)
}

// aggSource reads the aggregation laid out as l from every program of
// the session that has one like it: a program attached after the export
// feeds the same metric, and a detached one keeps its last values.
func (s *Session) aggSource(l *codegen.AggLayout) metrics.Source {
	return func() (*engine.AggData, error) {
		var out *engine.AggData
		for _, e := range s.allEnablings() {
			a, err := e.en.Aggregation(l.Name)
			if err != nil {
				return nil, err
			}
			if a == nil || !sameShape(a.Layout, l) {
				continue
			}
			if out == nil {
				out = &engine.AggData{Layout: a.Layout}
			}
			out.Rows = append(out.Rows, a.Rows...)
			out.Capacity += a.Capacity
		}
		return out, nil
	}
}

// sameShape says whether two programs' aggregations export as one metric:
// the same function, parameters and number of keys.
func sameShape(a, b *codegen.AggLayout) bool {
	return a.Func == b.Func && len(a.Keys) == len(b.Keys) && a.Buckets == b.Buckets && slices.Equal(a.Params, b.Params)
}
