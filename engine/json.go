package engine

import (
	"encoding/json"
	"io"

	"github.com/dstar-trace/dstar/dcompiler/printf"
	"github.com/dstar-trace/dstar/engine/output"
)

// This file writes the JSON output format (-x outputformat=json): one
// object per line for every record, drop, error and, at exit, aggregation.

// jsonEvent is an event as a JSON line.
type jsonEvent struct {
	Type      string `json:"type"`
	Probe     string `json:"probe,omitempty"`
	CPU       *int   `json:"cpu,omitempty"`
	PID       *int   `json:"pid,omitempty"`
	Timestamp uint64 `json:"timestamp,omitempty"`
	Values    []any  `json:"values,omitempty"`
	Text      string `json:"text,omitempty"`
	Status    *int   `json:"status,omitempty"`
	Count     uint64 `json:"count,omitempty"`
}

// writeJSON writes ev as one line of JSON.
func writeJSON(w io.Writer, ev *Event) {
	j := jsonEvent{Type: string(ev.Kind), Timestamp: ev.Timestamp, Text: ev.Text, Count: ev.Count}
	if ev.Kind == KindProbe {
		j.Type, j.Text = "probe", ""
	}
	if ev.Probe != nil {
		j.Probe = ev.Probe.String()
		j.CPU, j.PID = &ev.CPU, &ev.PID
	}
	for _, v := range ev.Values {
		j.Values = append(j.Values, jsonValue(v))
	}
	if ev.Kind == KindExit {
		j.Status = &ev.Status
		j.Text = ""
	}
	b, _ := json.Marshal(j)
	w.Write(append(b, '\n'))
}

func jsonValue(v printf.Value) any {
	switch v.Kind {
	case printf.StringValue, printf.SymbolValue:
		return v.Str
	case printf.FloatValue:
		return v.Float
	case printf.StackValue:
		return v.Frames
	}
	if v.Signed {
		return v.Int64()
	}
	return v.Uint64()
}

// jsonAgg is an aggregation as a JSON line.
type jsonAgg struct {
	Type     string       `json:"type"`
	Name     string       `json:"name"`
	Function string       `json:"function"`
	Rows     []jsonAggRow `json:"rows"`
}

type jsonAggRow struct {
	Keys    []any      `json:"keys"`
	Value   *int64     `json:"value,omitempty"`
	Buckets [][2]int64 `json:"buckets,omitempty"` // (value, count) of buckets that counted
}

// WriteAggregationsJSON writes each aggregation as one JSON line, rows
// sorted as the text output sorts them.
func (e *Enabling) WriteAggregationsJSON(w io.Writer) error {
	snap, err := e.Snapshot()
	if err != nil {
		return err
	}
	for _, a := range snap.Aggs {
		if e.printed[a.Name()] {
			continue
		}
		l := a.Layout
		label := l.BucketValue()
		out := e.output(a)
		j := jsonAgg{Type: "aggregation", Name: "@" + a.Name(), Function: string(l.Func), Rows: []jsonAggRow{}}
		for _, r := range output.Sorted(out) {
			row := jsonAggRow{Keys: []any{}}
			for _, k := range r.Keys {
				row.Keys = append(row.Keys, jsonValue(k))
			}
			if r.Buckets != nil {
				for i, n := range r.Buckets {
					if n != 0 {
						row.Buckets = append(row.Buckets, [2]int64{label(i), n})
					}
				}
			} else {
				v := output.RowValue(out, &r)
				row.Value = &v
			}
			j.Rows = append(j.Rows, row)
		}
		b, _ := json.Marshal(j)
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	return nil
}
