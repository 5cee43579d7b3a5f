package printf

import "testing"

// FuzzParse checks that no format string makes Parse, Check or Sprint panic,
// and that what Parse accepts is consistent.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "%", "%%", "hello %d\n", "%-10s|%5d|%05d|%+d|%#x|%#o", "%*.*d",
		"%.*s", "%@d", "%3$d", "%hhd", "%lld %llx %Lf %ls %wc", "%?p %a %A %k",
		"%Y %T %S %C", "%1.2.3d", "%**d", "%5%", "%l5d", "%'d", "%-05d",
		"%999999999999999999999d", "%.99999999999s", "%e %f %g %E %G",
	} {
		f.Add(s, int64(-42), "hello")
	}
	f.Fuzz(func(t *testing.T, format string, n int64, s string) {
		fm, err := Parse(format)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Parse(%q) error %T, want *Error", format, err)
			}
			return
		}
		for i, c := range fm.Conversions() {
			if c.Index != i+1 {
				t.Fatalf("Parse(%q): conversion %d has Index %d", format, i+1, c.Index)
			}
			if _, ok := dict[c.Name]; !ok {
				t.Fatalf("Parse(%q): conversion %q not in the dictionary", format, c.Name)
			}
		}
		var text string
		for _, seg := range fm.Segments {
			text += seg.Literal
		}
		if len(text) > len(format) {
			t.Fatalf("Parse(%q): literals longer than the format", format)
		}
		vals := []Value{Int(n), Str(s), Sized(uint64(n), 4, false), Float(float64(n) / 3), Uint(uint64(n))}
		args := make([]Value, 0, 16)
		for len(args) < 16 {
			args = append(args, vals...)
		}
		// Small widths only: the output must stay small for the fuzzer.
		for _, c := range fm.Conversions() {
			if c.Width > 4096 || c.Prec > 4096 {
				return
			}
		}
		_ = fm.Sprint(args)
		_ = fm.Sprint([]Value{Str(s)})
		_ = fm.Sprint(nil)
		_, _ = fm.Append(nil, args, []Value{Int(n)})
		_ = fm.Check("printf", []ArgType{TypeInt, TypeString, TypePointer})
		_ = fm.Check("printa", nil)
	})
}
