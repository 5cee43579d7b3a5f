package engine

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/cilium/ebpf"

	"github.com/dstar-trace/dstar/dcompiler/codegen"
	"github.com/dstar-trace/dstar/dcompiler/printf"
	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/engine/output"
)

// AggSnapshot is every aggregation of an enabling, merged across CPUs.
type AggSnapshot struct {
	Aggs []*AggData
}

// AggData is one aggregation's merged contents.
type AggData struct {
	Layout *codegen.AggLayout
	Rows   []*AggRow
	// Capacity is how many keys the aggregation's map holds (-x aggsize):
	// beyond it updates are dropped. 0 for an unkeyed aggregation.
	Capacity int
}

// Name is the aggregation's name without '@' ("" for @).
func (a *AggData) Name() string { return a.Layout.Name }

// AggRow is one key of an aggregation and its merged value.
type AggRow struct {
	raw   [][]byte // the keys as stored (more than one when symbols merge them)
	Keys  []printf.Value
	Count uint64 // updates merged into this row
	// Value is the result of count, sum, min, max and (rounded down) avg.
	Value int64
	// Sum and SumSq (128 bits, low word first) are what avg and stddev
	// are computed from; Sum is also the weighted sum of the values a
	// distribution counted.
	Sum   int64
	SumSq [2]uint64
	// Buckets are the counts of quantize, lquantize and llquantize.
	Buckets []int64
	// PerCPU are the CPUs' parts, kept for -x aggpercpu.
	PerCPU []CPUPart
}

// CPUPart is one CPU's part of a row.
type CPUPart struct {
	CPU int
	Row *AggRow
}

// frozen says whether the aggregations are the values Disable read, not
// the maps: END's clear( ) and trunc( ) still act on the maps, before
// Disable reads them for the last time. e.stateMu must be held.
func (e *Enabling) frozen() bool {
	return e.closed || (e.disabled && e.last != nil)
}

// Snapshot reads every aggregation map and merges the per-CPU values. After
// Disable it returns the values read then. Once tracing has stopped, its
// user stacks show every inlined function: it waits, at most
// inlineWait, for the DWARF still being read.
func (e *Enabling) Snapshot() (*AggSnapshot, error) {
	e.stateMu.Lock()
	if e.frozen() {
		last := e.last
		e.stateMu.Unlock()
		if last == nil {
			return &AggSnapshot{}, nil
		}
		return last, nil
	}
	exiting := e.disabled
	e.stateMu.Unlock()
	inline := !e.s.opts.NoInline
	unready := userSyms.Unready()
	snap, err := e.readAggs()
	if err != nil || !exiting || !inline || userSyms.Unready() == unready {
		return snap, err
	}
	// Tracing has stopped, and some user frames were named while the
	// DWARF saying what is inlined in their files was still being read
	// (in the background, not to hold up naming): what is printed now
	// is printed complete, as far as the reading is done in time.
	for _, module := range userSyms.WaitInlines(inlineWait) {
		text := fmt.Sprintf("%s: inlined functions of %s not read in %v: its frames are shown without them\n", e.s.opts.Prog, module, inlineWait)
		e.s.mu.Lock()
		e.s.deliver(&Event{Kind: KindError, Text: text, Stderr: true})
		e.s.mu.Unlock()
	}
	return e.readAggs()
}

// inlineWait is how long the aggregations read once tracing has stopped
// wait for files' DWARF to be read, for the functions inlined in them.
const inlineWait = 5 * time.Second

// readAggs reads every aggregation map.
func (e *Enabling) readAggs() (*AggSnapshot, error) {
	snap := &AggSnapshot{}
	for _, l := range e.Prog.Code.Aggs {
		data, err := readAgg(e.coll.Maps[l.Map], l, e.s.opts.AggPerCPU, !e.s.opts.NoInline, e.clearedKeys(l.Name))
		if err != nil {
			return nil, err
		}
		snap.Aggs = append(snap.Aggs, data)
	}
	return snap, nil
}

// Aggregation reads aggregation name ("" for @) alone, as Snapshot would:
// an exporter scraping one aggregation need not read every map. It
// returns nil when the program has no such aggregation.
func (e *Enabling) Aggregation(name string) (*AggData, error) {
	l := e.agg(name)
	if l == nil {
		return nil, nil
	}
	e.stateMu.Lock()
	if e.frozen() {
		last := e.last
		e.stateMu.Unlock()
		if last != nil {
			for _, a := range last.Aggs {
				if a.Layout == l {
					return a, nil
				}
			}
		}
		return &AggData{Layout: l}, nil
	}
	e.stateMu.Unlock()
	return readAgg(e.coll.Maps[l.Map], l, e.s.opts.AggPerCPU, !e.s.opts.NoInline, e.clearedKeys(l.Name))
}

// readAgg reads and merges one aggregation map. Batched lookups read
// thousands of keys per system call (iterating costs two calls a key); a
// kernel without them falls back to iterating. A row no update reached is
// left out unless clear() zeroed it (one of the stored keys in cleared).
func readAgg(m *ebpf.Map, l *codegen.AggLayout, perCPU, inline bool, cleared map[string]bool) (*AggData, error) {
	data := &AggData{Layout: l}
	if !l.Array { // an unkeyed aggregation's one entry is always there
		data.Capacity = int(m.MaxEntries())
	}
	// Keys that print the same symbol are one row, as in dtrace(1):
	// @[func(caller)] counts by function whatever the offset.
	rows := map[string]*AggRow{}
	var order []*AggRow
	merging := false
	for _, d := range l.Keys {
		merging = merging || d.Type.Kind == types.Sym && d.Type.Fn != "uaddr"
	}
	add := func(key []byte, vals [][]byte) {
		newRow := func() *AggRow {
			r := &AggRow{}
			if l.Buckets > 0 {
				r.Buckets = make([]int64, l.Buckets)
			}
			return r
		}
		var keys []printf.Value
		for _, d := range l.Keys {
			keys = append(keys, datum(key, d, inline))
		}
		var row *AggRow
		id := ""
		if merging {
			id = rowID(key, l, keys)
			row = rows[id]
		}
		if row == nil {
			row = newRow()
			row.Keys = keys
			if merging {
				rows[id] = row
			}
			order = append(order, row)
		}
		row.raw = append(row.raw, append([]byte(nil), key...))
		for cpu, v := range vals {
			merge(l, row, v)
			if perCPU {
				if len(row.PerCPU) <= cpu {
					for c := len(row.PerCPU); c < len(vals); c++ {
						row.PerCPU = append(row.PerCPU, CPUPart{CPU: c, Row: newRow()})
					}
				}
				merge(l, row.PerCPU[cpu].Row, v)
			}
		}
	}
	collect := func() {
		for _, row := range order {
			if row.Count == 0 && !anyCleared(row, cleared) {
				continue
			}
			finish(l, row)
			parts := row.PerCPU[:0]
			for _, p := range row.PerCPU {
				if p.Row.Count > 0 {
					finish(l, p.Row)
					parts = append(parts, p)
				}
			}
			row.PerCPU = parts
			data.Rows = append(data.Rows, row)
		}
	}
	if m.Type() == ebpf.PerCPUHash {
		if err := readBatched(m, add); err == nil {
			collect()
			return data, nil
		} else if !errors.Is(err, ebpf.ErrNotSupported) {
			return nil, err
		}
		rows, order = map[string]*AggRow{}, nil
	}
	var key []byte
	var vals [][]byte
	it := m.Iterate()
	for it.Next(&key, &vals) {
		add(key, vals)
	}
	collect()
	return data, it.Err()
}

// rowID identifies the row a stored key merges into: the key itself,
// except that an address sym( ), usym( ), mod( ) or umod( ) recorded
// counts by the name it prints (uaddr( )'s name is its address). The
// name follows the key, after the NUL that ends the raw part.
func rowID(key []byte, l *codegen.AggLayout, keys []printf.Value) string {
	id := string(key)
	for i, d := range l.Keys {
		if d.Type.Kind == types.Sym && d.Type.Fn != "uaddr" {
			// The address goes; a user address's process id stays, as
			// in dtrace's keys (one row per process and symbol).
			pc := d.Off + d.Size - 8
			id = id[:pc] + strings.Repeat("\x00", 8) + id[pc+8:]
			id += "\x00" + keys[i].Str
		}
	}
	return id
}

// readBatched reads a per-CPU hash map in batches, calling add for each
// key with its per-CPU values.
func readBatched(m *ebpf.Map, add func(key []byte, vals [][]byte)) error {
	const batch = 4096
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	ks := int(m.KeySize())
	keys := reflect.MakeSlice(reflect.SliceOf(reflect.ArrayOf(ks, reflect.TypeOf(byte(0)))), batch, batch)
	// Keys and values go into slices of fixed-size byte arrays, which is
	// what cilium/ebpf reads batches into.
	vals := reflect.MakeSlice(reflect.SliceOf(reflect.ArrayOf(int(m.ValueSize()), reflect.TypeOf(byte(0)))), batch*ncpu, batch*ncpu)
	perCPU := make([][]byte, ncpu)
	var cursor ebpf.MapBatchCursor
	for {
		n, err := m.BatchLookup(&cursor, keys.Interface(), vals.Interface(), nil)
		for i := 0; i < n; i++ {
			for c := range perCPU {
				perCPU[c] = vals.Index(i*ncpu+c).Slice(0, int(m.ValueSize())).Bytes()
			}
			add(keys.Index(i).Slice(0, ks).Bytes(), perCPU)
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// finish computes a merged row's count and average.
func finish(l *codegen.AggLayout, row *AggRow) {
	switch {
	case l.Func == "count":
		row.Value = int64(row.Count)
	case row.Count == 0:
		// A cleared row: dtrace resets min and max to the far ends.
		switch l.Func {
		case "min":
			row.Value = math.MaxInt64
		case "max":
			row.Value = math.MinInt64
		}
	case l.Func == "avg":
		row.Value = row.Sum / int64(row.Count)
	}
}

// anyCleared reports whether clear() zeroed one of row's stored keys.
func anyCleared(row *AggRow, cleared map[string]bool) bool {
	for _, k := range row.raw {
		if cleared[string(k)] {
			return true
		}
	}
	return false
}

// clearedKeys returns a copy of the keys clear() zeroed in aggregation
// name.
func (e *Enabling) clearedKeys(name string) map[string]bool {
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	out := map[string]bool{}
	for k := range e.cleared[name] {
		out[k] = true
	}
	return out
}

// merge adds one CPU's value v to row, as the function combines values.
func merge(l *codegen.AggLayout, row *AggRow, v []byte) {
	n := ne.Uint64(v[0:])
	if n == 0 {
		return
	}
	first := row.Count == 0
	row.Count += n
	switch l.Func {
	case "sum":
		row.Value += int64(ne.Uint64(v[8:]))
	case "avg":
		row.Sum += int64(ne.Uint64(v[8:]))
	case "min", "max":
		x := int64(ne.Uint64(v[8:]))
		if first || l.Func == "min" && x < row.Value || l.Func == "max" && x > row.Value {
			row.Value = x
		}
	case "stddev":
		row.Sum += int64(ne.Uint64(v[8:]))
		lo := row.SumSq[0] + ne.Uint64(v[16:])
		carry := uint64(0)
		if lo < row.SumSq[0] {
			carry = 1
		}
		row.SumSq = [2]uint64{lo, row.SumSq[1] + ne.Uint64(v[24:]) + carry}
	}
	for i := range row.Buckets {
		row.Buckets[i] += int64(ne.Uint64(v[8+8*i:]))
	}
	if l.Buckets > 0 {
		row.Sum += int64(ne.Uint64(v[8+8*l.Buckets:]))
	}
}

// agg returns the layout of aggregation name ("" for @), or nil.
func (e *Enabling) agg(name string) *codegen.AggLayout {
	for _, l := range e.Prog.Code.Aggs {
		if l.Name == name {
			return l
		}
	}
	return nil
}

// HasAgg reports whether the program has aggregation name.
func (e *Enabling) HasAgg(name string) bool { return e.agg(name) != nil }

// Clear zeroes the values of aggregation name and keeps its keys, as
// DTrace's clear() does: a key that gets no update since prints as 0 (min
// and max as the far ends of int64) until trunc() removes it.
func (e *Enabling) Clear(name string) error {
	l := e.agg(name)
	if l == nil {
		return fmt.Errorf("no aggregation @%s", name)
	}
	e.stateMu.Lock()
	closed := e.frozen()
	e.stateMu.Unlock()
	if closed {
		return e.clearLast(name)
	}
	m := e.coll.Maps[l.Map]
	data, err := readAgg(m, l, false, !e.s.opts.NoInline, e.clearedKeys(name))
	if err != nil {
		return err
	}
	zero := make([][]byte, len(e.readPerCPU(0)))
	for i := range zero {
		zero[i] = make([]byte, l.ValueSize)
	}
	keys := map[string]bool{}
	for _, r := range data.Rows {
		for _, k := range r.raw {
			// A key removed meanwhile (by trunc) stays removed.
			if err := m.Update(k, zero, ebpf.UpdateExist); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return err
			}
			keys[string(k)] = true
		}
	}
	e.stateMu.Lock()
	if e.cleared == nil {
		e.cleared = map[string]map[string]bool{}
	}
	e.cleared[name] = keys
	e.stateMu.Unlock()
	return nil
}

// clearLast applies Clear to the values kept after Disable.
func (e *Enabling) clearLast(name string) error {
	if e.last == nil {
		return nil
	}
	for _, a := range e.last.Aggs {
		if a.Name() == name {
			for i, r := range a.Rows {
				c := &AggRow{raw: r.raw, Keys: r.Keys}
				if r.Buckets != nil {
					c.Buckets = make([]int64, len(r.Buckets))
				}
				finish(a.Layout, c)
				a.Rows[i] = c
			}
		}
	}
	return nil
}

// Trunc keeps the n rows of aggregation name with the largest values (the
// smallest for negative n) and removes the rest, as DTrace's trunc() does.
func (e *Enabling) Trunc(name string, n int) error {
	l := e.agg(name)
	if l == nil {
		return fmt.Errorf("no aggregation @%s", name)
	}
	e.stateMu.Lock()
	closed := e.frozen()
	e.stateMu.Unlock()
	if closed {
		return e.truncLast(name, n)
	}
	m := e.coll.Maps[l.Map]
	if l.Array {
		if n != 0 {
			return nil
		}
		zero := make([][]byte, len(e.readPerCPU(0)))
		for i := range zero {
			zero[i] = make([]byte, l.ValueSize)
		}
		e.uncleared(name, nil)
		return m.Update(uint32(0), zero, ebpf.UpdateAny)
	}
	data, err := readAgg(m, l, false, !e.s.opts.NoInline, e.clearedKeys(name))
	if err != nil {
		return err
	}
	drop := dropRows(data, n)
	for _, r := range drop {
		for _, k := range r.raw {
			if err := m.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return err
			}
		}
	}
	if len(drop) > 0 {
		e.uncleared(name, drop)
	}
	return nil
}

// uncleared forgets that clear() zeroed the rows trunc() removed (every
// row of the aggregation when rows is nil).
func (e *Enabling) uncleared(name string, rows []*AggRow) {
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	if rows == nil {
		delete(e.cleared, name)
		return
	}
	for _, r := range rows {
		for _, k := range r.raw {
			delete(e.cleared[name], string(k))
		}
	}
}

// truncLast applies Trunc to the values kept after Disable.
func (e *Enabling) truncLast(name string, n int) error {
	if e.last == nil {
		return nil
	}
	for _, a := range e.last.Aggs {
		if a.Name() == name {
			drop := map[*AggRow]bool{}
			for _, r := range dropRows(a, n) {
				drop[r] = true
			}
			kept := a.Rows[:0]
			for _, r := range a.Rows {
				if !drop[r] {
					kept = append(kept, r)
				}
			}
			a.Rows = kept
		}
	}
	return nil
}

// dropRows returns the rows trunc(n) removes: all but the n that rank
// highest, or the -n that rank lowest for negative n. Rows rank as
// output.CompareRank says, so distributions rank by their weighted sums
// and averages by what they compute to, as in DTrace.
func dropRows(a *AggData, n int) []*AggRow {
	out := &output.Aggregation{
		Func: aggFuncs[string(a.Layout.Func)], Lquantize: a.Layout.Lquantize(),
		Llquantize: a.Layout.Llquantize(),
	}
	type ranked struct {
		row *AggRow
		out output.Row
	}
	rows := make([]ranked, len(a.Rows))
	for i, r := range a.Rows {
		rows[i] = ranked{r, outputRow(r)}
	}
	slices.SortStableFunc(rows, func(l, r ranked) int {
		c := output.CompareRank(out, &l.out, &r.out)
		if n >= 0 {
			c = -c
		}
		return c
	})
	if n < 0 {
		n = -n
	}
	if n >= len(rows) {
		return nil
	}
	var drop []*AggRow
	for _, r := range rows[n:] {
		drop = append(drop, r.row)
	}
	return drop
}
