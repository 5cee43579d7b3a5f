package flamegraph

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestFoldedRoundTripMerges(t *testing.T) {
	in := "main;work;compute 5\n" +
		"main;idle 3\n" +
		"main;work;compute 2\r\n" + // merged with the first; CRLF accepted
		"\n" + // blank lines are skipped
		"main;operator new(unsigned long) 4\n" + // frames may hold spaces
		"main 1\n" +
		"main;work\t7\n" // a tab before the count too
	stacks, err := ParseFolded(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(stacks) != 6 {
		t.Fatalf("parsed %d stacks, want 6 (input order, unmerged): %v", len(stacks), stacks)
	}
	if got := stacks[3]; !reflect.DeepEqual(got, Stack{[]string{"main", "operator new(unsigned long)"}, 4}) {
		t.Errorf("stack with a space in a frame parsed as %q %d", got.Frames, got.Count)
	}
	var out bytes.Buffer
	if err := WriteFolded(&out, stacks); err != nil {
		t.Fatal(err)
	}
	want := "main 1\n" +
		"main;idle 3\n" +
		"main;operator new(unsigned long) 4\n" +
		"main;work 7\n" +
		"main;work;compute 7\n"
	if out.String() != want {
		t.Fatalf("WriteFolded wrote\n%s\nwant\n%s", out.String(), want)
	}
	// What WriteFolded writes reads back to itself.
	again, err := ParseFolded(&out)
	if err != nil {
		t.Fatal(err)
	}
	var out2 bytes.Buffer
	if err := WriteFolded(&out2, again); err != nil {
		t.Fatal(err)
	}
	if out2.String() != want {
		t.Errorf("second round trip wrote\n%s", out2.String())
	}
	// The caller's stacks are neither sorted nor merged in place.
	if stacks[0].Count != 5 || stacks[0].Frames[2] != "compute" {
		t.Errorf("WriteFolded changed its input: %v", stacks[0])
	}
}

func TestParseFoldedErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a;b 1\nno-count\n", "line 2: no sample count"},
		{"a;b 1\n\na;b x12\n", `line 3: sample count "x12" is not a whole number`},
		{"a;b 1.5\n", `line 1: sample count "1.5"`},
		{"a;b -3\n", `line 1: sample count "-3"`},
		{"a;b 99999999999999999999\n", "line 1: sample count"},
		{" 4\n", "line 1: no frames before the sample count"},
		{"a;;b 4\n", "line 1: frame 2 is empty"},
		{"a;b 4\nc;d; 1", "line 2: frame 3 is empty"},
		{"a;b ", `line 1: sample count ""`},
	} {
		_, err := ParseFolded(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseFolded(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

func TestWriteFoldedRefusesWhatCannotBeRead(t *testing.T) {
	for _, s := range []Stack{
		{Frames: []string{"a", "b;c"}, Count: 1},
		{Frames: []string{"a\nb"}, Count: 1},
		{Frames: []string{"a", ""}, Count: 1},
		{Frames: nil, Count: 1},
	} {
		var out bytes.Buffer
		if err := WriteFolded(&out, []Stack{{[]string{"ok"}, 1}, s}); err == nil {
			t.Errorf("WriteFolded(%q) succeeded, writing %q", s.Frames, out.String())
		} else if out.Len() != 0 {
			t.Errorf("WriteFolded(%q) failed but wrote %q", s.Frames, out.String())
		}
	}
	if err := WriteFolded(new(bytes.Buffer), []Stack{{[]string{"a"}, 1 << 63}, {[]string{"a"}, 1 << 63}}); err == nil {
		t.Error("WriteFolded merged counts past 2^64 without an error")
	}
}
