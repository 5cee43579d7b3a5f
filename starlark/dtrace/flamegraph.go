// This file gives scripts stack-keyed aggregations as folded stacks and
// flame graphs: dtrace.folded and dtrace.flamegraph.

package dtrace

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"go.starlark.net/starlark"

	"github.com/dstar-trace/dstar/dcompiler/printf"
	"github.com/dstar-trace/dstar/engine/flamegraph"
	"github.com/dstar-trace/dstar/engine/output"
	"github.com/dstar-trace/dstar/engine/sink"
)

// foldedFn is dtrace.folded(agg): an aggregation as s.aggregations()
// gives it, as folded text.
func foldedFn(h *Host, th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var agg *starlark.Dict
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "agg", &agg); err != nil {
		return nil, err
	}
	stacks, err := foldDict(agg)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	var buf bytes.Buffer
	if err := flamegraph.WriteFolded(&buf, stacks); err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	return starlark.String(buf.String()), nil
}

// flamegraphFn is dtrace.flamegraph(stacks, path, title=, subtitle=,
// width=): stacks (an aggregation or folded text) drawn to an SVG file.
func flamegraphFn(h *Host, th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var src starlark.Value
	var path, title, subtitle string
	var width int
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "stacks", &src, "path", &path,
		"title?", &title, "subtitle?", &subtitle, "width?", &width); err != nil {
		return nil, err
	}
	var stacks []flamegraph.Stack
	var err error
	switch v := src.(type) {
	case *starlark.Dict:
		stacks, err = foldDict(v)
	case starlark.String:
		stacks, err = flamegraph.ParseFolded(strings.NewReader(string(v)))
	default:
		return nil, fmt.Errorf("%s: stacks: want an aggregation (a dict) or folded text, not %s", b.Name(), src.Type())
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	var buf bytes.Buffer
	if err := flamegraph.WriteSVG(&buf, stacks, flamegraph.Options{Title: title, Subtitle: subtitle, Width: width}); err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("%s: %v", b.Name(), &sink.Error{Name: path, Err: err})
	}
	return starlark.None, nil
}

// foldDict folds an aggregation as a script holds it: keys are tuples
// whose stacks are tuples of frames (innermost first, as recorded) and
// whose other members are strings and numbers; values are numbers. It
// folds as -x stackfmt=folded does (output.FoldKey); rows without a stack
// or with a value of no width are left out.
func foldDict(agg *starlark.Dict) ([]flamegraph.Stack, error) {
	var stacks []flamegraph.Stack
	for _, kv := range agg.Items() {
		n, ok := kv[1].(starlark.Int)
		if !ok {
			return nil, fmt.Errorf("the value for %s is a %s: only aggregations of numbers fold", kv[0], kv[1].Type())
		}
		count, ok := n.Uint64()
		if !ok || count == 0 {
			continue
		}
		members, ok := kv[0].(starlark.Tuple)
		if !ok {
			members = starlark.Tuple{kv[0]}
		}
		keys := make([]printf.Value, len(members))
		for i, m := range members {
			k, err := keyValue(m)
			if err != nil {
				return nil, err
			}
			keys[i] = k
		}
		frames, ok := output.FoldKey(keys)
		if ok && len(frames) > 0 {
			stacks = append(stacks, flamegraph.Stack{Frames: frames, Count: count})
		}
	}
	return stacks, nil
}

// keyValue turns a member of a script's aggregation key back into the
// recorded value it came from.
func keyValue(m starlark.Value) (printf.Value, error) {
	switch m := m.(type) {
	case starlark.Tuple, *starlark.List:
		var frames []string
		iter := starlark.Iterate(m)
		defer iter.Done()
		var f starlark.Value
		for iter.Next(&f) {
			s, ok := f.(starlark.String)
			if !ok {
				return printf.Value{}, fmt.Errorf("a stack's frame is a %s, not a string", f.Type())
			}
			frames = append(frames, string(s))
		}
		return printf.Stack(frames), nil
	case starlark.String:
		return printf.Str(string(m)), nil
	case starlark.Int:
		if v, ok := m.Int64(); ok {
			return printf.Int(v), nil
		}
	}
	return printf.Str(m.String()), nil
}
