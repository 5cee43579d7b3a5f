package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/dcompiler/bigprog"
	"github.com/dstar-trace/dstar/dcompiler/parser"
	"github.com/dstar-trace/dstar/providers/bpftest"
)

// TestLargePrograms runs generated programs of every bigprog shape, at
// sizes the kernel's verifier still loads (its jump history refuses a
// clause of a thousand string operations), and checks what they print.
// How long compiling takes is BenchmarkScale's (dcompiler).
func TestLargePrograms(t *testing.T) {
	bpftest.Require(t)
	sizes := map[string]int{"sum": 16000, "constsum": 16000, "parens": 4000, "clauses": 2000,
		"strings": 300, "inlines": 16000, "defines": 16000}
	dir := t.TempDir()
	for _, sh := range bigprog.Shapes {
		n := sizes[sh.Name]
		t.Run(fmt.Sprintf("%s=%d", sh.Name, n), func(t *testing.T) {
			script := filepath.Join(dir, sh.Name+".d")
			if err := os.WriteFile(script, []byte(sh.Gen(n)), 0o644); err != nil {
				t.Fatal(err)
			}
			r := dstar(t, 60*time.Second, "-C", "-q", "-s", script)
			if want := sh.Want(n) + "\n"; r.code != 0 || r.stdout != want {
				t.Errorf("exit %d, stdout %q, want %q; stderr:\n%.2000s", r.code, r.stdout, want, r.stderr)
			}
		})
	}
}

// TestNestedTooDeeply: parentheses nested past the parser's bound, even a
// million of them, are a compile error at the parenthesis past it, with
// exit status 1, not a crash, and an excerpt of the line, not all of it.
func TestNestedTooDeeply(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{parser.MaxNest, 1000000} {
		script := filepath.Join(dir, fmt.Sprintf("deep%d.d", n))
		if err := os.WriteFile(script, []byte(bigprog.Parens(n)), 0o644); err != nil {
			t.Fatal(err)
		}
		r := dstar(t, 60*time.Second, "-e", "-s", script)
		want := fmt.Sprintf("dstar: failed to compile script %s: line 1: expression nested too deeply: more than %d levels\n", script, parser.MaxNest)
		// "BEGIN { y = 7; x = " then parentheses: the assignment is a
		// level, so the error is at the parenthesis MaxNest.
		at := fmt.Sprintf("%s:1:%d:\n", script, len("BEGIN { y = 7; x = ")+parser.MaxNest)
		if r.code != 1 || !strings.HasPrefix(r.stderr, want+at) || r.stdout != "" {
			t.Errorf("%d parentheses: exit %d, stdout %q, stderr:\n%.300s\nwant it to start:\n%s%s", n, r.code, r.stdout, r.stderr, want, at)
		}
		// The excerpt shows the part of the line around the error.
		if len(r.stderr) > 600 {
			t.Errorf("%d parentheses: %d bytes of stderr:\n%.600s...", n, len(r.stderr), r.stderr)
		}
	}
}
