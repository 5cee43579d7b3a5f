package debuginfod

import (
	"context"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/elfsym"
)

// buildSplit builds a C program with a build ID into dir/name and splits
// off its debug file into served/, which a debuginfod serves; it returns
// the program's build ID and the debug file's content.
func buildSplit(t *testing.T, dir, served, name string) ([]byte, []byte) {
	t.Helper()
	prog := bpftest.BuildC(t, dir, name, `
static __attribute__((noinline)) int hidden(int x) { return x + 1; }
int main(void) { return hidden(2) - 3; }
`, "-O1", "-g", "-Wl,--build-id")
	debug := filepath.Join(served, name+".debug")
	if err := os.Rename(bpftest.SplitDebug(t, prog, false), debug); err != nil {
		t.Fatal(err)
	}
	f, err := elfsym.Open(prog)
	if err != nil || len(f.BuildID) == 0 {
		t.Fatalf("no build ID: %v", err)
	}
	b, err := os.ReadFile(debug)
	if err != nil {
		t.Fatal(err)
	}
	return f.BuildID, b
}

// TestFetch: a debug file only a real debuginfod has is fetched into the
// cache, at debuginfod-client's path, whole; then it is served from the
// cache, with no server at all.
func TestFetch(t *testing.T) {
	dir, served := t.TempDir(), t.TempDir()
	id, want := buildSplit(t, dir, served, "fetched")
	url := bpftest.Debuginfod(t, served, id)
	c := &Client{URLs: []string{"http://127.0.0.1:1", url + "/"}, Cache: t.TempDir(), Timeout: 5 * time.Second}
	if _, ok := c.Cached(id); ok {
		t.Fatal("cached before any fetch")
	}
	p, err := c.Fetch(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(c.Cache, hex.EncodeToString(id), "debuginfo"); p != want {
		t.Errorf("fetched to %s, want %s", p, want)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != string(want) {
		t.Fatalf("the cached file differs from the served one (%d bytes, want %d): %v", len(got), len(want), err)
	}
	d, err := elfsym.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Lookup("hidden"); !ok {
		t.Error("the fetched debug file does not name hidden")
	}
	c.URLs = nil
	if q, err := c.Fetch(context.Background(), id); err != nil || q != p {
		t.Errorf("from the cache: %s, %v", q, err)
	}

	// A build ID the server does not have.
	c.URLs = []string{url}
	if _, err := c.Fetch(context.Background(), []byte{1, 2, 3, 4}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown build ID: %v, want ErrNotFound", err)
	}
}

// TestTimeout: a server that accepts the connection and never answers is
// given up after the timeout, with a message that says so.
func TestTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			defer conn.Close() // held open, silent
		}
	}()
	c := &Client{URLs: []string{"http://" + l.Addr().String()}, Cache: t.TempDir(), Timeout: 100 * time.Millisecond}
	_, err = c.Fetch(context.Background(), []byte{0xab, 0xcd})
	if err == nil || !strings.Contains(err.Error(), "no answer for 100ms") {
		t.Errorf("silent server: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(c.Cache, "abcd")); len(entries) != 0 {
		t.Errorf("a failed fetch left %d files in the cache", len(entries))
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("DEBUGINFOD_URLS", "")
	if c := FromEnv(); c != nil {
		t.Errorf("a client without servers: %+v", c)
	}
	t.Setenv("DEBUGINFOD_URLS", " http://a:1  http://b:2/ ")
	t.Setenv("DEBUGINFOD_CACHE_PATH", "")
	t.Setenv("XDG_CACHE_HOME", "/x")
	t.Setenv("DEBUGINFOD_TIMEOUT", "2.5")
	c := FromEnv()
	if c == nil || len(c.URLs) != 2 || c.URLs[1] != "http://b:2/" || c.Cache != "/x/debuginfod_client" || c.Timeout != 2500*time.Millisecond {
		t.Errorf("FromEnv = %+v", c)
	}
	t.Setenv("DEBUGINFOD_CACHE_PATH", "/c")
	t.Setenv("DEBUGINFOD_TIMEOUT", "soon")
	if c := FromEnv(); c.Cache != "/c" || c.Timeout != DefaultTimeout {
		t.Errorf("FromEnv = %+v", c)
	}
}
