package metrics

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dstar-trace/dstar/dcompiler/check"
	"github.com/dstar-trace/dstar/dcompiler/codegen"
	"github.com/dstar-trace/dstar/dcompiler/printf"
	"github.com/dstar-trace/dstar/dcompiler/quant"
	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/engine"
)

func layout(fn string, params []int64, keys ...*types.Type) *codegen.AggLayout {
	l := &codegen.AggLayout{Agg: &check.Agg{Name: "x", Func: check.AggFunc(fn), Params: params, Keys: keys}}
	for _, k := range keys {
		l.Keys = append(l.Keys, codegen.Datum{Type: k})
	}
	switch fn {
	case "quantize":
		l.Buckets = quant.QuantizeBuckets
	case "lquantize":
		l.Buckets = l.Lquantize().Len()
	}
	return l
}

func TestBounds(t *testing.T) {
	q := Bounds(quant.QuantizeBucket, quant.QuantizeBuckets)
	for i, want := range map[int]float64{
		quant.QuantizeZero: 0, quant.QuantizeZero + 1: 1, quant.QuantizeZero + 2: 3, quant.QuantizeZero + 3: 7,
		quant.QuantizeZero - 1: -1, quant.QuantizeZero - 2: -2, quant.QuantizeZero - 3: -4,
	} {
		if q[i] != want {
			t.Errorf("quantize bucket %d (%d): le %v, want %v", i, quant.QuantizeBucketValue(i), q[i], want)
		}
	}
	lq := quant.Lquantize{Base: 0, Step: 10, Levels: 10}
	b := Bounds(lq.Bucket, lq.Len())
	if len(b) != 11 || b[0] != -1 || b[1] != 9 || b[10] != 99 {
		t.Errorf("lquantize(x, 0, 100, 10) bounds %v, want -1, 9, 19, ... 99", b)
	}
	// Every value is counted by the first bucket whose bound it does not
	// exceed.
	for _, v := range []int64{-100, -5, -1, 0, 1, 2, 3, 4, 1000, math.MaxInt64 / 2} {
		i := quant.QuantizeBucket(v)
		if i < len(q) && float64(v) > q[i] || i > 0 && float64(v) <= q[i-1] {
			t.Errorf("%d is counted by bucket %d, whose bounds are (%v, %v]", v, i, q[max(i-1, 0)], q[min(i, len(q)-1)])
		}
	}
}

// rows feeds a metric the rows a test sets.
type rows struct{ data *engine.AggData }

func (r *rows) source() Source { return func() (*engine.AggData, error) { return r.data, nil } }

func TestCounterMonotonic(t *testing.T) {
	l := layout("count", nil, types.StringT(256))
	r := &rows{}
	m, err := New(Spec{Agg: "x", Name: "calls_total", Help: "calls", Labels: []string{"execname"}}, l, r.source())
	if err != nil {
		t.Fatal(err)
	}
	set := &Set{}
	if err := set.Add(m); err != nil {
		t.Fatal(err)
	}
	row := func(k string, v int64) *engine.AggRow {
		return &engine.AggRow{Keys: []printf.Value{printf.Str(k)}, Value: v, Count: uint64(v)}
	}
	for _, step := range []struct {
		rows []*engine.AggRow
		want string
	}{
		{[]*engine.AggRow{row("sh", 5), row(`a"b\c`, 1)}, "calls_total{execname=\"a\\\"b\\\\c\"} 1\ncalls_total{execname=\"sh\"} 5\n"},
		{[]*engine.AggRow{row("sh", 8)}, "calls_total{execname=\"sh\"} 8\n"},
		// clear( ) or a new attachment starts the kernel's count again:
		// the counter goes on from where it was.
		{[]*engine.AggRow{row("sh", 2), row(`a"b\c`, 4)}, "calls_total{execname=\"a\\\"b\\\\c\"} 4\ncalls_total{execname=\"sh\"} 10\n"},
	} {
		r.data = &engine.AggData{Layout: l, Rows: step.rows}
		want := "# HELP calls_total calls\n# TYPE calls_total counter\n" + step.want
		if err := testutil.CollectAndCompare(set, strings.NewReader(want), "calls_total"); err != nil {
			t.Error(err)
		}
	}
}

func TestHistogram(t *testing.T) {
	l := layout("lquantize", []int64{0, 30, 10}) // buckets <0, 0-9, 10-19, 20-29, >=30
	r := &rows{}
	m, err := New(Spec{Agg: "x", Name: "lat", Help: "latency"}, l, r.source())
	if err != nil {
		t.Fatal(err)
	}
	set := &Set{}
	set.Add(m)
	// 2 values of 5, 3 of 15: buckets 0-9 and 10-19 counted; bounds are
	// shown from the bucket below the lowest that counted.
	r.data = &engine.AggData{Layout: l, Rows: []*engine.AggRow{{Buckets: []int64{0, 2, 3, 0, 0}, Sum: 55, Count: 5}}}
	want := `# HELP lat latency
# TYPE lat histogram
lat_bucket{le="-1"} 0
lat_bucket{le="9"} 2
lat_bucket{le="19"} 5
lat_bucket{le="+Inf"} 5
lat_sum 55
lat_count 5
`
	if err := testutil.CollectAndCompare(set, strings.NewReader(want), "lat"); err != nil {
		t.Error(err)
	}
	// After a restart the kernel has 1 value of 25: the histogram goes on.
	r.data = &engine.AggData{Layout: l, Rows: []*engine.AggRow{{Buckets: []int64{0, 0, 0, 1, 0}, Sum: 25, Count: 1}}}
	want = `# HELP lat latency
# TYPE lat histogram
lat_bucket{le="-1"} 0
lat_bucket{le="9"} 2
lat_bucket{le="19"} 5
lat_bucket{le="29"} 6
lat_bucket{le="+Inf"} 6
lat_sum 80
lat_count 6
`
	if err := testutil.CollectAndCompare(set, strings.NewReader(want), "lat"); err != nil {
		t.Error(err)
	}
}

func TestSeriesLimit(t *testing.T) {
	l := layout("max", nil, types.IntT)
	r := &rows{}
	m, err := New(Spec{Agg: "x", Name: "biggest", Labels: []string{"cpu"}, MaxSeries: 2}, l, r.source())
	if err != nil {
		t.Fatal(err)
	}
	set := &Set{}
	set.Add(m)
	r.data = &engine.AggData{Layout: l}
	for i := range 3 {
		r.data.Rows = append(r.data.Rows, &engine.AggRow{Keys: []printf.Value{printf.Int(int64(i))}, Value: int64(10 * i), Count: 1})
	}
	want := `# HELP dstar_metric_series_dropped_total Series of an exported aggregation left out because the metric had as many as its limit.
# TYPE dstar_metric_series_dropped_total counter
dstar_metric_series_dropped_total{metric="biggest"} 1
`
	if err := testutil.CollectAndCompare(set, strings.NewReader(want), "dstar_metric_series_dropped_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(set, "biggest"); n != 2 {
		t.Errorf("%d series of biggest, want the limit, 2", n)
	}
}

func TestSpecErrors(t *testing.T) {
	stack := &types.Type{Kind: types.Stack}
	for _, c := range []struct {
		l    *codegen.AggLayout
		spec Spec
		want string
	}{
		{layout("count", nil), Spec{Name: "1x"}, `"1x" is not a valid metric name`},
		{layout("count", nil, types.IntT), Spec{Name: "x"}, "@x has 1 key(s), but 0 label name(s) were given"},
		{layout("count", nil, stack), Spec{Agg: "x", Name: "x", Labels: []string{"s"}}, "key 1 of @x is a stack"},
		{layout("count", nil, types.IntT, types.IntT), Spec{Name: "x", Labels: []string{"a", "a"}}, `label "a" is given twice`},
		{layout("quantize", nil, types.IntT), Spec{Name: "x", Labels: []string{"le"}}, `label "le" is a histogram's own`},
		{layout("count", nil, types.IntT), Spec{Name: "x", Labels: []string{"__a"}}, `"__a" is not a valid label name`},
	} {
		c.spec.Agg = "x"
		_, err := New(c.spec, c.l, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): %v, want %q", c.spec, err, c.want)
		}
	}
}

var _ prometheus.Collector = (*Set)(nil)

func TestRowsMerged(t *testing.T) {
	// Two programs' rows for the same key: one series, combined.
	for fn, want := range map[string]string{"count": "7", "max": "5", "min": "2", "avg": "3"} {
		l := layout(fn, nil, types.IntT)
		r := &rows{data: &engine.AggData{Layout: l, Rows: []*engine.AggRow{
			{Keys: []printf.Value{printf.Int(1)}, Value: 5, Count: 1, Sum: 5},
			{Keys: []printf.Value{printf.Int(1)}, Value: 2, Count: 2, Sum: 4},
		}}}
		if fn == "count" {
			r.data.Rows[0].Value, r.data.Rows[1].Value = 5, 2
		}
		m, err := New(Spec{Agg: "x", Name: "m", Labels: []string{"k"}}, l, r.source())
		if err != nil {
			t.Fatal(err)
		}
		set := &Set{}
		set.Add(m)
		typ := "gauge"
		if fn == "count" {
			typ = "counter"
		}
		text := "# HELP m D aggregation @x (" + fn + ")\n# TYPE m " + typ + "\nm{k=\"1\"} " + want + "\n"
		if err := testutil.CollectAndCompare(set, strings.NewReader(text), "m"); err != nil {
			t.Errorf("%s: %v", fn, err)
		}
	}
}
