// This file prints aggregations as DTrace does at exit and for printa()
// without a format (dt_consume.c: dt_print_aggs, dt_print_datum), sorted as
// dt_aggregate.c sorts them.

package output

import (
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/dstar-trace/dstar/dcompiler/printf"
)

// Func is an aggregating function.
type Func int

// The aggregating functions.
const (
	Count Func = iota
	Sum
	Avg
	Min
	Max
	Stddev
	Quantize
	Lquantize
	Llquantize
)

// Aggregation is one aggregation's data, merged across CPUs.
type Aggregation struct {
	// Name is the aggregation's name without '@' ("" for @).
	Name string
	Func Func
	// Lquantize and Llquantize are the parameters of those functions.
	Lquantize  LquantizeParams
	Llquantize LlquantizeParams
	// Normal is normalize()'s divisor; 0 or 1 means none.
	Normal uint64
	// StrSize is the size of a string key's buffer (the strsize option);
	// 0 means 256. It matters only for keys DTrace dumps as raw bytes.
	StrSize int
	// Sort says how rows are ordered; the zero value is DTrace's default.
	Sort SortOptions
	// Folded prints rows keyed by a stack as folded stacks (-x
	// stackfmt=folded); see Foldable.
	Folded bool
	Rows   []Row
}

// Row is one key's data.
type Row struct {
	// Keys are the key's values. An integer key prints in a field that
	// depends on its Size: 3 columns for 1 byte, 5 for 2, 8 for 4 and 16
	// for 8.
	Keys []printf.Value
	// Value is the result of count(), sum(), min() and max().
	Value int64
	// Count and Sum are how many values avg() and stddev() have seen and
	// their sum.
	Count, Sum int64
	// SumSq is stddev()'s sum of squares, 128 bits: low word first.
	SumSq [2]uint64
	// PerCPU breaks the row down by CPU (-x aggpercpu), for the CPUs
	// that contributed.
	PerCPU []CPURow
	// Buckets are the counts of quantize(), lquantize() and llquantize(),
	// laid out as QuantizeBucket and the Bucket methods of the parameters
	// say.
	Buckets []int64
}

// CPURow is one CPU's part of a row.
type CPURow struct {
	CPU int
	Row Row
}

// SortOptions are the aggsortkey, aggsortrev and aggsortkeypos options.
type SortOptions struct {
	// ByKey sorts by key instead of by value.
	ByKey bool
	// Reverse reverses the order.
	Reverse bool
	// KeyPos is the key that compares first (keys are then compared in
	// order from there, wrapping around).
	KeyPos int
	// AggPos is which aggregation of a printa() with several orders the
	// rows (aggsortpos).
	AggPos int
}

// WriteAgg writes the aggregation's rows, sorted: each row's keys, then its
// value, then a newline. A quantize table starts on a new line and is
// followed by an empty line. An aggregation with no rows writes nothing.
// Nothing is written before the first row: at exit dtrace prints one "\n"
// before all aggregations (WriteFinal), and printa() without a format prints
// "\n" before each (WritePrinta). With Folded, a stack-keyed aggregation
// is written as folded stacks instead.
func WriteAgg(w io.Writer, a *Aggregation) error {
	if a.Folded && Foldable(a) {
		return writeFolded(w, a)
	}
	rows := append([]Row(nil), a.Rows...)
	sortRows(a, rows)
	var b strings.Builder
	for i := range rows {
		r := &rows[i]
		for _, k := range r.Keys {
			b.WriteString(a.key(k))
		}
		if err := a.writeValue(&b, r); err != nil {
			return err
		}
		b.WriteString("\n")
		// -x aggpercpu: each CPU's part, after the total.
		for _, pc := range r.PerCPU {
			b.WriteString("    [CPU " + strconv.Itoa(pc.CPU) + "]")
			if err := a.writeValue(&b, &pc.Row); err != nil {
				return err
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WritePrinta writes what printa(@a) with no format string prints: a
// newline, then the aggregation.
func WritePrinta(w io.Writer, a *Aggregation) error {
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return WriteAgg(w, a)
}

// WriteFinal writes what dtrace prints when tracing stops: one newline
// (printed even in quiet mode and even with no aggregations), then each
// aggregation in turn, with nothing between them (without the newline when
// every aggregation prints as folded stacks). aggs must be in the
// order DTrace numbers aggregation variables: their first appearance in the
// program. Aggregations already printed by printa() are left out by the
// caller.
func WriteFinal(w io.Writer, aggs []*Aggregation) error {
	// Folded stacks are read by other tools, which take an empty line
	// for a malformed stack: when everything prints folded, the newline
	// is left out.
	if !allFolded(aggs) {
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	for _, a := range aggs {
		if err := WriteAgg(w, a); err != nil {
			return err
		}
	}
	return nil
}

func (a *Aggregation) strSize() int {
	if a.StrSize > 0 {
		return a.StrSize
	}
	return 256
}

// key formats one key as dt_print_datum does: integers right-aligned by
// size (1- and 2-byte ones as unsigned, 4- and 8-byte ones as signed,
// whatever their type), strings left-aligned in 50 columns.
func (a *Aggregation) key(k printf.Value) string {
	switch k.Kind {
	case printf.StringValue:
		buf := []byte(k.Str)
		if n := a.strSize(); len(buf) < n {
			buf = append(buf, make([]byte, n-len(buf))...)
		}
		return Bytes(buf, 50)
	case printf.FloatValue:
		return " " + padLeft(strconv.FormatFloat(k.Float, 'g', -1, 64), 16)
	case printf.StackValue:
		return Stack(k.Frames)
	case printf.SymbolValue:
		return Symbol(k.Str)
	}
	switch k.Size {
	case 1:
		return " " + udec(uint64(uint8(k.Bits)), 3)
	case 2:
		return " " + udec(uint64(uint16(k.Bits)), 5)
	case 4:
		return " " + dec(int64(int32(k.Bits)), 8)
	}
	return " " + dec(int64(k.Bits), 16)
}

func (a *Aggregation) writeValue(b *strings.Builder, r *Row) error {
	switch a.Func {
	case Quantize:
		return WriteQuantize(b, r.Buckets, a.Normal)
	case Lquantize:
		return WriteLquantize(b, a.Lquantize, r.Buckets, a.Normal)
	case Llquantize:
		return WriteLlquantize(b, a.Llquantize, r.Buckets, a.Normal)
	case Avg:
		b.WriteString(" " + dec(AvgValue(r.Count, r.Sum, a.Normal), 16))
	case Stddev:
		b.WriteString(" " + udec(StddevValue(r.Count, r.Sum, r.SumSq, a.Normal), 16))
	default:
		b.WriteString(" " + dec(normDiv(r.Value, a.Normal), 16))
	}
	return nil
}

// AvgValue returns what avg() prints: sum/normal/count in integer
// arithmetic, 0 when count is 0.
func AvgValue(count, sum int64, normal uint64) int64 {
	if count == 0 {
		return 0
	}
	n := int64(normal)
	if n == 0 {
		n = 1
	}
	return sum / n / count
}

// StddevValue returns what stddev() prints: the integer square root of the
// average of the squares less the square of the (integer) average, 0 when
// count is 0. Normalizing divides the squares by normal², as illumos does
// (dtrace-utils divides them by normal only).
func StddevValue(count, sum int64, sumsq [2]uint64, normal uint64) uint64 {
	if count == 0 {
		return 0
	}
	if normal == 0 {
		normal = 1
	}
	sq := new(big.Int).SetUint64(sumsq[1])
	sq.Lsh(sq, 64).Or(sq, new(big.Int).SetUint64(sumsq[0]))
	nb := new(big.Int).SetUint64(normal)
	sq.Quo(sq, nb).Quo(sq, nb).Quo(sq, new(big.Int).SetUint64(uint64(count)))

	avg := sum / int64(normal) / count
	if avg < 0 {
		avg = -avg
	}
	av := new(big.Int).SetUint64(uint64(avg))
	av.Mul(av, av)

	// 128-bit unsigned subtraction, wrapping as DTrace's does.
	diff := new(big.Int).Sub(sq, av)
	if diff.Sign() < 0 {
		diff.Add(diff, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	return diff.Sqrt(diff).Uint64()
}

// WritePrintaFormat writes what printa(format, @a, @b, ...) prints: one
// line per key any of the aggregations has, the key's values filling the
// format's conversions in order and each %@ conversion taking the next
// aggregation's value for the key (zero where an aggregation lacks it).
// Rows are ordered as sortJoined says.
func WritePrintaFormat(w io.Writer, f *printf.Format, aggs []*Aggregation) error {
	var rows []*joinedRow
	byKey := map[string]*joinedRow{}
	for i, a := range aggs {
		for n := range a.Rows {
			r := &a.Rows[n]
			k := keyString(r.Keys)
			j := byKey[k]
			if j == nil {
				j = &joinedRow{keys: r.Keys, rows: make([]*Row, len(aggs))}
				byKey[k] = j
				rows = append(rows, j)
			}
			j.rows[i] = r
		}
	}
	// A missing value counts as an empty row: zero, or an empty
	// distribution.
	zero := make([]Row, len(aggs))
	for i, a := range aggs {
		if n := a.buckets(); n > 0 {
			zero[i].Buckets = make([]int64, n)
		}
	}
	for _, j := range rows {
		for i := range j.rows {
			if j.rows[i] == nil {
				j.rows[i] = &zero[i]
			}
		}
	}
	sortJoined(aggs, rows)
	vals := make([]printf.Value, len(aggs))
	for _, j := range rows {
		for i, a := range aggs {
			vals[i] = a.formatValue(j.rows[i])
		}
		if err := f.FprintAgg(w, j.keys, vals); err != nil && err != printf.ErrMismatch {
			return err
		}
	}
	return nil
}

// joinedRow is one key of a printa( ) with several aggregations and each
// one's row for it.
type joinedRow struct {
	keys []printf.Value
	rows []*Row
}

// sortJoined orders the rows of a printa( ) with several aggregations as
// DTrace orders its joined "bundles": by the values of the aggregation
// aggsortpos names, ties broken by the next aggregation's (wrapping
// around), then by key; under aggsortkey by key first. aggsortrev
// reverses the whole order.
func sortJoined(aggs []*Aggregation, rows []*joinedRow) {
	if len(aggs) == 0 {
		return
	}
	opts := aggs[0].Sort
	pos := opts.AggPos
	if pos < 0 || pos >= len(aggs) {
		pos = 0
	}
	slices.SortStableFunc(rows, func(l, r *joinedRow) int {
		c := 0
		keys := func() int {
			return aggs[0].compareKeys(&Row{Keys: l.keys}, &Row{Keys: r.keys})
		}
		if opts.ByKey {
			c = keys()
		}
		for n := 0; c == 0 && n < len(aggs); n++ {
			i := (pos + n) % len(aggs)
			c = aggs[i].compareValues(l.rows[i], r.rows[i])
		}
		if c == 0 && !opts.ByKey {
			c = keys()
		}
		if opts.Reverse {
			c = -c
		}
		return c
	})
}

// formatValue is what a %@ conversion prints for a row: a distribution's
// table (an empty one for a row the aggregation lacks), or its number.
func (a *Aggregation) formatValue(r *Row) printf.Value {
	switch a.Func {
	case Quantize, Lquantize, Llquantize:
		if r.Buckets == nil {
			r = &Row{Buckets: make([]int64, a.buckets())}
		}
		var b strings.Builder
		if err := a.writeValue(&b, r); err != nil {
			return printf.Table("")
		}
		return printf.Table(b.String())
	}
	return printf.Int(a.value(r))
}

// buckets is how many buckets the aggregation's rows have.
func (a *Aggregation) buckets() int {
	switch a.Func {
	case Quantize:
		return QuantizeBuckets
	case Lquantize:
		return a.Lquantize.Len()
	case Llquantize:
		return a.Llquantize.Len()
	}
	return 0
}

// value is the number a row stands for in printa formats.
func (a *Aggregation) value(r *Row) int64 {
	switch a.Func {
	case Avg:
		return AvgValue(r.Count, r.Sum, a.Normal)
	case Stddev:
		return int64(StddevValue(r.Count, r.Sum, r.SumSq, a.Normal))
	}
	return normDiv(r.Value, a.Normal)
}

func keyString(keys []printf.Value) string {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k.String())
		b.WriteByte(0)
	}
	return b.String()
}

// Sorted returns the aggregation's rows in the order they print.
func Sorted(a *Aggregation) []Row {
	rows := append([]Row(nil), a.Rows...)
	sortRows(a, rows)
	return rows
}

// RowValue is the number a row of a count, sum, avg, min, max or stddev
// aggregation prints.
func RowValue(a *Aggregation, r *Row) int64 { return a.value(r) }
