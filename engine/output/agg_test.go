package output

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/dstar-trace/dstar/dcompiler/printf"
)

func writeFinal(t *testing.T, aggs ...*Aggregation) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteFinal(&b, aggs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func writePrinta(t *testing.T, a *Aggregation) string {
	t.Helper()
	var b bytes.Buffer
	if err := WritePrinta(&b, a); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// test/unittest/aggs/tst.signedkeys.r (dtrace-utils; the test came from
// illumos): integer keys of 1, 2, 4 and 8 bytes under aggsortkey, sorted
// as unsigned numbers, 1- and 2-byte ones printed unsigned; and four
// aggregations printed at exit one after another with nothing between them.
func TestSignedKeys(t *testing.T) {
	mk := func(size int) *Aggregation {
		a := &Aggregation{Func: Sum, Sort: SortOptions{ByKey: true}}
		for _, v := range []int64{-2, -1, 0, 1, 2} {
			a.Rows = append(a.Rows, Row{Keys: []printf.Value{printf.Sized(uint64(v), size, true)}, Value: v})
		}
		return a
	}
	got := writeFinal(t, mk(1), mk(2), mk(4), mk(8))
	want := "\n" +
		"   0                0\n" +
		"   1                1\n" +
		"   2                2\n" +
		" 254               -2\n" +
		" 255               -1\n" +
		"     0                0\n" +
		"     1                1\n" +
		"     2                2\n" +
		" 65534               -2\n" +
		" 65535               -1\n" +
		"        0                0\n" +
		"        1                1\n" +
		"        2                2\n" +
		"       -2               -2\n" +
		"       -1               -1\n" +
		"                0                0\n" +
		"                1                1\n" +
		"                2                2\n" +
		"               -2               -2\n" +
		"               -1               -1\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// test/unittest/aggs/tst.count_notquiet.r: an aggregation without keys,
// after the probe line of the clause that called exit().
func TestCountNoKeys(t *testing.T) {
	got := ProbeLine(0, 1, "", "tick-1005ms")[11:] + "\n" +
		writeFinal(t, &Aggregation{Func: Count, Rows: []Row{{Value: 10}}})
	want := "                    :tick-1005ms \n\n               10\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// test/unittest/aggs/tst.quantlast.r: quantize(0x4000000000000000, 1234),
// data in the last bucket only.
func TestQuantizeLast(t *testing.T) {
	b := make([]int64, QuantizeBuckets)
	b[QuantizeBucket(0x4000000000000000)] += 1234
	got := writeFinal(t, &Aggregation{Func: Quantize, Rows: []Row{{Buckets: b}}})
	want := "\n\n           value  ------------- Distribution ------------- count    \n" +
		"2305843009213693952 |                                         0        \n" +
		"4611686018427387904 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@ 1234     \n" +
		"\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

// The quantize example of the Oracle Linux DTrace Guide, "quantize"
// (docs.oracle.com/en/operating-systems/oracle-linux/dtrace-v2-guide/
// aggregation_quantize.html, Example 7-36): string keys in 50 columns
// after two spaces, rows sorted by the distributions' weighted sums.
func TestQuantizeGuide(t *testing.T) {
	a := &Aggregation{Func: Quantize}
	add := func(key string, counts map[int64]int64) {
		b := make([]int64, QuantizeBuckets)
		for v, n := range counts {
			b[QuantizeBucket(v)] += n
		}
		a.Rows = append(a.Rows, Row{Keys: []printf.Value{printf.Str(key)}, Buckets: b})
	}
	add("gnome-terminal", map[int64]int64{8192: 5, 16384: 5, 32768: 4, 65536: 1})
	add("bash", map[int64]int64{16384: 4, 131072: 1})
	var got bytes.Buffer
	if err := WriteAgg(&got, a); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"  bash                                              \n" +
		"           value  ------------- Distribution ------------- count    \n" +
		"            8192 |                                         0        \n" +
		"           16384 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@         4        \n" +
		"           32768 |                                         0        \n" +
		"           65536 |                                         0        \n" +
		"          131072 |@@@@@@@@                                 1        \n" +
		"          262144 |                                         0        \n" +
		"\n" +
		"  gnome-terminal                                    \n" +
		"           value  ------------- Distribution ------------- count    \n" +
		"            4096 |                                         0        \n" +
		"            8192 |@@@@@@@@@@@@@                            5        \n" +
		"           16384 |@@@@@@@@@@@@@                            5        \n" +
		"           32768 |@@@@@@@@@@@                              4        \n" +
		"           65536 |@@@                                      1        \n" +
		"          131072 |                                         0        \n" +
		"\n"
	if got.String() != want {
		t.Errorf("got\n%s\nwant\n%s", got.String(), want)
	}
}

// The lquantize example of the Oracle Linux DTrace Guide, "lquantize"
// (docs.oracle.com/en/operating-systems/oracle-linux/dtrace-v2-guide/
// aggregation_lquantize.html, Example 7-24): lquantize(arg0, 0, 100, 1).
func TestLquantizeGuide(t *testing.T) {
	p := LquantizeParams{Base: 0, Step: 1, Levels: 100}
	b := make([]int64, p.Len())
	b[p.Bucket(26)] += 9
	a := &Aggregation{Func: Lquantize, Lquantize: p,
		Rows: []Row{{Keys: []printf.Value{printf.Str("gnome-session")}, Buckets: b}}}
	var got bytes.Buffer
	if err := WriteAgg(&got, a); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"  gnome-session                                     \n" +
		"           value  ------------- Distribution ------------- count    \n" +
		"              25 |                                         0        \n" +
		"              26 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@ 9        \n" +
		"              27 |                                         0        \n" +
		"\n"
	if got.String() != want {
		t.Errorf("got\n%s\nwant\n%s", got.String(), want)
	}
}

func TestLquantizeEnds(t *testing.T) {
	p := LquantizeParams{Base: 0, Step: 10, Levels: 5}
	b := make([]int64, p.Len())
	for _, v := range []int64{-5, 0, 15, 49, 50, 1000} {
		b[p.Bucket(v)]++
	}
	var got bytes.Buffer
	if err := WriteLquantize(&got, p, b, 1); err != nil {
		t.Fatal(err)
	}
	want := quantHeader +
		row("< 0", 7, "1") + row("0", 7, "1") + row("10", 7, "1") + row("20", 0, "0") +
		row("30", 0, "0") + row("40", 7, "1") + row(">= 50", 13, "2")
	if got.String() != want {
		t.Errorf("got\n%s\nwant\n%s", got.String(), want)
	}
	// No data: the first three bins.
	got.Reset()
	if err := WriteLquantize(&got, p, make([]int64, p.Len()), 1); err != nil {
		t.Fatal(err)
	}
	if want := quantHeader + row("< 0", 0, "0") + row("0", 0, "0") + row("10", 0, "0"); got.String() != want {
		t.Errorf("empty: got\n%s\nwant\n%s", got.String(), want)
	}
}

// row builds one line of a table of non-negative counts: label, bar of n
// '@', count.
func row(label string, n int, count string) string {
	return fmt.Sprintf("%16s |%-40s %-9s\n", label, strings.Repeat("@", n), count)
}

// test/unittest/aggs/tst.llquantize_basic.d and .r (dtrace-utils): the
// data is rebuilt from the .d with Bucket, which checks the bucket layout
// as well as the drawing.
func TestLlquantizeBasic(t *testing.T) {
	type add struct{ v, incr int64 }
	series := func(p LlquantizeParams, adds []add) *Aggregation {
		b := make([]int64, p.Len())
		for _, a := range adds {
			b[p.Bucket(a.v)] += a.incr
		}
		return &Aggregation{Func: Llquantize, Llquantize: p, Rows: []Row{{Buckets: b}}}
	}
	vals := []int64{-20, -16, -12, -8, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 8, 12, 16, 20}
	basic := func(steps uint16) *Aggregation {
		var adds []add
		for _, v := range vals {
			adds = append(adds, add{v, 100 + v})
		}
		return series(LlquantizeParams{Factor: 4, Lmag: 0, Hmag: 1, Steps: steps}, adds)
	}
	type line struct {
		label string
		ats   int
		count string
	}
	table := func(lines ...line) string {
		s := "\n" + quantHeader
		for _, l := range lines {
			s += row(l.label, l.ats, l.count)
		}
		return s + "\n"
	}
	single := func() []add {
		var adds []add
		for v := int64(-4); v <= 4; v++ {
			adds = append(adds, add{v, 100 + v})
		}
		return adds
	}
	singleWant := table(
		line{"<= -4", 4, "96"}, line{"-3", 4, "97"}, line{"-2", 4, "98"}, line{"-1", 4, "99"},
		line{"0", 4, "100"}, line{"1", 4, "101"}, line{"2", 5, "102"}, line{"3", 5, "103"},
		line{">= 4", 5, "104"})
	tests := []struct {
		name string
		agg  *Aggregation
		want string
	}{
		{"basicA (steps<factor)", basic(2), table(
			line{"<= -16", 3, "164"}, line{"-8", 3, "180"}, line{"-4", 5, "285"}, line{"-2", 4, "195"},
			line{"-1", 2, "99"}, line{"0", 2, "100"}, line{"1", 2, "101"}, line{"2", 4, "205"},
			line{"4", 6, "315"}, line{"8", 4, "220"}, line{">= 16", 4, "236"})},
		{"basicB (steps==factor)", basic(4), table(
			line{"<= -16", 3, "164"}, line{"-12", 2, "88"}, line{"-8", 2, "92"}, line{"-4", 5, "285"},
			line{"-3", 2, "97"}, line{"-2", 2, "98"}, line{"-1", 2, "99"}, line{"0", 2, "100"},
			line{"1", 2, "101"}, line{"2", 2, "102"}, line{"3", 2, "103"}, line{"4", 6, "315"},
			line{"8", 2, "108"}, line{"12", 2, "112"}, line{">= 16", 4, "236"})},
		{"basicC (steps>factor)", basic(8), table(
			line{"<= -16", 3, "164"}, line{"-14", 0, "0"}, line{"-12", 2, "88"}, line{"-10", 0, "0"},
			line{"-8", 2, "92"}, line{"-6", 2, "94"}, line{"-4", 4, "191"}, line{"-3", 2, "97"},
			line{"-2", 2, "98"}, line{"-1", 2, "99"}, line{"0", 2, "100"}, line{"1", 2, "101"},
			line{"2", 2, "102"}, line{"3", 2, "103"}, line{"4", 4, "209"}, line{"6", 2, "106"},
			line{"8", 2, "108"}, line{"10", 0, "0"}, line{"12", 2, "112"}, line{"14", 0, "0"},
			line{">= 16", 4, "236"})},
		{"zero", series(LlquantizeParams{Factor: 2, Lmag: 0, Hmag: 1, Steps: 2}, []add{{0, 1}, {0, -1}}),
			table(line{"0", 0, "0"}, line{"1", 0, "0"}, line{"2", 0, "0"})},
		{"zeroB (lmag==0 && steps>factor)", series(LlquantizeParams{Factor: 2, Lmag: 0, Hmag: 1, Steps: 4}, []add{{0, 1}, {0, -1}}),
			table(line{"0", 0, "0"}, line{"1", 0, "0"}, line{"2", 0, "0"})},
		{"posvals", series(LlquantizeParams{Factor: 2, Lmag: 0, Hmag: 1, Steps: 2}, []add{{1, 1}}),
			table(line{"0", 0, "0"}, line{"1", 40, "1"}, line{"2", 0, "0"})},
		{"negvals", series(LlquantizeParams{Factor: 2, Lmag: 0, Hmag: 1, Steps: 2}, []add{{2, -1}}), "\n" + quantHeader +
			"               1                                         | 0        \n" +
			"               2 @@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@| -1       \n" +
			"            >= 4                                         | 0        \n\n"},
		{"allvals", series(LlquantizeParams{Factor: 2, Lmag: 0, Hmag: 1, Steps: 2}, []add{{1, 1}, {2, -1}}), "\n" + quantHeader +
			"               0                     |                     0        \n" +
			"               1                     |@@@@@@@@@@           1        \n" +
			"               2           @@@@@@@@@@|                     -1       \n" +
			"            >= 4                     |                     0        \n\n"},
		{"singlerangeA", series(LlquantizeParams{Factor: 4, Lmag: 0, Hmag: 0, Steps: 4}, single()), singleWant},
		{"singlerangeB", series(LlquantizeParams{Factor: 4, Lmag: 0, Hmag: 0, Steps: 8}, single()), singleWant},
		{"straightlog", series(LlquantizeParams{Factor: 10, Lmag: 0, Hmag: 3, Steps: 1}, []add{
			{-100000, 100108}, {-10000, 100208}, {-1000, 100308}, {-100, 100408}, {-10, 100508},
			{-1, 100608}, {0, 100708}, {1, 100808}, {10, 100908}, {100, 101008}, {1000, 101108},
			{10000, 101208}, {100000, 101308}}), table(
			line{"<= -10000", 6, "200316"}, line{"-1000", 3, "100308"}, line{"-100", 3, "100408"},
			line{"-10", 3, "100508"}, line{"-1", 3, "100608"}, line{"0", 3, "100708"},
			line{"1", 3, "100808"}, line{"10", 3, "100908"}, line{"100", 3, "101008"},
			line{"1000", 3, "101108"}, line{">= 10000", 6, "202516"})},
		{"shift", series(LlquantizeParams{Factor: 2, Lmag: 0, Hmag: 1, Steps: 2}, []add{{-3, 1}, {3, 1}}), table(
			line{"<= -4", 0, "0"}, line{"-2", 20, "1"}, line{"-1", 0, "0"}, line{"0", 0, "0"},
			line{"1", 0, "0"}, line{"2", 20, "1"}, line{">= 4", 0, "0"})},
		// The bins either side of the data are ghost bins, which borrow
		// the labels of their neighbours.
		{"ghostbin", series(LlquantizeParams{Factor: 2, Lmag: 0, Hmag: 1, Steps: 4}, []add{{-1, 1}, {1, 1}}), table(
			line{"-2", 0, "0"}, line{"-1", 20, "1"}, line{"0", 0, "0"}, line{"1", 20, "1"}, line{"2", 0, "0"})},
	}
	for _, tt := range tests {
		if got := writePrinta(t, tt.agg); got != tt.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}

func TestLlquantizeLabels(t *testing.T) {
	// basicD of tst.llquantize_basic: lmag 4, so the zero bin is
	// "abs() < 256" when negative bins are drawn.
	p := LlquantizeParams{Factor: 4, Lmag: 4, Hmag: 6, Steps: 32}
	b := make([]int64, p.Len())
	b[p.Bucket(255)] += 2
	b[p.Bucket(-256+1)] += 128
	b[p.Bucket(256)] += 256
	b[p.Bucket(-256)] += 256
	var got bytes.Buffer
	if err := WriteLlquantize(&got, p, b, 1); err != nil {
		t.Fatal(err)
	}
	want := quantHeader +
		row("-288", 0, "0") +
		"            -256 |@@@@@@@@@@@@@@@@                         256      \n" +
		"     abs() < 256 |@@@@@@@@                                 130      \n" +
		"             256 |@@@@@@@@@@@@@@@@                         256      \n" +
		row("288", 0, "0")
	if got.String() != want {
		t.Errorf("got\n%s\nwant\n%s", got.String(), want)
	}
	// When the first bin drawn is the zero bin, it reads "< 256".
	b = make([]int64, p.Len())
	b[p.Bucket(300)] = 1
	b[p.Bucket(256)] = 1
	got.Reset()
	WriteLlquantize(&got, p, b, 1)
	if !strings.Contains(got.String(), "           < 256 |") {
		t.Errorf("got\n%s", got.String())
	}
}

func TestAggValues(t *testing.T) {
	key := []printf.Value{printf.Str("bash")}
	tests := []struct {
		name string
		a    *Aggregation
		want string
	}{
		{"count", &Aggregation{Func: Count, Rows: []Row{{Keys: key, Value: 3}}},
			"  bash                                                              3\n"},
		{"sum negative", &Aggregation{Func: Sum, Rows: []Row{{Keys: key, Value: -30}}},
			"  bash                                                            -30\n"},
		{"avg", &Aggregation{Func: Avg, Rows: []Row{{Keys: key, Count: 3, Sum: 10}}},
			"  bash                                                              3\n"},
		{"avg normalized", &Aggregation{Func: Avg, Normal: 2, Rows: []Row{{Keys: key, Count: 3, Sum: 10}}},
			"  bash                                                              1\n"},
		// stddev of 2, 4, 4, 4, 5, 5, 7, 9 is 2.
		{"stddev", &Aggregation{Func: Stddev, Rows: []Row{{Keys: key, Count: 8, Sum: 40, SumSq: [2]uint64{232, 0}}}},
			"  bash                                                              2\n"},
		{"count normalized", &Aggregation{Func: Count, Normal: 1000, Rows: []Row{{Keys: key, Value: 123456}}},
			"  bash                                                            123\n"},
		{"two keys", &Aggregation{Func: Count, Rows: []Row{{Keys: []printf.Value{printf.Str("sh"), printf.Sized(42, 4, true)}, Value: 1}}},
			"  sh                                                       42                1\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := WriteAgg(&b, tt.a); err != nil {
			t.Fatal(err)
		}
		if b.String() != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, b.String(), tt.want)
		}
	}
}

func TestEmptyStringKeyDumps(t *testing.T) {
	a := &Aggregation{Func: Count, StrSize: 20, Rows: []Row{{Keys: []printf.Value{printf.Str("")}, Value: 1}}}
	var b bytes.Buffer
	WriteAgg(&b, a)
	want := "\n" +
		"             0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f  0123456789abcdef\n" +
		"         0: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  ................\n" +
		"        10: 00 00 00 00                                      ....\n" +
		"                1\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// DTrace's default order: by value, ties by key; aggsortrev reverses it,
// aggsortkey sorts by key, aggsortkeypos picks the key compared first.
func TestSortOrder(t *testing.T) {
	k := func(s string, n int64) []printf.Value {
		return []printf.Value{printf.Str(s), printf.Sized(uint64(n), 4, true)}
	}
	rows := []Row{
		{Keys: k("b", 1), Value: 5},
		{Keys: k("a", 2), Value: 5},
		{Keys: k("c", 0), Value: 1},
		{Keys: k("a", 1), Value: 9},
	}
	order := func(o SortOptions) string {
		a := &Aggregation{Func: Count, Sort: o, Rows: rows}
		r := append([]Row(nil), rows...)
		sortRows(a, r)
		var s []string
		for _, x := range r {
			s = append(s, fmt.Sprintf("%s%d", x.Keys[0].Str, x.Keys[1].Int64()))
		}
		return strings.Join(s, " ")
	}
	tests := []struct {
		o    SortOptions
		want string
	}{
		{SortOptions{}, "c0 a2 b1 a1"},
		{SortOptions{Reverse: true}, "a1 b1 a2 c0"},
		{SortOptions{ByKey: true}, "a1 a2 b1 c0"},
		{SortOptions{ByKey: true, KeyPos: 1}, "c0 a1 b1 a2"},
		{SortOptions{ByKey: true, KeyPos: 5}, "a1 a2 b1 c0"},
	}
	for _, tt := range tests {
		if got := order(tt.o); got != tt.want {
			t.Errorf("%+v: got %s, want %s", tt.o, got, tt.want)
		}
	}
}

func TestQuantizeBuckets(t *testing.T) {
	tests := []struct {
		v    int64
		want int64 // the bucket's label
	}{
		{0, 0}, {1, 1}, {2, 2}, {3, 2}, {4, 4}, {1023, 512}, {-1, -1}, {-2, -2}, {-3, -2}, {-4, -4},
		{1 << 62, 1 << 62}, {1<<63 - 1, 1 << 62}, {-1 << 63, -1 << 62},
	}
	for _, tt := range tests {
		if got := QuantizeBucketValue(QuantizeBucket(tt.v)); got != tt.want {
			t.Errorf("bucket of %d is labelled %d, want %d", tt.v, got, tt.want)
		}
	}
	var b bytes.Buffer
	if err := WriteQuantize(&b, make([]int64, QuantizeBuckets), 1); err != nil {
		t.Fatal(err)
	}
	if want := quantHeader + row("-1", 0, "0") + row("0", 0, "0") + row("1", 0, "0"); b.String() != want {
		t.Errorf("empty quantize: got\n%s\nwant\n%s", b.String(), want)
	}
	if err := WriteQuantize(&b, make([]int64, 3), 1); err != ErrMismatch {
		t.Errorf("short buckets: err = %v", err)
	}
}

// Every value lands in a bucket that the table draws with a label, and
// buckets grow with values, for a spread of llquantize() parameters.
func TestLlquantizeBucketProperties(t *testing.T) {
	for factor := uint16(2); factor <= 10; factor++ {
		for lmag := uint16(0); lmag <= 2; lmag++ {
			for hmag := lmag; hmag <= lmag+2; hmag++ {
				for _, steps := range []uint16{1, 2, factor, factor * 2, factor * factor} {
					p := LlquantizeParams{Factor: factor, Lmag: lmag, Hmag: hmag, Steps: steps}
					if p.Len() == 0 {
						continue
					}
					if steps%factor != 0 && factor%steps != 0 {
						continue // the D compiler rejects these
					}
					prev := 0
					for v := int64(-2000); v <= 2000; v += 7 {
						bk := p.Bucket(v)
						if bk < 0 || bk >= p.Len() || bk < prev {
							t.Fatalf("%+v: Bucket(%d) = %d (previous %d, len %d)", p, v, bk, prev, p.Len())
						}
						prev = bk
						b := make([]int64, p.Len())
						b[bk] = 1
						var out bytes.Buffer
						if err := WriteLlquantize(&out, p, b, 1); err != nil {
							t.Fatal(err)
						}
						if !strings.Contains(out.String(), "|@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@ 1 ") {
							t.Fatalf("%+v: value %d (bucket %d) not drawn:\n%s", p, v, bk, out.String())
						}
					}
				}
			}
		}
	}
	bad := LlquantizeParams{Factor: 1, Steps: 1}
	if bad.Len() != 0 || bad.Bucket(5) != -1 {
		t.Errorf("invalid parameters: Len %d, Bucket %d", bad.Len(), bad.Bucket(5))
	}
	if err := WriteLlquantize(&bytes.Buffer{}, bad, nil, 1); err != ErrMismatch {
		t.Errorf("invalid parameters: err = %v", err)
	}
}
