package script

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

var spun atomic.Uint64

//go:noinline
func spinForProfile(stop *atomic.Bool) {
	for !stop.Load() {
		spun.Add(1)
	}
}

// TestPprof: dtrace.pprof writes a profile of this process's user stacks
// that go tool pprof reads, naming the function that spun, with the
// test binary's mapping.
func TestPprof(t *testing.T) {
	bpftest.Require(t)
	var stop atomic.Bool
	go spinForProfile(&stop)
	defer stop.Store(true)
	path := filepath.Join(t.TempDir(), "cpu.pb.gz")
	var out, errb bytes.Buffer
	r := New(Options{Stdout: &out, Stderr: &errb})
	defer r.Close()
	src := fmt.Sprintf(`
s = dtrace.session(quiet=True)
s.attach("profile-997 /pid == %d/ { @[ustack(), execname] = count(); }")
dtrace.sleep("1s")
dtrace.pprof(s, "@", path=%q, name="cpu", labels=["execname"])
`, os.Getpid(), path)
	if err := r.ExecFile("pprof.star", src); err != nil {
		var b bytes.Buffer
		PrintError(&b, err)
		t.Fatalf("%s%s", b.String(), errb.String())
	}
	if served, ok := r.Profile("cpu"); !ok || len(served) == 0 {
		t.Errorf("the profile named cpu is not kept for dstar serve")
	}
	top, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "tool", "pprof", "-top", path).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, top)
	}
	if !strings.Contains(string(top), "spinForProfile") || !strings.Contains(string(top), "Type: samples") {
		t.Errorf("go tool pprof -top does not show spinForProfile:\n%s", top)
	}
	f, _ := os.Open(path)
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	found := false
	for _, m := range p.Mapping {
		found = found || m.File == exe && m.Start > 0 && m.Limit > m.Start
	}
	if !found {
		t.Errorf("no mapping of %s with its address range in %v", exe, p.Mapping)
	}
	if len(p.Sample) == 0 || len(p.Sample[0].Label["execname"]) != 1 {
		t.Errorf("samples carry no execname label: %v", p.Sample)
	}
}
