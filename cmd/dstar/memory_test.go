package main

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// TestProfileRoundsMemory: a script that profiles in rounds — a session,
// profile-997 keyed by user and kernel stacks for 300 ms, its
// aggregation read, the session closed — keeps a flat resident size,
// while a loop starts short-lived programs (new processes to symbolise
// every round) and a shell spins (samples to take). Only those programs
// are profiled: the symbols of whatever else the machine runs meanwhile
// (other tests' binaries) would fill the symbol cache up to its bound,
// which is growth, but not a leak.
func TestProfileRoundsMemory(t *testing.T) {
	bpftest.Require(t)
	const rounds = 36
	path := writeScript(t, fmt.Sprintf(`
PROF = """profile-997 /execname == "ls" || execname == "sed" || execname == "sh"/ {
    @[ustack(), stack(), pid] = count();
}"""
for i in range(%d):
    s = dtrace.session(quiet = True)
    e = s.attach(PROF)
    s.run(0.3)
    rows = s.aggregations().get("@", {})
    frames = 0
    for k in rows:
        for st in k:
            # Stacks are tuples of frames where the bindings convert
            # them; the rows are decoded, and symbolised, either way.
            if type(st) == "tuple":
                frames += len(st)
    e.detach()
    s.close()
    print("round %%d %%d %%d" %% (i, len(rows), frames))
# Time for the test to read the last round's size before the process exits.
dtrace.sleep(1)
`, rounds))
	bpftest.StartLoad(t, bpftest.ProfileLoad...)
	cmd := exec.Command(dstarBin, "run", path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// The collector's trace gives the live heap after each collection:
	// a steadier measure than the resident size.
	cmd.Env = append(os.Environ(), "GODEBUG=gctrace=1")
	var errb bpftest.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var rss []int // KiB, after each round
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "round" {
			t.Fatalf("unexpected output %q", line)
		}
		if n, _ := strconv.Atoi(f[2]); n == 0 {
			t.Errorf("%s: no rows", line)
		}
		kb, err := vmRSS(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		rss = append(rss, kb)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	if len(rss) != rounds {
		t.Fatalf("%d rounds of %d: %s", len(rss), rounds, errb.String())
	}
	t.Logf("VmRSS after each round, KiB: %v", rss)
	// The first rounds fill caches (kallsyms, the files' symbols) and
	// grow the heap to where the collector keeps it; after them,
	// resident size stays within a bound of their largest, which the
	// collector's swings (some 15 MiB here) fit in and a leak of a
	// megabyte a round would not.
	const settle, bound = 6, 16 << 10
	base := slices.Max(rss[:settle])
	for i, kb := range rss[settle:] {
		if kb-base > bound {
			t.Errorf("round %d: VmRSS %d KiB, %d KiB more than the first %d rounds' most", settle+i, kb, kb-base, settle)
		}
	}
	// Over the second half of the collections (the first half is
	// start-up and caches filling), the live heap does not rise: its
	// median over the last quarter stays within 3 MB of the one before,
	// where a leak of half a megabyte a round would add some 4. (Medians:
	// a single collection that finds the heap low, or high, is noise; 90
	// rounds level off at 16-20 MB here.)
	var live []int // MB
	for _, m := range regexp.MustCompile(`(?m)^gc \d+ .* \d+->\d+->(\d+) MB`).FindAllStringSubmatch(errb.String(), -1) {
		n, _ := strconv.Atoi(m[1])
		live = append(live, n)
	}
	t.Logf("live heap after each collection, MB: %v", live)
	if len(live) < 6 {
		t.Fatalf("%d collections traced", len(live))
	}
	half := live[len(live)/2:]
	a, b := median(half[:len(half)/2]), median(half[len(half)/2:])
	if b > a+3 {
		t.Errorf("live heap grows: its median rises from %d MB to %d MB over the last half of the collections", a, b)
	}
}

// median is the middle value of xs (the upper one of two).
func median[T cmp.Ordered](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// vmRSS reads process pid's resident size from /proc/PID/status.
func vmRSS(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				return strconv.Atoi(f[0])
			}
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
