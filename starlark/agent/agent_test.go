package agent

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// startAgent runs an agent on the scripts given (name to source) and
// waits until each has set up its sessions.
func startAgent(t testing.TB, scripts map[string]string) *Agent {
	t.Helper()
	dir := t.TempDir()
	for name, src := range scripts {
		os.WriteFile(filepath.Join(dir, name+".star"), []byte(src), 0o644)
	}
	a, err := New(Config{Paths: []string{dir}, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	a.Start()
	t.Cleanup(a.Close)
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range a.Scripts() {
		for s.Status().State != StateDone {
			if st := s.Status(); st.State == StateFailed || time.Now().After(deadline) {
				t.Fatalf("%s: %s %s", s.Path, st.State, st.Error)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return a
}

// keysScript counts this process's getppid calls under a new key each.
func keysScript() string {
	return fmt.Sprintf(`s = dtrace.session(quiet=True, aggsize="64m")
s.attach("syscall::getppid:entry /pid == %d/ { @c[i++] = count(); }")
dtrace.export(s, "@c", name="calls_total", labels=["n"], max_series=20000)
`, os.Getpid())
}

// BenchmarkScrape10k: one scrape of /metrics with 10,000 series from a
// 10,000-key aggregation, read from the kernel for each scrape.
func BenchmarkScrape10k(b *testing.B) {
	bpftest.Require(b)
	a := startAgent(b, map[string]string{"keys": keysScript()})
	for range 10000 {
		syscall.Getppid()
	}
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	scrape := func() int {
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return strings.Count(string(body), "\ncalls_total{")
	}
	if n := scrape(); n != 10000 {
		b.Fatalf("%d series, want 10000", n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		scrape()
	}
}

// TestReload: a changed script restarts, an unchanged one goes on, a
// removed one stops, and a reload that would not parse changes nothing.
func TestReload(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	write := func(name, src string) { os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644) }
	one := "s = dtrace.session()\ns.attach(\"BEGIN { @ = count(); }\")\n"
	write("a.star", one)
	write("b.star", one)
	a, err := New(Config{Paths: []string{dir}, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Start()
	wait := func(s *Script, state string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for s.Status().State != state {
			if time.Now().After(deadline) {
				t.Fatalf("%s is %s, not %s", s.Path, s.Status().State, state)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	before := a.Scripts()
	for _, s := range before {
		wait(s, StateDone)
	}
	write("b.star", one+"# changed\n")
	write("c.star", one)
	if err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	after := a.Scripts()
	if len(after) != 3 || after[0] != before[0] || after[1] == before[1] {
		t.Fatalf("after a reload: %v (before %v): a.star should be the same script, b.star a new one", after, before)
	}
	if before[1].Status().State != StateStopped {
		t.Errorf("the old b.star is %s, want stopped", before[1].Status().State)
	}
	for _, s := range after {
		wait(s, StateDone)
	}
	os.Remove(filepath.Join(dir, "c.star"))
	write("a.star", "s = (\n")
	if err := a.Reload(); err == nil || !strings.Contains(err.Error(), "a.star:2:") {
		t.Errorf("reload with a script that does not parse: %v, want an error at a.star:2", err)
	}
	if len(a.Scripts()) != 3 {
		t.Errorf("a failed reload changed the scripts: %v", a.Scripts())
	}
}
