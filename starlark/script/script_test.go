package script

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarktest"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// TestScripts runs every testdata/*.star with the assert module. A script's
// stdout must equal NAME.out beside it when that file exists.
func TestScripts(t *testing.T) {
	bpftest.Require(t)
	files, _ := filepath.Glob("testdata/*.star")
	if len(files) == 0 {
		t.Fatal("no test scripts")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var out, errb bytes.Buffer
			r := New(Options{Stdout: &out, Stderr: &errb, Args: []string{"a1", "a2"}})
			defer r.Close()
			starlarktest.SetReporter(r.Thread(), t)
			assert, err := starlarktest.LoadAssertModule()
			if err != nil {
				t.Fatal(err)
			}
			pre := r.Predeclared()
			for k, v := range assert {
				pre[k] = v
			}
			src, _ := os.ReadFile(f)
			if _, err := starlark.ExecFileOptions(Dialect, r.Thread(), f, src, pre); err != nil {
				var b bytes.Buffer
				PrintError(&b, err)
				t.Fatalf("%s\nstderr:\n%s", b.String(), errb.String())
			}
			r.Close()
			if want, err := os.ReadFile(strings.TrimSuffix(f, ".star") + ".out"); err == nil && out.String() != string(want) {
				t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), want)
			}
		})
	}
}
