package providers

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/tracefs"
)

// TestRegistryIDs checks the ID layout, and that listing and matching give
// the same IDs.
func TestRegistryIDs(t *testing.T) {
	bpftest.Require(t)
	r := Default()
	all, err := r.List(Desc{})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range all[:3+len(profileNames)] {
		if p.ID != i+1 {
			t.Fatalf("probe %d is %v with ID %d", i, p, p.ID)
		}
	}
	if p := all[3+len(profileNames)]; p.Provider != "syscall" || p.ID != 4+len(profileNames) {
		t.Errorf("first syscall probe: %v ID %d", p, p.ID)
	}
	seen := map[int]*Probe{}
	byName := map[string]int{}
	last := 0
	for _, p := range all {
		if q := seen[p.ID]; q != nil {
			t.Fatalf("ID %d is %v and %v", p.ID, q, p)
		}
		if p.ID < firstDynamicID && p.ID != last+1 {
			t.Fatalf("%v has ID %d after %d", p, p.ID, last)
		}
		seen[p.ID] = p
		byName[p.String()] = p.ID
		last = p.ID
	}
	for _, d := range []string{"BEGIN", "syscall::read:", "sdt:sched::", ":::sys_enter_openat", "tick-1s", "profile:::", "syscall:::return"} {
		ps, err := r.Match(mustDesc(t, d))
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == 0 {
			t.Errorf("%s matches nothing", d)
		}
		for _, p := range ps {
			if byName[p.String()] != p.ID {
				t.Errorf("%s: %v has ID %d, listed as %d", d, p, p.ID, byName[p.String()])
			}
		}
	}
	sdt, _ := r.Match(mustDesc(t, ":::sys_enter_openat"))
	if len(sdt) != 1 || sdt[0].Provider != "sdt" {
		t.Errorf(":::sys_enter_openat: %v", sdt)
	}
	t.Logf("%d probes", len(all))
}

func TestRegistryLookup(t *testing.T) {
	r := Default()
	var names []string
	for _, p := range r.Providers() {
		names = append(names, p.Name())
	}
	if got := strings.Join(names, ","); got != "dtrace,profile,syscall,sdt,proc,sched,io,rawtp,fbt,pid,usdt" {
		t.Errorf("providers: %s", got)
	}
	if p, err := r.ProviderOf(dtraceProbes[0]); err != nil || p.Name() != "dtrace" {
		t.Errorf("ProviderOf(BEGIN) = %v, %v", p, err)
	}
	if p, err := r.ProviderOf(&Probe{Provider: "pid123"}); err != nil || p.Name() != "pid" {
		t.Errorf("ProviderOf(pid123 probe) = %v, %v", p, err)
	}
	for _, name := range []string{"pid", "pid12x", "pidfoo", "pid0"} {
		if p := r.Lookup(name); name != "pid" && p != nil {
			t.Errorf("Lookup(%q) = %v", name, p.Name())
		}
	}
	if _, err := r.ProviderOf(&Probe{Provider: "nosuch"}); err == nil {
		t.Error("ProviderOf(nosuch probe): no error")
	}
	ps, err := r.Match(mustDesc(t, "BEGIN"))
	if err != nil || len(ps) != 1 || ps[0].ID != BeginID {
		t.Errorf("Match(BEGIN) = %v, %v", ps, err)
	}
}

// TestColdStart runs the registry in a fresh process: matching BEGIN must
// not read tracefs, and listing every probe must be quick.
func TestColdStart(t *testing.T) {
	if os.Getenv("DSTAR_COLD_START_CHILD") == "1" {
		coldStartChild(t)
		return
	}
	bpftest.Require(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestColdStart$", "-test.v")
	cmd.Env = append(os.Environ(), "DSTAR_COLD_START_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "cold:") {
			t.Log(strings.TrimSpace(line))
		}
	}
}

func coldStartChild(t *testing.T) {
	start := time.Now()
	r := Default()
	for _, d := range []string{"BEGIN", "END", "dtrace:::ERROR", "tick-1s", "profile:::profile-997", "profile-1234"} {
		ps, err := r.Match(mustDesc(t, d))
		if err != nil || len(ps) != 1 {
			t.Fatalf("Match(%s) = %v, %v", d, ps, err)
		}
	}
	matchTime := time.Since(start)
	if tracefs.Loaded() {
		t.Fatal("matching dtrace and profile probes read tracefs")
	}

	start = time.Now()
	all, err := r.List(Desc{})
	if err != nil {
		t.Fatal(err)
	}
	listTime := time.Since(start)
	if btfLoaded.Load() {
		t.Error("listing read the kernel's BTF")
	}

	start = time.Now()
	allArgs, err := r.Match(Desc{})
	if err != nil {
		t.Fatal(err)
	}
	matchAllTime := time.Since(start)
	fmt.Printf("cold: BEGIN/END/ERROR/tick/profile: %v without tracefs; list all %d probes: %v; match all with args (%d format files): %v\n",
		matchTime, len(all), listTime, len(allArgs), matchAllTime)
	if listTime > 500*time.Millisecond {
		t.Errorf("listing took %v", listTime)
	}
}

func BenchmarkListAll(b *testing.B) {
	bpftest.Require(b)
	r := Default()
	for b.Loop() {
		if _, err := r.List(Desc{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMatchBegin(b *testing.B) {
	r := Default()
	d := Desc{Name: "BEGIN"}
	for b.Loop() {
		if _, err := r.Match(d); err != nil {
			b.Fatal(err)
		}
	}
}
