package printf

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// cDriver prints each input case with the C library's printf. Input lines
// are "kind<TAB>format<TAB>value"; outputs are separated by "\x01\n".
const cDriver = `#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
	static char line[4096];
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = 0;
		char *fmt = strchr(line, '\t') + 1;
		char *val = strchr(fmt, '\t');
		*val++ = 0;
		switch (line[0]) {
		case 'i': printf(fmt, strtoll(val, 0, 10)); break;
		case 's': printf(fmt, val); break;
		case 'f': printf(fmt, strtod(val, 0)); break;
		}
		printf("\x01\n");
	}
	return 0;
}
`

// TestAgainstLibc compares Sprint with the C library's printf over a grid
// of flags, widths, precisions, conversions and values. It needs a C
// compiler and skips without one; the table in TestSprint holds the cases
// that matter most either way.
func TestAgainstLibc(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler:", err)
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "p.c"), filepath.Join(dir, "p")
	if err := os.WriteFile(src, []byte(cDriver), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-w", "-o", bin, src).CombinedOutput(); err != nil {
		t.Skipf("cannot compile the C driver: %v\n%s", err, out)
	}

	type tcase struct {
		format string // DTrace's
		kind   byte
		cfmt   string
		val    string
	}
	var cases []tcase
	// "-0" is left out: DTrace's parser lets the '0' win there, C the '-'.
	flags := []string{"", "-", "+", " ", "#", "0", "+0", " 0", "#0", "-#", "+ ", "#-+"}
	ints := []int64{0, 1, -1, 7, -42, 255, 123456789, -9223372036854775808, 9223372036854775807}
	floats := []float64{0, 1, -1.5, 3.14159, 1234.5, 0.0001, 1e-5, 100000, 1e6, 123456789.125, 1e300}
	for _, fl := range flags {
		for _, w := range []string{"", "1", "5", "12"} {
			for _, p := range []string{"", ".1", ".3", ".8"} {
				head := "%" + fl + w + p
				for _, verb := range "diuoxX" {
					for _, v := range ints {
						cases = append(cases, tcase{head + string(verb), 'i', head + "ll" + string(verb), strconv.FormatInt(v, 10)})
					}
				}
				for _, v := range []string{"", "a", "hello", "hello world!"} {
					cases = append(cases, tcase{head + "s", 's', head + "s", v})
				}
				for _, v := range []string{"65", "97"} {
					cases = append(cases, tcase{head + "c", 'i', head + "c", v})
				}
				for _, verb := range "efgEG" {
					for _, v := range floats {
						cases = append(cases, tcase{head + string(verb), 'f', head + string(verb), strconv.FormatFloat(v, 'g', -1, 64)})
					}
				}
			}
		}
	}
	var in strings.Builder
	for _, c := range cases {
		fmt.Fprintf(&in, "%c\t[%s]\t%s\n", c.kind, c.cfmt, c.val)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(string(out), "\x01\n")
	if len(want) < len(cases) {
		t.Fatalf("C driver printed %d results for %d cases", len(want), len(cases))
	}
	bad := 0
	for i, c := range cases {
		f, err := Parse("[" + c.format + "]")
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.format, err)
		}
		var v Value
		switch c.kind {
		case 'i':
			n, _ := strconv.ParseInt(c.val, 10, 64)
			v = Int(n)
		case 's':
			v = Str(c.val)
		case 'f':
			x, _ := strconv.ParseFloat(c.val, 64)
			v = Float(x)
		}
		if got := f.Sprint([]Value{v}); got != want[i] {
			if bad++; bad <= 20 {
				t.Errorf("Sprint(%q, %s) = %q, C printf(%q) = %q", c.format, c.val, got, c.cfmt, want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d cases differ from the C library", bad, len(cases))
	}
}
