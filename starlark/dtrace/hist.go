package dtrace

import (
	"fmt"
	"strings"

	"go.starlark.net/starlark"

	"github.com/dstar-trace/dstar/engine"
	"github.com/dstar-trace/dstar/engine/output"
)

// Histogram is the value of a quantize, lquantize or llquantize
// aggregation: .buckets lists (value, count) for the buckets that counted
// something; str() draws DTrace's table.
type Histogram struct {
	buckets []starlark.Tuple
	table   string
}

// newHistogram makes the value of one row of a distribution aggregation.
func newHistogram(a *engine.AggData, r *engine.AggRow) *Histogram {
	label := a.Layout.BucketValue()
	h := &Histogram{}
	for i, n := range r.Buckets {
		if n != 0 {
			h.buckets = append(h.buckets, starlark.Tuple{starlark.MakeInt64(label(i)), starlark.MakeInt64(n)})
		}
	}
	var b strings.Builder
	one := a.Output(0)
	one.Name = ""
	for _, row := range one.Rows {
		if fmt.Sprint(row.Keys) == fmt.Sprint(r.Keys) {
			one.Rows = []output.Row{row}
			break
		}
	}
	for i := range one.Rows {
		one.Rows[i].Keys = nil
	}
	output.WriteAgg(&b, one)
	h.table = strings.TrimRight(strings.TrimPrefix(b.String(), "\n"), "\n")
	return h
}

var _ starlark.HasAttrs = (*Histogram)(nil)

func (h *Histogram) String() string        { return h.table }
func (h *Histogram) Type() string          { return "dtrace.histogram" }
func (h *Histogram) Freeze()               {}
func (h *Histogram) Truth() starlark.Bool  { return len(h.buckets) > 0 }
func (h *Histogram) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: dtrace.histogram") }
func (h *Histogram) AttrNames() []string   { return []string{"buckets", "count"} }

func (h *Histogram) Attr(name string) (starlark.Value, error) {
	switch name {
	case "buckets":
		out := make([]starlark.Value, len(h.buckets))
		for i, b := range h.buckets {
			out[i] = b
		}
		return starlark.NewList(out), nil
	case "count":
		var n int64
		for _, b := range h.buckets {
			c, _ := starlark.AsInt32(b[1])
			n += int64(c)
		}
		return starlark.MakeInt64(n), nil
	}
	return nil, nil
}
