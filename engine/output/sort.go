// This file orders an aggregation's rows as dt_aggregate.c does: by value,
// ties broken by key; or by key under aggsortkey.

package output

import (
	"github.com/dstar-trace/dstar/dcompiler/quant"
	"math/big"
	"slices"

	"github.com/dstar-trace/dstar/dcompiler/printf"
)

func sortRows(a *Aggregation, rows []Row) {
	slices.SortStableFunc(rows, func(l, r Row) int {
		c := 0
		if a.Sort.ByKey {
			c = a.compareKeys(&l, &r)
		} else if c = a.compareValues(&l, &r); c == 0 {
			c = a.compareKeys(&l, &r)
		}
		if a.Sort.Reverse {
			c = -c
		}
		return c
	})
}

// compareKeys compares keys starting at the KeyPos'th: first by their
// record size, then integers as unsigned numbers and strings byte by byte.
func (a *Aggregation) compareKeys(l, r *Row) int {
	n := min(len(l.Keys), len(r.Keys))
	if c := cmp3(len(l.Keys), len(r.Keys)); c != 0 {
		return c
	}
	pos := a.Sort.KeyPos
	if pos < 0 || pos+1 >= n+1 {
		pos = 0
	}
	for i := 0; i < n; i++ {
		k := (i + pos) % n
		if c := a.compareKey(l.Keys[k], r.Keys[k]); c != 0 {
			return c
		}
	}
	return 0
}

func (a *Aggregation) keySize(k printf.Value) int {
	if k.Kind == printf.StringValue {
		return a.strSize()
	}
	switch k.Size {
	case 1, 2, 4:
		return k.Size
	}
	return 8
}

func (a *Aggregation) compareKey(l, r printf.Value) int {
	if c := cmp3(a.keySize(l), a.keySize(r)); c != 0 {
		return c
	}
	if l.Kind == printf.StringValue || r.Kind == printf.StringValue {
		return cmp3(l.Str, r.Str)
	}
	return cmp3(l.Uint64(), r.Uint64())
}

func cmp3[T int | int64 | uint64 | string](l, r T) int {
	switch {
	case l < r:
		return -1
	case l > r:
		return 1
	}
	return 0
}

// compareValues compares the aggregated values: counts, sums, minima and
// maxima as signed numbers; averages (not normalized) and standard
// deviations by what they compute to; distributions by the sum of each
// bin's value times its count, ties broken by the count at zero.
func (a *Aggregation) compareValues(l, r *Row) int {
	switch a.Func {
	case Avg:
		return cmp3(AvgValue(l.Count, l.Sum, 1), AvgValue(r.Count, r.Sum, 1))
	case Stddev:
		return cmp3(StddevValue(l.Count, l.Sum, l.SumSq, 1), StddevValue(r.Count, r.Sum, r.SumSq, 1))
	case Quantize, Lquantize, Llquantize:
		lw, lz := a.weight(l.Buckets)
		rw, rz := a.weight(r.Buckets)
		if c := lw.Cmp(rw); c != 0 {
			return c
		}
		return cmp3(lz, rz)
	}
	return cmp3(l.Value, r.Value)
}

// weight returns a distribution's weighted sum and its count at zero.
func (a *Aggregation) weight(b []int64) (*big.Rat, int64) {
	sum := new(big.Rat)
	add := func(count int64, value *big.Rat) {
		sum.Add(sum, new(big.Rat).Mul(new(big.Rat).SetInt64(count), value))
	}
	at := func(i int) int64 {
		if i >= 0 && i < len(b) {
			return b[i]
		}
		return 0
	}
	var zero int64
	switch a.Func {
	case Quantize:
		for i := range b {
			add(b[i], new(big.Rat).SetInt64(QuantizeBucketValue(i)))
		}
		zero = at(quantizeZero)
	case Lquantize:
		p := a.Lquantize
		base := int64(p.Base)
		add(at(0), new(big.Rat).SetInt64(base-1))
		for i := 0; i < int(p.Levels); i++ {
			v := base + int64(i)*int64(p.Step)
			add(at(i+1), new(big.Rat).SetInt64(v))
			if v == 0 {
				zero = at(i + 1)
			}
		}
		end := base + int64(p.Levels)*int64(p.Step)
		add(at(int(p.Levels)+1), new(big.Rat).SetInt64(end+1))
		switch {
		case base-1 == 0:
			zero = at(0)
		case end+1 == 0:
			zero = at(int(p.Levels) + 1)
		}
	case Llquantize:
		// dtrace-utils' dt_aggregate_llquantizedsum: each positive bin
		// and its negative mirror weigh by the positive bin's lower
		// bound; the scale of the step bins is not rounded.
		p := a.Llquantize
		if !p.Valid() {
			return sum, 0
		}
		z := p.Zero()
		f, steps := int64(p.Factor), int64(p.Steps)
		sf := steps / f
		mirror := func(i int, w *big.Rat) { add(at(z+i)-at(z-i), w) }
		mirror(1, new(big.Rat).SetInt(new(big.Int).SetUint64(quant.Pow(uint64(f), int(p.Lmag)))))
		i, lmag := 1, int(p.Lmag)
		if lmag == 0 && steps > f {
			for step := int64(2); step <= f; step++ {
				i += int(sf)
				mirror(i, new(big.Rat).SetInt64(step))
			}
			lmag = 1
		}
		scale := new(big.Rat).SetFrac(new(big.Int).SetUint64(quant.Pow(uint64(f), lmag+1)), big.NewInt(steps))
		for mag := lmag; mag <= int(p.Hmag); mag++ {
			for step := sf + 1; step <= steps; step++ {
				i++
				mirror(i, new(big.Rat).Mul(new(big.Rat).SetInt64(step), scale))
			}
			scale.Mul(scale, new(big.Rat).SetInt64(f))
		}
		zero = at(z)
	}
	return sum, zero
}

// CompareRank compares two rows as trunc( ) ranks them: by value, ties
// broken by key, whatever the sort options (dtrace's trunc walks the rows
// in this order, descending to keep the largest and ascending to keep the
// smallest).
func CompareRank(a *Aggregation, l, r *Row) int {
	if c := a.compareValues(l, r); c != 0 {
		return c
	}
	plain := *a
	plain.Sort = SortOptions{}
	return plain.compareKeys(l, r)
}
