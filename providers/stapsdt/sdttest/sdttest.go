// Package sdttest builds C programs with <sys/sdt.h> probes for tests. When
// gcc or the header is missing the test skips (or fails under
// DSTAR_REQUIRE_BPF=1, as in CI, which installs them).
package sdttest

import (
	"os/exec"
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

// Build is bpftest.BuildCFiles for programs that include <sys/sdt.h>:
// it writes the files srcs (name → text) to dir and runs gcc on the .c
// ones with args (libraries last), in dir, into dir/out, whose path it
// returns.
func Build(t testing.TB, dir, out string, srcs map[string]string, args ...string) string {
	t.Helper()
	Require(t)
	return bpftest.BuildCFiles(t, dir, out, srcs, args...)
}
