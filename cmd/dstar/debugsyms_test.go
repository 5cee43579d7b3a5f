package main

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/elfsym"
)

// staticSrc calls main → middle (a static function: a stripped file
// names it only in its debug information) → leaf → getppid, 60 times,
// 20 ms apart. leaf is exported (-rdynamic) so that .dynsym names it.
const staticSrc = `
#include <unistd.h>
__attribute__((noinline)) int leaf(void) { return getppid() + 1; }
static __attribute__((noinline)) int middle(void) { return leaf() + 1; }
int main(void) {
	int n = 0;
	for (int i = 0; i < 60; i++) { n += middle(); usleep(20000); }
	return n == 0;
}
`

// buildStatic builds staticSrc into dir/name with frame pointers, so
// that the kernel's walk reaches middle, and a build ID.
func buildStatic(t *testing.T, dir, name string) string {
	return bpftest.BuildC(t, dir, name, staticSrc, "-O1", "-fno-omit-frame-pointer", "-rdynamic", "-Wl,--build-id")
}

// getppidStacks runs prog under dstar printing the user stack at each
// getppid and returns the stacks, each as its frames joined by newlines.
func getppidStacks(t *testing.T, prog string) []string {
	t.Helper()
	r := dstar(t, 60*time.Second, "-q", "-c", prog, "-n",
		`syscall::getppid:entry /pid == $target/ { ustack(); printf("--\n"); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var stacks []string
	for _, s := range strings.Split(r.stdout, "--\n") {
		if s = strings.TrimSpace(s); s != "" {
			stacks = append(stacks, s)
		}
	}
	return stacks
}

// middleFrame matches a frame naming the static function middle.
func middleFrame(name string) *regexp.Regexp {
	return regexp.MustCompile("(?m)^ *" + regexp.QuoteMeta(name) + "`middle\\+0x[0-9a-f]+$")
}

// TestStackMiniDebugInfo: a program stripped as Fedora and Debian strip
// theirs, with its local functions left in .gnu_debugdata, has them
// named in its stacks.
func TestStackMiniDebugInfo(t *testing.T) {
	bpftest.Require(t)
	prog := buildStatic(t, t.TempDir(), "mini")
	bpftest.AddMiniDebugInfo(t, prog, "middle")
	stacks := getppidStacks(t, prog)
	re := middleFrame("mini")
	if len(stacks) != 60 {
		t.Fatalf("%d stacks, want 60:\n%s", len(stacks), strings.Join(stacks, "\n--\n"))
	}
	for _, s := range stacks {
		if !re.MatchString(s) {
			t.Fatalf("a stack without mini`middle:\n%s", s)
		}
	}
}

// TestStackDebugLink: a stripped program's static function is named from
// the debug file its .gnu_debuglink names, in the .debug directory
// beside it.
func TestStackDebugLink(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	prog := buildStatic(t, dir, "linked")
	debug := bpftest.SplitDebug(t, prog, true)
	os.Mkdir(filepath.Join(dir, ".debug"), 0o755)
	if err := os.Rename(debug, filepath.Join(dir, ".debug", "linked.debug")); err != nil {
		t.Fatal(err)
	}
	stacks := getppidStacks(t, prog)
	re := middleFrame("linked")
	for _, s := range stacks {
		if !re.MatchString(s) {
			t.Fatalf("a stack without linked`middle:\n%s", s)
		}
	}
}

// TestStackDebuginfod: a stripped program whose debug file only a
// debuginfod server (a real one, on localhost) has: dstar fetches it in
// the background into DEBUGINFOD_CACHE_PATH, and once it has arrived the
// stacks name the static function; the next run finds it in the cache
// and names it in every stack.
func TestStackDebuginfod(t *testing.T) {
	bpftest.Require(t)
	dir, served, cache := t.TempDir(), t.TempDir(), t.TempDir()
	prog := buildStatic(t, dir, "fetched")
	f, err := elfsym.Open(prog)
	if err != nil || len(f.BuildID) == 0 {
		t.Fatalf("no build ID: %v", err)
	}
	id := f.BuildID
	if err := os.Rename(bpftest.SplitDebug(t, prog, false), filepath.Join(served, "fetched.debug")); err != nil {
		t.Fatal(err)
	}
	re := middleFrame("fetched")
	// Without a server, nothing names middle.
	t.Setenv("DEBUGINFOD_URLS", "")
	for _, s := range getppidStacks(t, prog) {
		if re.MatchString(s) {
			t.Fatalf("fetched`middle named with no debug information:\n%s", s)
		}
	}

	url := bpftest.Debuginfod(t, served, id)
	t.Setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1 "+url)
	t.Setenv("DEBUGINFOD_CACHE_PATH", cache)
	t.Setenv("DEBUGINFOD_TIMEOUT", "5")

	stacks := getppidStacks(t, prog)
	if len(stacks) != 60 {
		t.Fatalf("%d stacks, want 60", len(stacks))
	}
	// The fetch runs beside the tracing: the first stacks may come before
	// it has arrived, the last ones after.
	if last := stacks[len(stacks)-1]; !re.MatchString(last) {
		t.Errorf("the last stack does not name fetched`middle:\n%s", last)
	}
	cached := filepath.Join(cache, hex.EncodeToString(id), "debuginfo")
	if _, err := os.Stat(cached); err != nil {
		t.Errorf("the debug file is not in debuginfod-client's cache: %v", err)
	}

	// Again with no server that answers: every stack is named from the
	// cache.
	t.Setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1")
	for _, s := range getppidStacks(t, prog) {
		if !re.MatchString(s) {
			t.Fatalf("from the cache, a stack without fetched`middle:\n%s", s)
		}
	}
}
