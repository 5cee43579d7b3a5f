// Package metrics turns D aggregations into Prometheus metrics: count( )
// and sum( ) into counters, the quantizations into histograms whose bounds
// are D's buckets, min( ), max( ), avg( ) and stddev( ) into gauges. Keys
// become labels. Values are read from the kernel when a scrape collects
// them (or at most once per interval), never per event. It serves nothing:
// an HTTP server registers a Set with a Prometheus registry.
package metrics

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dstar-trace/dstar/dcompiler/codegen"
	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/engine"
	"github.com/dstar-trace/dstar/engine/output"
)

// DefaultMaxSeries is how many series one metric exports unless its Spec
// says otherwise; series past it are dropped and counted.
const DefaultMaxSeries = 10000

// Spec says how one aggregation is exported.
type Spec struct {
	Agg       string   // the aggregation's name without '@' ("" for @)
	Name      string   // the metric's name
	Help      string   // its help text
	Labels    []string // a label name per key, in the key's order
	MaxSeries int      // 0 means DefaultMaxSeries
	// Interval, when set, is how long values read from the kernel are
	// reused: scrapes more frequent than it do not read the maps again.
	Interval time.Duration
}

// Source reads the aggregation's current rows; nil data means it has
// none now (its program is not attached).
type Source func() (*engine.AggData, error)

type kind int

const (
	counter kind = iota
	gauge
	histogram
)

// Metric is one exported aggregation.
type Metric struct {
	spec   Spec
	kind   kind
	fn     string // the aggregating function
	src    Source
	desc   *prometheus.Desc
	bucket func(int64) int
	nbkt   int

	mu      sync.Mutex
	series  map[string]*series // by label values
	order   []string           // series keys, oldest first (for eviction)
	dropped uint64             // series refused over the limit
	errors  uint64             // failed reads
	lo, hi  int                // buckets that ever counted, for histograms
	fill    float64            // rows read over the maps' capacity, at the last read; -1 if unkeyed
	cached  *engine.AggData
	readAt  time.Time
	bounds  []float64 // le of each bucket but the last
}

// series is what a series' counters add to what the kernel holds, so that
// they only grow when clear( ), trunc( ) or re-attaching restarts them.
type series struct {
	labels  []string
	present bool
	base    float64 // counters: the sum of the values before each restart
	last    float64
	bBase   []uint64 // histograms: the same per bucket, and for the sum
	bLast   []uint64
	sBase   float64
	sLast   float64
}

var (
	nameRE  = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// New checks spec against the aggregation's layout and returns the
// metric. src is called at each collection.
func New(spec Spec, l *codegen.AggLayout, src Source) (*Metric, error) {
	at := "@" + spec.Agg
	if !nameRE.MatchString(spec.Name) {
		return nil, fmt.Errorf("%q is not a valid metric name (letters, digits, '_' and ':', not starting with a digit)", spec.Name)
	}
	m := &Metric{spec: spec, fn: string(l.Func), src: src, series: map[string]*series{}, lo: -1, hi: -1, fill: -1}
	switch l.Func {
	case "count", "sum":
		m.kind = counter
	case "min", "max", "avg", "stddev":
		m.kind = gauge
	case "quantize", "lquantize", "llquantize":
		m.kind = histogram
		m.bucket, m.nbkt = l.BucketOf(), l.Buckets
		m.bounds = Bounds(m.bucket, m.nbkt)
	default:
		return nil, fmt.Errorf("%s: %s( ) cannot be exported as a metric", at, l.Func)
	}
	if len(spec.Labels) != len(l.Keys) {
		return nil, fmt.Errorf("%s has %d key(s), but %d label name(s) were given", at, len(l.Keys), len(spec.Labels))
	}
	for i, n := range spec.Labels {
		switch {
		case !labelRE.MatchString(n) || strings.HasPrefix(n, "__"):
			return nil, fmt.Errorf("%q is not a valid label name", n)
		case slices.Index(spec.Labels, n) != i:
			return nil, fmt.Errorf("label %q is given twice", n)
		case n == "le" && m.kind == histogram:
			return nil, fmt.Errorf("label \"le\" is a histogram's own")
		case l.Keys[i].Type.Kind == types.Stack:
			return nil, fmt.Errorf("key %d of %s is a stack, which cannot be a label (dtrace.pprof( ) exports stacks)", i+1, at)
		}
	}
	if m.spec.MaxSeries <= 0 {
		m.spec.MaxSeries = DefaultMaxSeries
	}
	help := spec.Help
	if help == "" {
		help = fmt.Sprintf("D aggregation %s (%s)", at, l.Func)
	}
	m.desc = prometheus.NewDesc(spec.Name, help, spec.Labels, nil)
	return m, nil
}

// Name is the metric's name.
func (m *Metric) Name() string { return m.spec.Name }

// Bounds returns the upper bound (Prometheus's le) of each bucket of a
// distribution but the last, which is +Inf: the greatest value the bucket
// counts. Buckets are ranges of integers in increasing order, so that is
// found by bisection for any layout.
func Bounds(bucket func(int64) int, n int) []float64 {
	out := make([]float64, n-1)
	for i := range out {
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		for lo < hi { // the greatest v with bucket(v) <= i
			d := uint64(hi) - uint64(lo)
			mid := lo + int64(d-d/2) // rounded up: lo moves
			if bucket(mid) <= i {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		out[i] = float64(lo)
	}
	return out
}

// read returns the rows to export, reading the kernel at most once per
// interval. m.mu is held.
func (m *Metric) read(now time.Time) (*engine.AggData, error) {
	if m.spec.Interval > 0 && m.cached != nil && now.Sub(m.readAt) < m.spec.Interval {
		return m.cached, nil
	}
	a, err := m.src()
	if err != nil {
		m.errors++
		return nil, err
	}
	m.cached, m.readAt = a, now
	return a, nil
}

// collect sends the metric's series to ch.
func (m *Metric) collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, err := m.read(time.Now())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(m.desc, err)
		return
	}
	for _, s := range m.series {
		s.present = false
	}
	if a == nil {
		return
	}
	if a.Capacity > 0 {
		m.fill = float64(len(a.Rows)) / float64(a.Capacity)
	}
	if m.kind == histogram {
		for _, r := range a.Rows {
			for i, c := range r.Buckets {
				if c != 0 {
					if m.lo < 0 || i < m.lo {
						m.lo = i
					}
					m.hi = max(m.hi, i)
				}
			}
		}
	}
	for _, lr := range m.merged(a) {
		r, labels := lr.row, lr.labels
		s := m.lookup(labels)
		if s == nil {
			continue
		}
		s.present = true
		switch m.kind {
		case counter:
			ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, s.counter(float64(r.Value)), labels...)
		case gauge:
			v := float64(r.Value)
			if m.fn == "stddev" {
				v = float64(output.StddevValue(int64(r.Count), r.Sum, r.SumSq, 0))
			}
			ch <- prometheus.MustNewConstMetric(m.desc, prometheus.GaugeValue, v, labels...)
		case histogram:
			ch <- m.histogram(s, r, labels)
		}
	}
}

// labelled is a row and its label values.
type labelled struct {
	labels []string
	row    *engine.AggRow
}

// merged returns a's rows with their labels, the rows that label alike
// combined as the function combines values: a source may give the rows of
// several programs (one detached, its successor attached), and keys that
// differ in the kernel may print alike. Rows are copied only to combine.
func (m *Metric) merged(a *engine.AggData) []labelled {
	out := make([]labelled, 0, len(a.Rows))
	byLabels := make(map[string]int, len(a.Rows))
	copied := map[int]bool{}
	for _, r := range a.Rows {
		labels := make([]string, len(r.Keys))
		for i, k := range r.Keys {
			labels[i] = k.String()
		}
		key := strings.Join(labels, "\x00")
		i, dup := byLabels[key]
		if !dup {
			byLabels[key] = len(out)
			out = append(out, labelled{labels, r})
			continue
		}
		if !copied[i] {
			c := *out[i].row
			c.Buckets = slices.Clone(c.Buckets)
			out[i].row, copied[i] = &c, true
		}
		combine(m.fn, out[i].row, r)
	}
	return out
}

// combine adds row r into x as function fn combines values.
func combine(fn string, x, r *engine.AggRow) {
	first := x.Count == 0
	x.Count += r.Count
	x.Sum += r.Sum
	lo := x.SumSq[0] + r.SumSq[0]
	carry := uint64(0)
	if lo < x.SumSq[0] {
		carry = 1
	}
	x.SumSq = [2]uint64{lo, x.SumSq[1] + r.SumSq[1] + carry}
	for i := range x.Buckets {
		x.Buckets[i] += r.Buckets[i]
	}
	switch fn {
	case "count", "sum":
		x.Value += r.Value
	case "min":
		if first || r.Count > 0 && r.Value < x.Value {
			x.Value = r.Value
		}
	case "max":
		if first || r.Count > 0 && r.Value > x.Value {
			x.Value = r.Value
		}
	case "avg":
		if x.Count > 0 {
			x.Value = x.Sum / int64(x.Count)
		}
	}
}

// lookup returns the series of labels, making it if the limit allows;
// nil means it was dropped. m.mu is held.
func (m *Metric) lookup(labels []string) *series {
	key := strings.Join(labels, "\x00")
	if s := m.series[key]; s != nil {
		return s
	}
	if len(m.series) >= m.spec.MaxSeries {
		// Forget the oldest series the last read did not return (its
		// restart offsets go with it) before refusing a new one.
		i := slices.IndexFunc(m.order, func(k string) bool { return !m.series[k].present })
		if i < 0 {
			m.dropped++
			return nil
		}
		delete(m.series, m.order[i])
		m.order = slices.Delete(m.order, i, i+1)
	}
	s := &series{labels: labels}
	m.series[key] = s
	m.order = append(m.order, key)
	return s
}

// counter returns the series' monotonic value for the kernel's v.
func (s *series) counter(v float64) float64 {
	if v < s.last {
		s.base += s.last
	}
	s.last = v
	return s.base + v
}

// histogram returns the series' histogram for row r: cumulative counts at
// each bound between the buckets that ever counted, monotonic across
// restarts as counters are.
func (m *Metric) histogram(s *series, r *engine.AggRow, labels []string) prometheus.Metric {
	cur := make([]uint64, len(r.Buckets))
	var total uint64
	for i, c := range r.Buckets {
		cur[i] = uint64(max(c, 0)) // a negative increment cannot be an observation count
		total += cur[i]
	}
	if s.bBase == nil {
		s.bBase, s.bLast = make([]uint64, len(cur)), make([]uint64, len(cur))
	}
	restarted := false
	for i := range cur {
		restarted = restarted || cur[i] < s.bLast[i]
	}
	if restarted {
		for i := range cur {
			s.bBase[i] += s.bLast[i]
		}
		s.sBase += s.sLast
	}
	copy(s.bLast, cur)
	s.sLast = float64(r.Sum)
	buckets := map[float64]uint64{}
	var cum uint64
	lo, hi := max(m.lo-1, 0), min(m.hi, len(m.bounds)-1)
	for i := range cur {
		cum += s.bBase[i] + cur[i]
		if i >= lo && i <= hi {
			buckets[m.bounds[i]] = cum
		}
	}
	for i := range cur {
		total += s.bBase[i]
	}
	return prometheus.MustNewConstHistogram(m.desc, total, s.sBase+s.sLast, buckets, labels...)
}

// Set is the metrics a program exports, with their own bookkeeping: a
// prometheus.Collector.
type Set struct {
	mu      sync.Mutex
	metrics []*Metric
}

var (
	droppedDesc = prometheus.NewDesc("dstar_metric_series_dropped_total",
		"Series of an exported aggregation left out because the metric had as many as its limit.", []string{"metric"}, nil)
	errorsDesc = prometheus.NewDesc("dstar_metric_read_errors_total",
		"Failed reads of an exported aggregation from the kernel.", []string{"metric"}, nil)
	seriesDesc = prometheus.NewDesc("dstar_metric_series",
		"Series an exported aggregation has now.", []string{"metric"}, nil)
	fillDesc = prometheus.NewDesc("dstar_metric_map_fill_ratio",
		"Keys in an exported aggregation's BPF map over the keys it holds (-x aggsize); at 1, updates are dropped.", []string{"metric"}, nil)
)

// Add adds m; a metric of the same name is an error.
func (s *Set) Add(m *Metric) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.metrics {
		if x.spec.Name == m.spec.Name {
			return fmt.Errorf("metric %q is exported twice", m.spec.Name)
		}
	}
	s.metrics = append(s.metrics, m)
	return nil
}

// Remove removes the metric named name, if any.
func (s *Set) Remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.metrics = slices.DeleteFunc(s.metrics, func(m *Metric) bool { return m.spec.Name == name })
}

// Metrics returns the set's metrics.
func (s *Set) Metrics() []*Metric {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.metrics)
}

// Describe sends nothing: the set's metrics come and go with scripts, so
// it is an unchecked collector.
func (s *Set) Describe(chan<- *prometheus.Desc) {}

// Collect reads every metric of the set.
func (s *Set) Collect(ch chan<- prometheus.Metric) {
	for _, m := range s.Metrics() {
		m.collect(ch)
		m.mu.Lock()
		present := 0
		for _, x := range m.series {
			if x.present {
				present++
			}
		}
		dropped, errs, fill := m.dropped, m.errors, m.fill
		m.mu.Unlock()
		if fill >= 0 {
			ch <- prometheus.MustNewConstMetric(fillDesc, prometheus.GaugeValue, fill, m.spec.Name)
		}
		ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(dropped), m.spec.Name)
		ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, float64(errs), m.spec.Name)
		ch <- prometheus.MustNewConstMetric(seriesDesc, prometheus.GaugeValue, float64(present), m.spec.Name)
	}
}
