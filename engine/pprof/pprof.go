// Package pprof turns stack-keyed aggregations into pprof profiles (the
// format of go tool pprof, Pyroscope and Parca): a sample per row, its
// value the row's count or sum, its locations the row's stacks (kernel
// frames, then user frames, innermost first), its other keys labels.
// User frames carry their mapping (file, range, offset, build ID) so that
// a profile reader can symbolise what dstar could not; kernel frames
// belong to [kernel.kallsyms] or to their module.
package pprof

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/dstar-trace/dstar/dcompiler/printf"
	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/engine"
	"github.com/dstar-trace/dstar/engine/usym"
)

// Stack is one stack of a sample: frames innermost first, as text
// (module`function+0xoff), with their addresses when known.
type Stack struct {
	Frames []string
	PCs    []uint64 // nil when only the text is known
	User   bool
	PID    int
}

// Label is a key of a sample that is not a stack.
type Label struct {
	Key   string
	Str   string
	Num   int64
	IsNum bool
}

// Sample is one row.
type Sample struct {
	Stacks []Stack
	Labels []Label
	Value  int64
}

// Type says what the samples' values are: ("samples", "count") for a
// count( ), ("off_cpu", "nanoseconds") for a sum of times, ...
type Type struct{ Name, Unit string }

// FromAgg returns a stack-keyed count( ) or sum( ) aggregation's rows as
// samples. Keys that are not stacks become labels named by labels (key0,
// key1, ... where labels has no name).
func FromAgg(a *engine.AggData, labels []string) ([]Sample, error) {
	stacks := 0
	for _, k := range a.Layout.Keys {
		if k.Type.Kind == types.Stack {
			stacks++
		}
	}
	switch {
	case a.Layout.Func != "count" && a.Layout.Func != "sum":
		return nil, fmt.Errorf("@%s is a %s( ): a profile's values are a count( ) or a sum( )", a.Name(), a.Layout.Func)
	case stacks == 0:
		return nil, fmt.Errorf("@%s has no stack in its key (stack( ), ustack( ))", a.Name())
	}
	var out []Sample
	for _, r := range a.Rows {
		s := Sample{Value: r.Value}
		other := 0
		for _, k := range r.Keys {
			if k.Kind == printf.StackValue {
				s.Stacks = append(s.Stacks, Stack{Frames: k.Frames, PCs: k.PCs, User: k.User, PID: k.PID})
				continue
			}
			name := "key" + strconv.Itoa(other)
			if other < len(labels) {
				name = labels[other]
			}
			other++
			l := Label{Key: name}
			switch k.Kind {
			case printf.StringValue, printf.SymbolValue, printf.TableValue, printf.FloatValue:
				l.Str = k.String()
			default:
				l.Num, l.IsNum = k.Int64(), true
			}
			s.Labels = append(s.Labels, l)
		}
		out = append(out, s)
	}
	return out, nil
}

// Build makes the profile of samples, whose values are of type t.
func Build(samples []Sample, t Type) *profile.Profile {
	b := &builder{
		p: &profile.Profile{
			SampleType: []*profile.ValueType{{Type: t.Name, Unit: t.Unit}},
			PeriodType: &profile.ValueType{Type: t.Name, Unit: t.Unit},
			Period:     1,
		},
		locs: map[locKey]*profile.Location{}, funcs: map[[2]string]*profile.Function{},
		maps: map[mapKey]*profile.Mapping{},
	}
	for _, s := range samples {
		ps := &profile.Sample{Value: []int64{s.Value}}
		// Kernel frames are called from user ones: leaf first, they come
		// before them whatever order the key gave.
		for _, user := range []bool{false, true} {
			for _, st := range s.Stacks {
				if st.User != user {
					continue
				}
				// Functions inlined at an address are lines of its
				// location, innermost first, as pprof has them.
				var inlined []string
				for i, f := range st.Frames {
					if strings.HasSuffix(f, usym.InlinedMark) {
						inlined = append(inlined, strings.TrimSuffix(f, usym.InlinedMark))
						continue
					}
					var pc uint64
					if i < len(st.PCs) { // a cut stack's marker has no address
						pc = st.PCs[i]
					}
					ps.Location = append(ps.Location, b.location(f, pc, st, inlined))
					inlined = nil
				}
			}
		}
		for _, l := range s.Labels {
			if l.IsNum {
				if ps.NumLabel == nil {
					ps.NumLabel = map[string][]int64{}
				}
				ps.NumLabel[l.Key] = append(ps.NumLabel[l.Key], l.Num)
			} else {
				if ps.Label == nil {
					ps.Label = map[string][]string{}
				}
				ps.Label[l.Key] = append(ps.Label[l.Key], l.Str)
			}
		}
		b.p.Sample = append(b.p.Sample, ps)
	}
	return b.p
}

// Write writes the profile of samples, gzipped, as pprof reads it.
func Write(w io.Writer, samples []Sample, t Type) error {
	p := Build(samples, t)
	if err := p.CheckValid(); err != nil {
		return err
	}
	return p.Write(w)
}

type locKey struct {
	mapping uint64
	addr    uint64
	text    string // for a frame whose address is not known
	inlined int    // functions inlined there: a stack's first address has its own
}

type mapKey struct {
	file  string
	start uint64
}

type builder struct {
	p     *profile.Profile
	locs  map[locKey]*profile.Location
	funcs map[[2]string]*profile.Function
	maps  map[mapKey]*profile.Mapping
}

// location returns the location of frame f at pc (0 when unknown) of
// stack st, with the functions inlined there (frames as text, innermost
// first), made on first use.
func (b *builder) location(f string, pc uint64, st Stack, inlined []string) *profile.Location {
	module, fn := splitFrame(f)
	var m *profile.Mapping
	if st.User && pc != 0 {
		if mf, ok := engine.UserMapping(st.PID, pc); ok {
			m = b.mapping(mf)
		}
	}
	if m == nil && module != "" {
		file := module
		if !st.User && module == "vmlinux" {
			file = "[kernel.kallsyms]"
		}
		m = b.mapping(usym.Mapped{Path: file})
	}
	k := locKey{addr: pc, inlined: len(inlined)}
	if m != nil {
		k.mapping = m.ID
	}
	if pc == 0 {
		k.text = f
	}
	if l := b.locs[k]; l != nil {
		return l
	}
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Address: pc, Mapping: m}
	for _, in := range inlined {
		if m, ifn := splitFrame(in); ifn != "" {
			l.Line = append(l.Line, profile.Line{Function: b.function(ifn, m)})
		}
	}
	if fn != "" {
		l.Line = append(l.Line, profile.Line{Function: b.function(fn, module)})
		if m != nil {
			m.HasFunctions = true
		}
	}
	b.locs[k] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

func (b *builder) function(name, file string) *profile.Function {
	k := [2]string{name, file}
	if f := b.funcs[k]; f != nil {
		return f
	}
	f := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name, Filename: file}
	b.funcs[k] = f
	b.p.Function = append(b.p.Function, f)
	return f
}

func (b *builder) mapping(mf usym.Mapped) *profile.Mapping {
	k := mapKey{mf.Path, mf.Start}
	if m := b.maps[k]; m != nil {
		return m
	}
	m := &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), Start: mf.Start, Limit: mf.End, Offset: mf.Offset,
		File: mf.Path, BuildID: mf.BuildID}
	b.maps[k] = m
	b.p.Mapping = append(b.p.Mapping, m)
	return m
}

// splitFrame parses module`function+0xoff into its module and function;
// either is empty when the frame does not name it (a bare address, or
// module`0xaddr).
func splitFrame(f string) (module, fn string) {
	module, fn, ok := strings.Cut(f, "`")
	if !ok {
		module, fn = "", f
	}
	if i := strings.LastIndex(fn, "+0x"); i > 0 {
		fn = fn[:i]
	}
	if strings.HasPrefix(fn, "0x") {
		fn = ""
	}
	return module, fn
}
