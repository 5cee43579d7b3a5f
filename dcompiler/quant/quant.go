// Package quant defines the bucket layouts of D's distribution
// aggregations — quantize(), lquantize() and llquantize(): which bucket
// counts a value. The code generator computes the same buckets in BPF, and
// the printer labels them; both follow this package.
package quant

import "math"

// QuantizeBuckets is the number of buckets of a quantize() aggregation:
// 63 negative powers of two, zero, and 63 positive powers of two.
const QuantizeBuckets = 127

const QuantizeZero = 63

// QuantizeBucketValue returns the value that labels bucket i: -2^62 ...
// -2, -1, 0, 1, 2, 4 ... 2^62.
func QuantizeBucketValue(i int) int64 {
	switch {
	case i < QuantizeZero:
		return -(int64(1) << (QuantizeZero - i - 1))
	case i == QuantizeZero:
		return 0
	}
	return int64(1) << (i - QuantizeZero - 1)
}

// QuantizeBucket returns the bucket that counts v: for v >= 0 the largest
// bucket whose value is at most v; for v < 0 the bucket of the negative
// power of two nearest zero that is at least |v| away ("-2" counts -2 and
// -3).
func QuantizeBucket(v int64) int {
	if v < 0 {
		for i := 0; i < QuantizeZero; i++ {
			if v <= QuantizeBucketValue(i) {
				return i
			}
		}
	}
	for i := QuantizeZero + 1; i < QuantizeBuckets; i++ {
		if v < QuantizeBucketValue(i) {
			return i - 1
		}
	}
	return QuantizeBuckets - 1
}

// Lquantize are lquantize()'s parameters.
type Lquantize struct {
	Base   int32
	Step   uint16
	Levels uint16
}

// Len returns the number of buckets: one below Base, Levels of width Step,
// and one at or above Base + Levels*Step.
func (p Lquantize) Len() int { return int(p.Levels) + 2 }

// Bucket returns the bucket that counts v.
func (p Lquantize) Bucket(v int64) int {
	base := int64(p.Base)
	switch {
	case v < base:
		return 0
	case v >= base+int64(p.Levels)*int64(p.Step):
		return int(p.Levels) + 1
	}
	return 1 + int((v-base)/int64(p.Step))
}

// Llquantize are llquantize()'s parameters: the factor, the low and
// high magnitudes, and the steps per magnitude.
type Llquantize struct {
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

func (p Llquantize) Valid() bool {
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

func (p Llquantize) Zero() int {
	f, s := int(p.Factor), int(p.Steps)
	return 1 + (int(p.Hmag)-int(p.Lmag)+1)*(s-s/f)
}

// Len returns the number of buckets, 0 if the parameters are invalid.
func (p Llquantize) Len() int {
	if !p.Valid() {
		return 0
	}
	return 2*p.Zero() + 1
}

func Pow(f uint64, n int) uint64 {
	v := uint64(1)
	for ; n > 0; n-- {
		v *= f
	}
	return v
}

// bounds calls fn with each positive bin's offset from the zero bin and the
// least value it counts, in increasing order; the last is the overflow bin.
func (p Llquantize) Bounds(fn func(k int, lower uint64)) {
	f, steps := uint64(p.Factor), uint64(p.Steps)
	sf := steps / f
	mag := int(p.Lmag)
	k := 1
	fn(k, Pow(f, mag))
	if mag == 0 && steps > f {
		for step := uint64(2); step <= f; step++ {
			k += int(sf)
			fn(k, step)
		}
		mag++
	}
	scale := Pow(f, mag+1) / steps
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
func (p Llquantize) Bucket(v int64) int {
	if !p.Valid() {
		return -1
	}
	mag := uint64(v)
	if v < 0 {
		mag = -mag
	}
	zero := p.Zero()
	k := 0
	p.Bounds(func(off int, lower uint64) {
		if mag >= lower {
			k = off
		}
	})
	if top := Pow(uint64(p.Factor), int(p.Hmag)+1); mag >= top {
		k = zero
	}
	if v < 0 {
		return zero - k
	}
	return zero + k
}

// Value returns a value that bucket i counts, to label it: the least value
// of its range (the base minus one for the bucket below the base).
func (p Lquantize) Value(i int) int64 {
	if i == 0 {
		return int64(p.Base) - 1
	}
	return int64(p.Base) + int64(i-1)*int64(p.Step)
}

// Value returns a value that bucket i counts, to label it: the least
// magnitude of its range, negated for the negative buckets.
func (p Llquantize) Value(i int) int64 {
	zero := p.Zero()
	k := i - zero
	if k < 0 {
		k = -k
	}
	var v uint64
	p.Bounds(func(off int, lower uint64) {
		if off == k {
			v = lower
		}
	})
	if k == zero {
		v = Pow(uint64(p.Factor), int(p.Hmag)+1)
	}
	if i < zero {
		return -int64(v)
	}
	return int64(v)
}
