// Package sdttest builds C programs with <sys/sdt.h> probes for tests. When
// gcc or the header is missing the test skips (or fails under
// DSTAR_REQUIRE_BPF=1, as in CI, which installs them).
package sdttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// Require skips t unless gcc can compile a file including <sys/sdt.h>.
func Require(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		bpftest.Skip(t, "needs gcc to build SDT test programs")
	}
	cmd := exec.Command("gcc", "-E", "-x", "c", "-")
	cmd.Stdin = strings.NewReader("#include <sys/sdt.h>\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		bpftest.Skip(t, "needs <sys/sdt.h> (apt-get install systemtap-sdt-dev): "+strings.TrimSpace(string(out)))
	}
}

// Build writes the C files srcs (name → text) to dir and runs gcc on them
// with args (say "-o", "prog"), in dir. It returns the path of dir/out.
func Build(t testing.TB, dir, out string, srcs map[string]string, args ...string) string {
	t.Helper()
	Require(t)
	var files []string
	for name, text := range srcs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".c") {
			files = append(files, name)
		}
	}
	sort.Strings(files)
	cmd := exec.Command("gcc", append(append(files, args...), "-o", out)...) // libraries after sources
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, b)
	}
	return filepath.Join(dir, out)
}
