package bpftest

import (
	"os/exec"
	"testing"
)

// Chromium returns the path of a Chromium (or Chrome) browser for tests
// that render flame graphs, or skips the test — failing it under
// DSTAR_REQUIRE_BPF=1, as CI (which installs chromium) sets.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Skip(t, "needs chromium for browser tests (apt-get install chromium)")
	return ""
}

// ChromiumFlags are what every headless run takes: as root without a
// sandbox, and a profile of its own so that parallel runs do not meet.
func ChromiumFlags(t testing.TB) []string {
	return []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--window-size=1200,800",
		"--hide-scrollbars",
	}
}
