package stdlib_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarktest"

	"github.com/dstar-trace/dstar/starlark/script"
	"github.com/dstar-trace/dstar/stdlib"
)

// TestModules runs testdata/*.star, which load the library's modules and
// check them with the assert module. They touch no kernel: no root needed.
func TestModules(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.star")
	if len(files) == 0 {
		t.Fatal("no test scripts")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var out, errb bytes.Buffer
			r := script.New(script.Options{Stdout: &out, Stderr: &errb})
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
			if _, err := starlark.ExecFileOptions(script.Dialect, r.Thread(), f, src, pre); err != nil {
				var b bytes.Buffer
				script.PrintError(&b, err)
				t.Fatalf("%s\nstderr:\n%s", b.String(), errb.String())
			}
			if want, err := os.ReadFile(strings.TrimSuffix(f, ".star") + ".out"); err == nil && out.String() != string(want) {
				t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), want)
			}
		})
	}
}

// TestToolHeaders checks that every tool opens with "# NAME: summary" and
// a usage comment, and that its -h prints a usage that names every flag
// the comment documents, without touching the kernel.
func TestToolHeaders(t *testing.T) {
	tools := stdlib.Tools()
	if len(tools) < 8 {
		t.Fatalf("only %d tools", len(tools))
	}
	flagLine := regexp.MustCompile(`(?m)^#   (-[a-zA-Z])\b`)
	for _, tool := range tools {
		t.Run(tool.Name, func(t *testing.T) {
			b, err := fs.ReadFile(stdlib.FS, tool.Path)
			if err != nil {
				t.Fatal(err)
			}
			src := string(b)
			if !strings.HasPrefix(src, "# "+tool.Name+": ") || tool.Summary == "" {
				t.Errorf("does not open with %q", "# "+tool.Name+": summary")
			}
			if !strings.Contains(src, "\n#\n# Usage: dstar tool "+tool.Name+" ") {
				t.Errorf("no usage comment")
			}
			var out, errb bytes.Buffer
			code := script.Run("@stdlib//"+tool.Path, b, script.Options{Stdout: &out, Stderr: &errb, Args: []string{"-h"}})
			if code != 0 || !strings.HasPrefix(out.String(), "Usage: dstar tool "+tool.Name+" ") {
				t.Fatalf("-h: exit %d, stdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
			}
			for _, m := range flagLine.FindAllStringSubmatch(src, -1) {
				if !strings.Contains(out.String(), "\n  "+m[1]+" ") {
					t.Errorf("-h does not describe %s:\n%s", m[1], out.String())
				}
			}
		})
	}
}
