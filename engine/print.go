package engine

import (
	"io"
	"slices"

	"github.com/dstar-trace/dstar/engine/output"
)

// aggFuncs maps D's aggregating functions to the printer's.
var aggFuncs = map[string]output.Func{
	"count": output.Count, "sum": output.Sum, "avg": output.Avg, "min": output.Min,
	"max": output.Max, "stddev": output.Stddev, "quantize": output.Quantize,
	"lquantize": output.Lquantize, "llquantize": output.Llquantize,
}

// PrintAggregations prints what dtrace(1) prints when tracing stops: a
// newline, then every aggregation printa has not printed, in order of
// first use (the reverse under aggsortrev).
func (e *Enabling) PrintAggregations(w io.Writer) error {
	snap, err := e.Snapshot()
	if err != nil {
		return err
	}
	var aggs []*output.Aggregation
	for _, a := range snap.Aggs {
		if e.printed[a.Name()] {
			continue
		}
		aggs = append(aggs, e.output(a))
	}
	if e.s.opts.AggSort.Reverse {
		// dtrace sorts by aggregation first, and aggsortrev reverses
		// that too.
		slices.Reverse(aggs)
	}
	return output.WriteFinal(w, aggs)
}

// output converts an aggregation of e to the printer's form, with the
// divisor normalize() set.
func (e *Enabling) output(a *AggData) *output.Aggregation {
	out := a.Output(e.Prog.Info.Opts.StrSize)
	out.Sort = e.s.opts.AggSort
	out.Folded = e.s.opts.Folded
	e.stateMu.Lock()
	out.Normal = e.normal[a.Name()]
	e.stateMu.Unlock()
	return out
}

// setNormal records normalize()'s divisor for an aggregation (0: none).
func (e *Enabling) setNormal(name string, n uint64) {
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	if e.normal == nil {
		e.normal = map[string]uint64{}
	}
	e.normal[name] = n
}

// Output converts merged data to the printer's form.
func (a *AggData) Output(strsize int) *output.Aggregation {
	out := &output.Aggregation{
		Name: a.Name(), Func: aggFuncs[string(a.Layout.Func)], StrSize: strsize,
		Lquantize: a.Layout.Lquantize(), Llquantize: a.Layout.Llquantize(),
	}
	for _, r := range a.Rows {
		o := outputRow(r)
		for _, pc := range r.PerCPU {
			o.PerCPU = append(o.PerCPU, output.CPURow{CPU: pc.CPU, Row: outputRow(pc.Row)})
		}
		out.Rows = append(out.Rows, o)
	}
	return out
}

// outputRow converts one merged row, without its CPUs' parts.
func outputRow(r *AggRow) output.Row {
	return output.Row{
		Keys: r.Keys, Value: r.Value, Count: int64(r.Count), Sum: r.Sum,
		SumSq: r.SumSq, Buckets: r.Buckets,
	}
}
