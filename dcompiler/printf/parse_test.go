package printf

import (
	"errors"
	"testing"
)

func TestParseSegments(t *testing.T) {
	tests := []struct {
		format string
		want   []string // literal, then conversion name ("" for none)
		args   int
	}{
		{"", []string{"", ""}, 0},
		{"hello\n", []string{"hello\n", ""}, 0},
		{"%d", []string{"", "d"}, 1},
		{"a%db", []string{"a", "d", "b", ""}, 1},
		{"%d%s", []string{"", "d", "", "s"}, 2},
		{"100%%\n", []string{"100", "%", "\n", ""}, 0},
		{"%*d", []string{"", "d"}, 2},
		{"%*.*s", []string{"", "s"}, 3},
		{"%lld %llx %hd %lu %Lf", []string{"", "lld", " ", "llx", " ", "hd", " ", "lu", " ", "Lf"}, 5},
		{"%@d", []string{"", "d"}, 0},
		{"%-10s|%5d|%05d|%+d|%#x|%#o", []string{"", "s", "|", "d", "|", "d", "|", "d", "|", "x", "|", "o"}, 6},
		{"%a %A %k %Y %T %S %C %ls %ws %lc %wc %p", []string{"", "a", " ", "A", " ", "k", " ", "Y", " ", "T", " ", "S", " ", "C", " ", "ls", " ", "ws", " ", "lc", " ", "wc", " ", "p"}, 12},
		// Length letters may come before the width; DTrace collects them
		// into the name wherever they appear.
		{"%l5d", []string{"", "ld"}, 1},
	}
	for _, tt := range tests {
		f, err := Parse(tt.format)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.format, err)
			continue
		}
		var got []string
		for _, s := range f.Segments {
			name := ""
			if s.Conv != nil {
				name = s.Conv.Name
			}
			got = append(got, s.Literal, name)
		}
		if len(got) != len(tt.want) {
			t.Errorf("Parse(%q) = %q, want %q", tt.format, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("Parse(%q) = %q, want %q", tt.format, got, tt.want)
				break
			}
		}
		if n := f.NumArgs(); n != tt.args {
			t.Errorf("Parse(%q).NumArgs() = %d, want %d", tt.format, n, tt.args)
		}
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		format string
		want   Conversion
	}{
		{"%-10s", Conversion{Index: 1, Name: "s", Kind: ArgString, Left: true, Width: 10}},
		{"%05d", Conversion{Index: 1, Name: "d", Kind: ArgInt, Zero: true, Width: 5}},
		// DTrace's parser lets the later of '-' and '0' win (C lets '-'
		// win): "%-05d" zero-pads in DTrace.
		{"%-05d", Conversion{Index: 1, Name: "d", Kind: ArgInt, Zero: true, Width: 5}},
		{"%0-5d", Conversion{Index: 1, Name: "d", Kind: ArgInt, Left: true, Width: 5}},
		{"%+ #'x", Conversion{Index: 1, Name: "x", Kind: ArgInt, Plus: true, Space: true, Alt: true, Group: true}},
		{"%.3s", Conversion{Index: 1, Name: "s", Kind: ArgString, Prec: 3}},
		{"%12.5f", Conversion{Index: 1, Name: "f", Kind: ArgFloat, Width: 12, Prec: 5}},
		{"%*.*d", Conversion{Index: 1, Name: "d", Kind: ArgInt, DynWidth: true, DynPrec: true}},
		{"%.*s", Conversion{Index: 1, Name: "s", Kind: ArgString, DynPrec: true}},
		// '?' is the width of a 64-bit pointer in hex.
		{"%?p", Conversion{Index: 1, Name: "p", Kind: ArgPointer, Width: 16}},
		{"%@8u", Conversion{Index: 1, Name: "u", Kind: ArgInt, Agg: true, Width: 8}},
		{"%%", Conversion{Index: 1, Name: "%", Kind: ArgNone}},
	}
	for _, tt := range tests {
		f, err := Parse(tt.format)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.format, err)
			continue
		}
		c := *f.Conversions()[0]
		c.Proto, c.verb, c.dict = "", 0, dictEntry{}
		if c != tt.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tt.format, c, tt.want)
		}
	}
}

func TestParseIndexCountsPercentPercent(t *testing.T) {
	f, err := Parse("%d%%%s")
	if err != nil {
		t.Fatal(err)
	}
	cs := f.Conversions()
	if cs[0].Index != 1 || cs[1].Index != 2 || cs[2].Index != 3 {
		t.Errorf("indexes = %d %d %d, want 1 2 3", cs[0].Index, cs[1].Index, cs[2].Index)
	}
}

// The messages are libdtrace's (dt_printf.c, dt_printf_create). Where a
// dtrace-utils test records the message, it is named: their .r files show
// "dtrace: failed to compile script X: [D_SYNTAX] line 18: " before it.
func TestParseErrors(t *testing.T) {
	tests := []struct{ format, msg string }{
		// test/unittest/printf/err.D_SYNTAX.badconv1.r
		{"%3$d", "format conversion #1 uses unsupported positional format (%n$)"},
		// test/unittest/printf/err.D_SYNTAX.badconv2.r
		{"%", "format conversion #1 name expected before end of format string"},
		{"abc %d %-10", "format conversion #2 name expected before end of format string"},
		// test/unittest/printf/err.D_SYNTAX.badconv3.r
		{"%Z", "format conversion #1 is undefined: %Z"},
		{"%y", "format conversion #1 is undefined: %y"},
		{"%d %q", "format conversion #2 is undefined: %q"},
		// DTrace has no C99 hh, z, j or t modifiers.
		{"%hhd", "format conversion #1 is undefined: %hhd"},
		{"%zd", "format conversion #1 is undefined: %z"},
		{"%jd", "format conversion #1 is undefined: %j"},
		{"%td", "format conversion #1 is undefined: %t"},
		{"%lls", "format conversion #1 is undefined: %lls"},
		{"%5%", "format conversion #1 cannot be combined with other format flags: %%"},
		{"%**d", "format conversion #1 has more than one '*' specified for the output width"},
		{"%.**d", "format conversion #1 has more than one '*' specified for the output precision"},
		{"%1.2.3d", "format conversion #1 has more than one '.' specified"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.format)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%q) error = %v, want %q", tt.format, err, tt.msg)
			continue
		}
		if e.Msg != tt.msg || e.Tag != "D_SYNTAX" {
			t.Errorf("Parse(%q) error = [%s] %q, want [D_SYNTAX] %q", tt.format, e.Tag, e.Msg, tt.msg)
		}
	}
}
