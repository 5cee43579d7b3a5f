// This file prints stack-keyed aggregations as folded stacks (-x
// stackfmt=folded), the input of flame graph tools.

package output

import (
	"io"
	"strconv"
	"strings"

	"github.com/dstar-trace/dstar/dcompiler/printf"
	"github.com/dstar-trace/dstar/engine/flamegraph"
)

// FoldFrame is a frame as folded stacks name it: the frame without its
// offset (vmlinux`do_sys_openat2+0x5a is vmlinux`do_sys_openat2), so that
// samples anywhere in a function add up to one frame. This is what
// FlameGraph's stackcollapse.pl makes of dtrace(1)'s stacks: the module
// stays, to tell libc's read from the kernel's. An unresolved address
// (0x7f3a…) has no offset and stays as it is.
func FoldFrame(f string) string {
	if i := strings.LastIndex(f, "+0x"); i > 0 {
		f = f[:i]
	}
	// ';' separates frames and a line break ends the line: neither may
	// appear in one. Symbol names hardly ever hold them.
	return strings.Map(func(r rune) rune {
		if r == ';' || r == '\n' || r == '\r' {
			return '_'
		}
		return r
	}, f)
}

// FoldKey returns the folded frames of an aggregation key, root first:
// the keys that are not stacks, in order, as root frames (so that
// @[execname, ustack()] groups each command's stacks under its name), then
// the stacks, each outermost frame first. When a key has several stacks
// the last is the root: dtrace prints @[stack(), ustack()] kernel stack
// first, and stackcollapse.pl makes the first frame printed the leaf, so
// user code calls into the kernel, as it does. The second result is false
// when the key has no stack.
func FoldKey(keys []printf.Value) ([]string, bool) {
	var frames []string
	hasStack := false
	for _, k := range keys {
		if k.Kind != printf.StackValue {
			frames = append(frames, FoldFrame(keyText(k)))
		}
	}
	for i := len(keys) - 1; i >= 0; i-- {
		if keys[i].Kind != printf.StackValue {
			continue
		}
		hasStack = true
		fs := keys[i].Frames
		for j := len(fs) - 1; j >= 0; j-- {
			frames = append(frames, FoldFrame(fs[j]))
		}
	}
	return frames, hasStack
}

// keyText is a key that is not a stack as a folded frame: a string as
// it is, a number in decimal.
func keyText(k printf.Value) string {
	switch k.Kind {
	case printf.StringValue:
		if k.Str == "" {
			return "-"
		}
		return k.Str
	case printf.FloatValue:
		return strconv.FormatFloat(k.Float, 'g', -1, 64)
	}
	switch k.Size {
	case 1:
		return strconv.FormatUint(uint64(uint8(k.Bits)), 10)
	case 2:
		return strconv.FormatUint(uint64(uint16(k.Bits)), 10)
	case 4:
		return strconv.FormatInt(int64(int32(k.Bits)), 10)
	}
	return strconv.FormatInt(int64(k.Bits), 10)
}

// Foldable reports whether an aggregation prints folded: its keys hold a
// stack and its values are single numbers (a distribution has no one
// number to give a stack's width).
func Foldable(a *Aggregation) bool {
	switch a.Func {
	case Quantize, Lquantize, Llquantize:
		return false
	}
	// Every row's key has the same types: the first one tells.
	if len(a.Rows) == 0 {
		return false
	}
	_, ok := FoldKey(a.Rows[0].Keys)
	return ok
}

// Folded returns a foldable aggregation's rows as folded stacks. Rows
// whose value is negative or zero have no width in a flame graph and are
// left out.
func Folded(a *Aggregation) []flamegraph.Stack {
	var stacks []flamegraph.Stack
	for i := range a.Rows {
		r := &a.Rows[i]
		frames, ok := FoldKey(r.Keys)
		v := a.value(r)
		if !ok || v <= 0 || len(frames) == 0 {
			continue
		}
		stacks = append(stacks, flamegraph.Stack{Frames: frames, Count: uint64(v)})
	}
	return stacks
}

// writeFolded writes a foldable aggregation as folded stacks: one line
// per stack, rows whose frames fold to the same ones (the same functions
// at other offsets) merged, lines sorted.
func writeFolded(w io.Writer, a *Aggregation) error {
	return flamegraph.WriteFolded(w, Folded(a))
}

// allFolded reports whether there are aggregations and all of them print
// as folded stacks.
func allFolded(aggs []*Aggregation) bool {
	for _, a := range aggs {
		if !a.Folded || !Foldable(a) {
			return false
		}
	}
	return len(aggs) > 0
}
