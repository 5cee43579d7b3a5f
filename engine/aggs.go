package engine

import (
	"github.com/cilium/ebpf"

	"github.com/dstar-trace/dstar/dcompiler/codegen"
	"github.com/dstar-trace/dstar/dcompiler/printf"
)

// AggSnapshot is every aggregation of an enabling, merged across CPUs.
type AggSnapshot struct {
	Aggs []*AggData
}

// AggData is one aggregation's merged contents.
type AggData struct {
	Layout *codegen.AggLayout
	Rows   []*AggRow
}

// Name is the aggregation's name without '@' ("" for @).
func (a *AggData) Name() string { return a.Layout.Name }

// AggRow is one key of an aggregation and its merged value.
type AggRow struct {
	Keys  []printf.Value
	Count uint64 // updates merged into this row
	Value int64  // count(): the count; sum(): the sum
}

// Snapshot reads every aggregation map and merges the per-CPU values. After
// Disable it returns the values read then.
func (e *Enabling) Snapshot() (*AggSnapshot, error) {
	e.stateMu.Lock()
	if e.closed || (e.disabled && e.last != nil) {
		last := e.last
		e.stateMu.Unlock()
		if last == nil {
			return &AggSnapshot{}, nil
		}
		return last, nil
	}
	e.stateMu.Unlock()
	snap := &AggSnapshot{}
	for _, l := range e.Prog.Code.Aggs {
		data, err := readAgg(e.coll.Maps[l.Map], l)
		if err != nil {
			return nil, err
		}
		snap.Aggs = append(snap.Aggs, data)
	}
	return snap, nil
}

// readAgg reads and merges one aggregation map. Batched iteration keeps a
// snapshot of many keys to a few system calls.
func readAgg(m *ebpf.Map, l *codegen.AggLayout) (*AggData, error) {
	data := &AggData{Layout: l}
	var key []byte
	var vals [][]byte
	it := m.Iterate()
	for it.Next(&key, &vals) {
		row := &AggRow{}
		for _, v := range vals {
			n := ne.Uint64(v[0:])
			if n == 0 {
				continue
			}
			row.Count += n
			switch l.Func {
			case "count":
				row.Value += int64(n)
			case "sum":
				row.Value += int64(ne.Uint64(v[8:]))
			}
		}
		if row.Count == 0 {
			continue
		}
		for _, d := range l.Keys {
			row.Keys = append(row.Keys, datum(key, d))
		}
		data.Rows = append(data.Rows, row)
	}
	return data, it.Err()
}
