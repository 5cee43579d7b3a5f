package pprof

import (
	"bytes"
	"slices"
	"testing"

	"github.com/google/pprof/profile"
)

// TestBuild: kernel frames come above user frames, leaf first; frames
// that print alike share a location and function; keys are labels.
func TestBuild(t *testing.T) {
	samples := []Sample{
		{Value: 3, Labels: []Label{{Key: "execname", Str: "gzip"}, {Key: "cpu", Num: 1, IsNum: true}}, Stacks: []Stack{
			{User: true, Frames: []string{"gzip`deflate+0x10", "gzip`main+0x4", "libc.so.6`__libc_start_call_main+0x7a"}},
			{Frames: []string{"vmlinux`do_syscall_64+0x5a"}},
		}},
		{Value: 2, Stacks: []Stack{{User: true, Frames: []string{"gzip`deflate+0x22", "gzip`main+0x4", "0x7f0012"}}}},
	}
	var buf bytes.Buffer
	if err := Write(&buf, samples, Type{"samples", "count"}); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) != 2 || p.Sample[0].Value[0] != 3 {
		t.Fatalf("samples: %v", p.Sample)
	}
	var names []string
	for _, l := range p.Sample[0].Location {
		names = append(names, l.Line[0].Function.Name+"@"+l.Mapping.File)
	}
	want := []string{"do_syscall_64@[kernel.kallsyms]", "deflate@gzip", "main@gzip", "__libc_start_call_main@libc.so.6"}
	if len(names) != len(want) {
		t.Fatalf("locations %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Errorf("location %d is %s, want %s", i, names[i], want[i])
		}
	}
	if got := p.Sample[0].Label["execname"]; len(got) != 1 || got[0] != "gzip" {
		t.Errorf("execname label %v", got)
	}
	if got := p.Sample[0].NumLabel["cpu"]; len(got) != 1 || got[0] != 1 {
		t.Errorf("cpu label %v", got)
	}
	// main+0x4 is one location; deflate+0x10 and +0x22 are one function.
	if p.Sample[0].Location[2] != p.Sample[1].Location[1] {
		t.Errorf("the same frame text made two locations")
	}
	if p.Sample[0].Location[1].Line[0].Function != p.Sample[1].Location[0].Line[0].Function {
		t.Errorf("two offsets in deflate made two functions")
	}
	// A bare address has no function.
	if l := p.Sample[1].Location[2]; len(l.Line) != 0 {
		t.Errorf("an unresolved address has lines %v", l.Line)
	}
}

// TestBuildInlined: functions inlined at an address are lines of its
// location, innermost first, not locations of their own.
func TestBuildInlined(t *testing.T) {
	samples := []Sample{{Value: 1, Stacks: []Stack{{User: true,
		Frames: []string{"inl`depth3 (inlined)", "inl`depth2 (inlined)", "inl`outer+0x8", "inl`main+0x1a"},
		PCs:    []uint64{0x1197, 0x1197, 0x1197, 0x1079}}}}}
	var buf bytes.Buffer
	if err := Write(&buf, samples, Type{"samples", "count"}); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	locs := p.Sample[0].Location
	if len(locs) != 2 {
		t.Fatalf("%d locations, want 2 (outer with its inlined functions, main)", len(locs))
	}
	var lines []string
	for _, l := range locs[0].Line {
		lines = append(lines, l.Function.Name)
	}
	if want := []string{"depth3", "depth2", "outer"}; !slices.Equal(lines, want) {
		t.Errorf("outer's location has lines %q, want %q", lines, want)
	}
}
