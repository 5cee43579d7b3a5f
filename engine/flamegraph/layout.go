// This file lays stacks out as frames: which function, how deep, where it
// starts and how many samples it covers.

package flamegraph

import (
	"math/bits"
	"slices"
)

// A frame is one rectangle of the graph: function name at depth (the root
// "all" is depth 0), covering samples [start, start+count) of the total.
type frame struct {
	name         string
	depth        int
	start, count uint64
}

// layout turns stacks into frames. Sorted by frames, stacks that share a
// prefix are adjacent, so one pass suffices: a frame opens where a stack
// first differs from the one before it, and closes when a later stack
// differs at or above its depth. Children thus come in name order, and a
// caller's own samples (stacks that end in it) come before its callees.
// frames[0] is the root; the others follow in pre-order, each after its
// parent. Frames that cover less than minFraction of all samples, or none,
// are left out; a frame's descendants are no wider than it, so none is
// orphaned.
// It returns the total number of samples, or errSampleOverflow.
func layout(stacks []Stack, minFraction float64) ([]frame, uint64, error) {
	var total uint64
	for _, s := range stacks {
		var carry uint64
		total, carry = bits.Add64(total, s.Count, 0)
		if carry != 0 {
			return nil, 0, errSampleOverflow
		}
	}
	// At least one sample: a frame with none is never drawn.
	minSamples := max(1, minFraction*float64(total))
	sorted := slices.Clone(stacks)
	slices.SortFunc(sorted, compareStacks)

	frames := []frame{{name: "all"}}
	// open[i] is the index in frames of the open frame at depth i+1.
	var open []int
	var prev []string
	var pos uint64
	// closeTo closes the open frames deeper than depth at pos.
	closeTo := func(depth int) {
		for len(open) > depth {
			i := open[len(open)-1]
			open = open[:len(open)-1]
			frames[i].count = pos - frames[i].start
			if float64(frames[i].count) < minSamples {
				// Everything after it is a descendant, closed already
				// and narrower still: drop them all. Big profiles would
				// otherwise hold millions of frames here.
				frames = frames[:i]
			}
		}
	}
	for _, s := range sorted {
		common := 0
		for common < len(prev) && common < len(s.Frames) && prev[common] == s.Frames[common] {
			common++
		}
		closeTo(common)
		for d := common; d < len(s.Frames); d++ {
			open = append(open, len(frames))
			frames = append(frames, frame{name: s.Frames[d], depth: d + 1, start: pos})
		}
		pos += s.Count // cannot overflow: the total did not
		prev = s.Frames
	}
	closeTo(0)
	frames[0].count = pos
	return frames, pos, nil
}
