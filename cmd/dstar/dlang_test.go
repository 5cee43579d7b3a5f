package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// A D test case: a program and what dstar must print for it.
type dcase struct {
	name   string
	src    string
	stdout *string // expected standard output of dstar -q
	stderr *string // expected standard error (compile errors, with errtags)
}

// readCases reads a case file: sections "-- NAME.d --", then "-- NAME.out
// --" or "-- NAME.err --", as in Go's txtar format. An .out section is
// dstar's whole standard output, which ends with the empty line dtrace
// prints at exit; an .err section is the start of standard error, where a
// fault's "at BPF pc 123" is written "at BPF pc N".
func readCases(t *testing.T, path string) []*dcase {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []*dcase
	byName := map[string]*dcase{}
	var cur *string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(strings.TrimRight(line, "\n"), " --") {
			name := strings.TrimSuffix(strings.TrimPrefix(strings.TrimRight(line, "\n"), "-- "), " --")
			base, ext := name[:len(name)-len(filepath.Ext(name))], filepath.Ext(name)
			c := byName[base]
			if c == nil {
				c = &dcase{name: base}
				byName[base] = c
				cases = append(cases, c)
			}
			s := new(string)
			switch ext {
			case ".d":
				cur = &c.src
				continue
			case ".out":
				c.stdout = s
			case ".err":
				c.stderr = s
			default:
				t.Fatalf("%s: unknown section %s", path, name)
			}
			cur = s
			continue
		}
		if cur != nil {
			*cur += line
		}
	}
	return cases
}

var bpfPC = regexp.MustCompile(`at BPF pc \d+`)

// TestDLanguage runs every case in testdata/d/*.txt through the real
// binary: dstar -q -x errtags -s CASE.d, comparing what it prints.
func TestDLanguage(t *testing.T) {
	bpftest.Require(t)
	files, _ := filepath.Glob("testdata/d/*.txt")
	sort.Strings(files)
	total := 0
	for _, f := range files {
		for _, c := range readCases(t, f) {
			total++
			c := c
			t.Run(strings.TrimSuffix(filepath.Base(f), ".txt")+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				script := filepath.Join(t.TempDir(), c.name+".d")
				os.WriteFile(script, []byte(c.src), 0o644)
				r := dstar(t, 30*time.Second, "-q", "-x", "errtags", "-s", script)
				if c.stdout != nil && r.stdout != *c.stdout {
					t.Errorf("stdout:\n%s\nwant:\n%s\nstderr:\n%s", r.stdout, *c.stdout, r.stderr)
				}
				if c.stderr != nil {
					got := strings.ReplaceAll(r.stderr, script, c.name+".d")
					// A fault's instruction index changes with the code.
					got = bpfPC.ReplaceAllString(got, "at BPF pc N")
					// Only the message lines: the excerpt after them shows where.
					want := strings.TrimRight(*c.stderr, "\n") + "\n"
					if !strings.HasPrefix(got, want) {
						t.Errorf("stderr:\n%s\nwant it to start:\n%s", got, *c.stderr)
					}
					if r.code != 1 {
						t.Errorf("exit status %d, want 1", r.code)
					}
				}
			})
		}
	}
	if total == 0 {
		t.Fatal("no cases")
	}
}
