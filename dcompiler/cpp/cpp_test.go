package cpp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "inc.h"), []byte("#define FROM_INC 7\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "sys"), 0o755)
	os.WriteFile(filepath.Join(dir, "sys", "s.h"), []byte("#define SYS 9\n"), 0o644)
	src := `#define N 4
#define SQ(x) ((x) * (x))
#include "inc.h"
#include <sys/s.h>
#if N > 3 && defined(SQ)
big N SQ(N + 1) FROM_INC SYS "N" 'N'
#elif N > 1
medium
#else
small
#endif
#ifdef NOPE
gone
#endif
#ifndef NOPE
kept
#endif
#pragma D option quiet
#undef N
N CMD
`
	got, err := Run(filepath.Join(dir, "x.d"), src, Options{
		Defines: map[string]string{"CMD": "\"ls\""}, Includes: []string{dir},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`big 4 ((4 + 1) * (4 + 1)) 7 9 "N" 'N'`, "kept", "#pragma D option quiet", `N "ls"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	for _, gone := range []string{"medium", "small", "gone", "#define"} {
		if strings.Contains(got, gone) {
			t.Errorf("%q kept in:\n%s", gone, got)
		}
	}
	// Lines after the includes keep their numbers.
	if lines := strings.Split(got, "\n"); !strings.HasPrefix(lines[5], "big") {
		t.Errorf("line 6 is %q", lines[5])
	}
}

func TestErrors(t *testing.T) {
	for src, want := range map[string]string{
		"#if 1\n":                       "line 1: unterminated #if",
		"#ifdef X\n#else\n":             "line 1: unterminated #else",
		"#if 1\n#else\n#else\n#endif\n": "line 3: #else after #else\nline 1: the conditional began here",
		"#if defined\n#endif\n":         "line 1: operator \"defined\" requires an identifier",
		"#define\n":                     "line 1: no macro name given in #define directive",
		"#define 1x\n":                  "line 1: macro names must be identifiers",
		"#endif\n":                      "line 1: #endif without #if",
		"#include \"nope.h\"\n":         "line 1: cannot find include file \"nope.h\"",
		"#error stop here\n":            "line 1: #error stop here",
		"#bogus\n":                      "line 1: invalid preprocessing directive #bogus",
	} {
		_, err := Run("x.d", src, Options{})
		if err == nil || err.Error() != want {
			t.Errorf("%q: got %v, want %s", src, err, want)
		}
	}
}

// TestExpandNesting: a macro is not expanded inside its own expansion (as
// C), arguments are expanded before they are put in, and a chain of
// macros expands whole however long it is.
func TestExpandNesting(t *testing.T) {
	var src strings.Builder
	src.WriteString("#define X X + 1\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n#define TWO 2\n#define D0 0\n")
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&src, "#define D%d D%d + 1\n", i, i-1)
	}
	src.WriteString("X\nMAX(MAX(1, TWO), 3)\nD2000\n")
	got, err := Run("x.d", src.String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")
	last := lines[len(lines)-3:]
	if last[0] != "X + 1" {
		t.Errorf("X expands to %q, want %q", last[0], "X + 1")
	}
	if want := "((((1) > (2) ? (1) : (2))) > (3) ? (((1) > (2) ? (1) : (2))) : (3))"; last[1] != want {
		t.Errorf("nested MAX expands to %q, want %q", last[1], want)
	}
	if want := "0" + strings.Repeat(" + 1", 2000); last[2] != want {
		t.Errorf("D2000 expands to %.40q..., want %.40q...", last[2], want)
	}
}
