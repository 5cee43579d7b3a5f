package bpftest

import (
	"encoding/hex"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Debuginfod starts elfutils' debuginfod on localhost serving the debug
// files under dir, and returns its URL once it serves the debug file of
// every build ID in ids (it indexes dir in the background). It is stopped
// when t ends. Without debuginfod the test skips — failing under
// DSTAR_REQUIRE_BPF=1, as CI (which installs it) sets.
func Debuginfod(t testing.TB, dir string, ids ...[]byte) string {
	t.Helper()
	bin, err := exec.LookPath("debuginfod")
	if err != nil {
		Skip(t, "needs debuginfod for debuginfod tests (apt-get install debuginfod)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-F", "-p", strconv.Itoa(port), "-d", filepath.Join(t.TempDir(), "db.sqlite"),
		"-t", "0", "-g", "0", "-c", "1", dir)
	out := &Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	// Its scan ends with no signal but the files being served: ask until
	// they are, a scan of a few files takes well under a second.
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for {
			// debuginfod answers GET only.
			resp, err := http.Get(url + "/buildid/" + hex.EncodeToString(id) + "/debuginfo")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("debuginfod does not serve build ID %x after 30 s:\n%s", id, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return url
}
