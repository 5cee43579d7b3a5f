// This file draws the distribution tables of quantize(), lquantize() and
// llquantize() (dt_consume.c: dt_print_quantize, dt_print_lquantize,
// dt_print_llquantize, dt_print_quantline), and defines the bucket layouts
// the tables read.

package output

import (
	"errors"
	"io"
	"math"
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

// QuantizeBuckets is the number of buckets of a quantize() aggregation:
// 63 negative powers of two, zero, and 63 positive powers of two.
const QuantizeBuckets = 127

const quantizeZero = 63

// QuantizeBucketValue returns the value that labels bucket i: -2^62 ...
// -2, -1, 0, 1, 2, 4 ... 2^62.
func QuantizeBucketValue(i int) int64 {
	switch {
	case i < quantizeZero:
		return -(int64(1) << (quantizeZero - i - 1))
	case i == quantizeZero:
		return 0
	}
	return int64(1) << (i - quantizeZero - 1)
}

// QuantizeBucket returns the bucket that counts v: for v >= 0 the largest
// bucket whose value is at most v; for v < 0 the bucket of the negative
// power of two nearest zero that is at least |v| away ("-2" counts -2 and
// -3).
func QuantizeBucket(v int64) int {
	if v < 0 {
		for i := 0; i < quantizeZero; i++ {
			if v <= QuantizeBucketValue(i) {
				return i
			}
		}
	}
	for i := quantizeZero + 1; i < QuantizeBuckets; i++ {
		if v < QuantizeBucketValue(i) {
			return i - 1
		}
	}
	return QuantizeBuckets - 1
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

// LquantizeParams are lquantize()'s parameters.
type LquantizeParams struct {
	Base   int32
	Step   uint16
	Levels uint16
}

// Len returns the number of buckets: one below Base, Levels of width Step,
// and one at or above Base + Levels*Step.
func (p LquantizeParams) Len() int { return int(p.Levels) + 2 }

// Bucket returns the bucket that counts v.
func (p LquantizeParams) Bucket(v int64) int {
	base := int64(p.Base)
	switch {
	case v < base:
		return 0
	case v >= base+int64(p.Levels)*int64(p.Step):
		return int(p.Levels) + 1
	}
	return 1 + int((v-base)/int64(p.Step))
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

// LlquantizeParams are llquantize()'s parameters: the factor, the low and
// high magnitudes, and the steps per magnitude.
type LlquantizeParams struct {
	Factor, Lmag, Hmag, Steps uint16
}

// The llquantize() layout (dtrace-utils, which counts negative values too):
//
//	bin 0            values <= -Factor^(Hmag+1)
//	bins 1..zero-1   negative ranges, mirroring the positive ones
//	bin zero         values with |v| < Factor^Lmag
//	bins zero+1..    positive ranges: for each magnitude m in Lmag..Hmag,
//	                 the steps Steps/Factor+1 .. Steps of Factor^(m+1)/Steps
//	last bin         values >= Factor^(Hmag+1)
//
// When Lmag is 0 and Steps > Factor, the first magnitude's bins are 1, 2,
// ... Factor, spaced Steps/Factor bins apart; the bins between them are
// never counted ("ghost bins").

func (p LlquantizeParams) valid() bool {
	if p.Factor < 2 || p.Steps == 0 || p.Hmag < p.Lmag {
		return false
	}
	// Factor^(Hmag+1) must fit, as the D compiler makes sure it does.
	v := uint64(1)
	for i := 0; i <= int(p.Hmag); i++ {
		if v > math.MaxInt64/uint64(p.Factor) {
			return false
		}
		v *= uint64(p.Factor)
	}
	return true
}

func (p LlquantizeParams) zero() int {
	f, s := int(p.Factor), int(p.Steps)
	return 1 + (int(p.Hmag)-int(p.Lmag)+1)*(s-s/f)
}

// Len returns the number of buckets, 0 if the parameters are invalid.
func (p LlquantizeParams) Len() int {
	if !p.valid() {
		return 0
	}
	return 2*p.zero() + 1
}

func pow(f uint64, n int) uint64 {
	v := uint64(1)
	for ; n > 0; n-- {
		v *= f
	}
	return v
}

// bounds calls fn with each positive bin's offset from the zero bin and the
// least value it counts, in increasing order; the last is the overflow bin.
func (p LlquantizeParams) bounds(fn func(k int, lower uint64)) {
	f, steps := uint64(p.Factor), uint64(p.Steps)
	sf := steps / f
	mag := int(p.Lmag)
	k := 1
	fn(k, pow(f, mag))
	if mag == 0 && steps > f {
		for step := uint64(2); step <= f; step++ {
			k += int(sf)
			fn(k, step)
		}
		mag++
	}
	scale := pow(f, mag+1) / steps
	for ; mag <= int(p.Hmag); mag++ {
		for step := sf + 1; step <= steps; step++ {
			k++
			fn(k, step*scale)
		}
		scale *= f
	}
}

// Bucket returns the bucket that counts v, or -1 if the parameters are
// invalid.
func (p LlquantizeParams) Bucket(v int64) int {
	if !p.valid() {
		return -1
	}
	mag := uint64(v)
	if v < 0 {
		mag = -mag
	}
	zero := p.zero()
	k := 0
	p.bounds(func(off int, lower uint64) {
		if mag >= lower {
			k = off
		}
	})
	if top := pow(uint64(p.Factor), int(p.Hmag)+1); mag >= top {
		k = zero
	}
	if v < 0 {
		return zero - k
	}
	return zero + k
}

// WriteLlquantize draws an llquantize() table as dtrace-utils does: the
// bins from one below the first non-zero one to one above the last (the
// zero bin and its neighbours when all are zero), skipping the ghost bins.
func WriteLlquantize(w io.Writer, p LlquantizeParams, buckets []int64, normal uint64) error {
	if !p.valid() || len(buckets) != p.Len() {
		return ErrMismatch
	}
	nbins, zero := len(buckets), p.zero()
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
	scale := pow(uint64(p.Factor), int(p.Lmag))
	switch {
	case scale == 1:
		set(zero, "0")
	case first >= zero:
		set(zero, "< "+u(scale))
	default:
		set(zero, "abs() < "+u(scale))
	}
	p.bounds(func(k int, lower uint64) {
		set(zero-k, "-"+u(lower))
		set(zero+k, u(lower))
	})
	top := pow(uint64(p.Factor), int(p.Hmag)+1)
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
