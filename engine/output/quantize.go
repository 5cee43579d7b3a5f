// This file draws the distribution tables of quantize(), lquantize() and
// llquantize() (dt_consume.c: dt_print_quantize, dt_print_lquantize,
// dt_print_llquantize, dt_print_quantline), and defines the bucket layouts
// the tables read.

package output

import (
	"errors"
	"github.com/dstar-trace/dstar/dcompiler/quant"
	"io"
	"math/big"
	"strconv"
	"strings"
)

// ErrMismatch reports buckets that do not fit the aggregation's layout; it
// carries the text of DTrace's EDT_DMISMATCH.
var ErrMismatch = errors.New("Data record list does not match statement")

const (
	barWidth = 40
	ats      = "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
)

// quantHeader is the table's heading; it starts with a newline, so the
// table begins on the line after the aggregation's keys.
const quantHeader = "\n           value  ------------- Distribution ------------- count    \n"

// table accumulates a distribution: which bins to draw and their total.
type table struct {
	data                 []int64
	normal               uint64
	total                big.Int // sum of |count| over the drawn bins
	positives, negatives bool
}

func newTable(data []int64, normal uint64, first, last int) *table {
	t := &table{data: data, normal: normal}
	var a big.Int
	for _, v := range data[first : last+1] {
		t.positives = t.positives || v > 0
		t.negatives = t.negatives || v < 0
		t.total.Add(&t.total, absBig(&a, v))
	}
	return t
}

func absBig(z *big.Int, v int64) *big.Int {
	z.SetInt64(v)
	return z.Abs(z)
}

// depth is how many '@' a count gets in a bar of n columns: the nearest
// integer to n*|v|/total, computed exactly.
func (t *table) depth(v int64, n int) int {
	if t.total.Sign() == 0 {
		return 0
	}
	var num, den big.Int
	absBig(&num, v)
	num.Mul(&num, big.NewInt(int64(2*n)))
	num.Add(&num, &t.total)
	den.Mul(&t.total, big.NewInt(2))
	num.Quo(&num, &den)
	return int(min(num.Int64(), int64(n)))
}

// line appends one bin: its label right-aligned in 16 columns, the bar and
// the count ("%16s |%s%s %-9lld\n" and its variants for negative counts).
func (t *table) line(b *strings.Builder, label string, v int64) {
	b.WriteString(padLeft(label, 16))
	b.WriteString(" ")
	count := padRight(strconv.FormatInt(normDiv(v, t.normal), 10), 9)
	switch {
	case !t.negatives:
		d := 0
		if t.positives {
			d = t.depth(v, barWidth)
		}
		b.WriteString("|" + ats[:d] + spaces(barWidth-d) + " " + count + "\n")
	case !t.positives:
		d := t.depth(v, barWidth)
		b.WriteString(spaces(barWidth-d) + ats[:d] + "| " + count + "\n")
	default:
		// Both signs: half-length bars either side of a centre line.
		const half = barWidth / 2
		d := t.depth(v, half)
		if v <= 0 {
			b.WriteString(spaces(half-d) + ats[:d] + "|" + spaces(half) + " " + count + "\n")
		} else {
			b.WriteString(spaces(half) + "|" + ats[:d] + spaces(half-d) + " " + count + "\n")
		}
	}
}

// normDiv divides a value by normalize()'s divisor as DTrace does, which
// converts the value to unsigned first ((long long)val / normal, with
// normal a uint64_t).
func normDiv(v int64, normal uint64) int64 {
	if normal <= 1 {
		return v
	}
	return int64(uint64(v) / normal)
}

// WriteQuantize draws a quantize() table from its QuantizeBuckets counts:
// the bins from one below the first non-zero one to one above the last, or
// -1, 0 and 1 when all are zero. normal is normalize()'s divisor (0 or 1
// for none).
func WriteQuantize(w io.Writer, buckets []int64, normal uint64) error {
	if len(buckets) != QuantizeBuckets {
		return ErrMismatch
	}
	first, last := span(buckets)
	if first > last {
		first, last = quantizeZero-1, quantizeZero+1
	} else {
		first, last = max(first-1, 0), min(last+1, QuantizeBuckets-1)
	}
	t := newTable(buckets, normal, first, last)
	var b strings.Builder
	b.WriteString(quantHeader)
	for i := first; i <= last; i++ {
		t.line(&b, strconv.FormatInt(QuantizeBucketValue(i), 10), buckets[i])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// span returns the first and last non-zero buckets (first > last if none).
func span(data []int64) (first, last int) {
	first, last = 0, len(data)-1
	for first <= last && data[first] == 0 {
		first++
	}
	for last >= first && data[last] == 0 {
		last--
	}
	return first, last
}

// WriteLquantize draws an lquantize() table: like WriteQuantize, with bins
// labelled "< base", base + k*step, and ">= limit"; when all counts are zero,
// the first three bins.
func WriteLquantize(w io.Writer, p LquantizeParams, buckets []int64, normal uint64) error {
	if len(buckets) != p.Len() {
		return ErrMismatch
	}
	levels := int(p.Levels)
	first, last := span(buckets)
	if first > last {
		first, last = 0, min(2, levels+1)
	} else {
		first, last = max(first-1, 0), min(last+1, levels+1)
	}
	t := newTable(buckets, normal, first, last)
	var b strings.Builder
	b.WriteString(quantHeader)
	for i := first; i <= last; i++ {
		var label string
		switch i {
		case 0:
			label = "< " + strconv.Itoa(int(p.Base))
		case levels + 1:
			label = ">= " + strconv.Itoa(int(int32(int64(p.Base)+int64(levels)*int64(p.Step))))
		default:
			label = strconv.Itoa(int(int32(int64(p.Base) + int64(i-1)*int64(p.Step))))
		}
		t.line(&b, label, buckets[i])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteLlquantize draws an llquantize() table as dtrace-utils does: the
// bins from one below the first non-zero one to one above the last (the
// zero bin and its neighbours when all are zero), skipping the ghost bins.
func WriteLlquantize(w io.Writer, p LlquantizeParams, buckets []int64, normal uint64) error {
	if !p.Valid() || len(buckets) != p.Len() {
		return ErrMismatch
	}
	nbins, zero := len(buckets), p.Zero()
	first, last := span(buckets)
	if first > last {
		first, last = zero+1, zero+1
	}
	t := newTable(buckets, normal, first, last)
	first, last = max(first-1, 0), min(last+1, nbins-1)

	// Labels are made for the drawn bins and pad more either side, where
	// a ghost bin at either end finds the label it borrows.
	pad := 0
	if p.Lmag == 0 && p.Steps > p.Factor {
		pad = int(p.Steps / p.Factor)
	}
	labels := make([]string, last-first+1+2*pad)
	set := func(i int, s string) {
		if i >= first-pad && i <= last+pad {
			if len(s) > 15 {
				s = s[:15] // DTrace formats labels into 16-byte cells
			}
			labels[i-first+pad] = s
		}
	}
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	scale := quant.Pow(uint64(p.Factor), int(p.Lmag))
	switch {
	case scale == 1:
		set(zero, "0")
	case first >= zero:
		set(zero, "< "+u(scale))
	default:
		set(zero, "abs() < "+u(scale))
	}
	p.Bounds(func(k int, lower uint64) {
		set(zero-k, "-"+u(lower))
		set(zero+k, u(lower))
	})
	top := quant.Pow(uint64(p.Factor), int(p.Hmag)+1)
	set(0, "<= -"+u(top))
	set(nbins-1, ">= "+u(top))

	if pad > 0 {
		borrow := func(j, dir int) {
			if labels[j] != "" {
				return
			}
			for i := 1; i < pad; i++ {
				if l := labels[j+dir*i]; l != "" {
					labels[j] = l
					return
				}
			}
		}
		borrow(pad, -1)
		borrow(last-first+pad, +1)
	}

	var b strings.Builder
	b.WriteString(quantHeader)
	for i := first; i <= last; i++ {
		if l := labels[i-first+pad]; l != "" {
			t.line(&b, l, buckets[i])
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// The bucket layouts live in package quant, shared with the code
// generator.
type (
	LquantizeParams  = quant.Lquantize
	LlquantizeParams = quant.Llquantize
)

// QuantizeBuckets is the number of buckets of a quantize() aggregation.
const QuantizeBuckets = quant.QuantizeBuckets

const quantizeZero = quant.QuantizeZero

// QuantizeBucketValue returns the value that labels bucket i.
func QuantizeBucketValue(i int) int64 { return quant.QuantizeBucketValue(i) }

// QuantizeBucket returns the bucket that counts v.
func QuantizeBucket(v int64) int { return quant.QuantizeBucket(v) }
