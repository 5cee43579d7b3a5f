package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// The user-stack measurements (issue 12's costs): dstar walks user stacks
// with each file's call-frame information, bpftrace by frame pointers.

// pyLoop is a pure-Python loop, a few calls deep: the interpreter's frames
// have no frame pointers (Debian builds python3 without them).
const pyLoop = `
def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def middle(n):
    return leaf(n) + 1
def outer():
    while True:
        middle(10000)
outer()
`

// buildDeep compiles bench/workloads/deep.c: f called at a stack 20
// frames deep (f, 15 of down, main, two of libc's, _start).
func buildDeep(dir string) string {
	bin := filepath.Join(dir, "deep")
	src := filepath.Join("bench", "workloads", "deep.c")
	if out, err := exec.Command("cc", "-O2", "-fno-omit-frame-pointer", "-o", bin, src).CombinedOutput(); err != nil {
		fail("building %s: %v\n%s", src, err, out)
	}
	return bin
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "compare: "+format+"\n", args...)
	os.Exit(1)
}

// deepNs runs deep under tracer (alone when nil): ns per call of f, and
// what the run printed.
func deepNs(deep string, tracer []string) (float64, string) {
	load := fmt.Sprintf("%s %d 14", deep, *ucalls)
	var cmd *exec.Cmd
	if tracer == nil {
		cmd = exec.Command(deep, strconv.Itoa(*ucalls), "14")
	} else {
		cmd = exec.Command(tracer[0], append(append([]string{}, tracer[1:]...), "-c", load)...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		fail("%q: %v\n%s%s", cmd.Args, err, out.String(), errb.String())
	}
	first, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	v, err := strconv.ParseFloat(strings.TrimSpace(first), 64)
	if err != nil {
		fail("%q: no timing in output:\n%s", cmd.Args, out.String())
	}
	return v, out.String()
}

// stackDepth is the most frames of one stack in a printed aggregation:
// the lines between a blank line and the count.
func stackDepth(out string) int {
	most, n := 0, 0
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case t == "":
			n = 0
		case strings.ContainsAny(t, "`+") || strings.HasPrefix(t, "0x"):
			n++
			most = max(most, n)
		default:
			n = 0
		}
	}
	return most
}

// ustackCost: per-event cost of @[ustack()] at a uprobe whose stack is 20
// frames deep, dstar beside bpftrace, above the untraced call and above
// each one's uprobe doing nothing.
func ustackCost() {
	dir, _ := os.MkdirTemp("", "dstar-bench")
	defer os.RemoveAll(dir)
	deep := buildDeep(dir)
	type series struct {
		name   string
		tracer []string
		vals   []float64
		depth  int
	}
	all := []*series{
		{name: "dstar    @[ustack()] = count()", tracer: []string{*dstarBin, "-q", "-n", "pid$target::f:entry { @[ustack()] = count(); }"}},
		{name: "bpftrace @[ustack] = count()", tracer: []string{"bpftrace", "-q", "-e", "uprobe:" + deep + ":f { @[ustack] = count(); }"}},
		{name: "dstar    empty clause", tracer: []string{*dstarBin, "-q", "-n", "pid$target::f:entry { }"}},
		{name: "bpftrace empty", tracer: []string{"bpftrace", "-q", "-e", "uprobe:" + deep + ":f { }"}},
	}
	var base []float64
	for i := 0; i < *rounds; i++ {
		b, _ := deepNs(deep, nil)
		base = append(base, b)
		for _, s := range all {
			v, out := deepNs(deep, s.tracer)
			s.vals = append(s.vals, v-b)
			s.depth = max(s.depth, stackDepth(out))
		}
	}
	fmt.Printf("call of f untraced                      %9.1f ns/call\n", median(base))
	for _, s := range all {
		depth := ""
		if s.depth > 0 {
			depth = fmt.Sprintf("   (stacks of %d frames)", s.depth)
		}
		fmt.Printf("added by %-30s %9.1f ns/call%s\n", s.name, median(s.vals), depth)
	}
	d, bt, de, be := median(all[0].vals), median(all[1].vals), median(all[2].vals), median(all[3].vals)
	fmt.Printf("dstar/bpftrace for @[ustack()], 20 frames: %.3f (above each one's empty uprobe: %.1f ns vs %.1f ns)\n", d/bt, d-de, bt-be)
}

// lastID is the newest kernel object ID next walks through (programs',
// or maps'): those made after it have greater IDs.
func lastID[ID ~uint32](next func(ID) (ID, error)) ID {
	var last ID
	for {
		id, err := next(last)
		if err != nil {
			return last
		}
		last = id
	}
}

// progRuntimes follows the BPF programs of type typ made after the call,
// until stop: the last run time the kernel reported for each.
func progRuntimes(typ ebpf.ProgramType, stop <-chan struct{}) <-chan time.Duration {
	first := lastID(ebpf.ProgramGetNextID)
	res := make(chan time.Duration, 1)
	go func() {
		seen := map[ebpf.ProgramID]time.Duration{}
		poll := func() {
			for id := first; ; {
				next, err := ebpf.ProgramGetNextID(id)
				if err != nil {
					return
				}
				id = next
				p, err := ebpf.NewProgramFromID(id)
				if err != nil {
					continue
				}
				if p.Type() == typ {
					if st, err := p.Stats(); err == nil {
						seen[id] = max(seen[id], st.Runtime)
					}
				}
				p.Close()
			}
		}
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				var sum time.Duration
				for _, d := range seen {
					sum += d
				}
				res <- sum
				return
			case <-t.C:
				poll()
			}
		}
	}()
	return res
}

// busy starts a pure-Python loop on every CPU, and returns what stops
// them.
func busy() func() {
	var cmds []*exec.Cmd
	for range runtime.NumCPU() {
		c := exec.Command("python3", "-c", pyLoop)
		if err := c.Start(); err != nil {
			fail("python3: %v", err)
		}
		cmds = append(cmds, c)
	}
	return func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}
}

// profileCost: profile-997 { @[ustack()] = count(); } on every CPU, every
// CPU busy in python3, for profile-seconds: the CPU the tracer adds, as
// the run time of its BPF programs (kernel.bpf_stats_enabled) and its own
// process's CPU time, each a share of all the CPUs' time.
func profileCost() {
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		fail("enabling BPF run-time statistics: %v", err)
	}
	defer stats.Close()
	stop := busy()
	defer stop()
	secs := *profDur
	type series struct {
		name       string
		args       []string
		bpf, user  []float64
		maxRSS     []float64
		totalShare []float64
		steady     []float64
	}
	all := []*series{
		{name: "dstar", args: []string{*dstarBin, "-q", "-n", fmt.Sprintf("profile-997 { @[ustack()] = count(); } tick-%ds { exit(0); }", secs)}},
		{name: "bpftrace", args: []string{"bpftrace", "-q", "-e", fmt.Sprintf("profile:hz:997 { @[ustack] = count(); } interval:s:%d { exit(); }", secs)}},
	}
	cpuTime := float64(secs) * float64(runtime.NumCPU())
	for i := 0; i < *rounds; i++ {
		for _, s := range all {
			done := make(chan struct{})
			rt := progRuntimes(ebpf.PerfEvent, done)
			cmd := exec.Command(s.args[0], s.args[1:]...)
			var errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = nil, &errb
			if err := cmd.Start(); err != nil {
				fail("%q: %v", cmd.Args, err)
			}
			// The steady state: the tracer's CPU time from 2 s after its
			// start to 1 s before its end, past its start-up and before
			// its exit's printing.
			time.Sleep(2 * time.Second)
			t0, c0 := time.Now(), procCPU(cmd.Process.Pid)
			time.Sleep(time.Duration(secs-3) * time.Second)
			t1, c1 := time.Now(), procCPU(cmd.Process.Pid)
			err := cmd.Wait()
			close(done)
			bpf := (<-rt).Seconds()
			if err != nil {
				fail("%q: %v\n%s", cmd.Args, err, errb.String())
			}
			s.steady = append(s.steady, 100*(c1-c0)/(t1.Sub(t0).Seconds()*float64(runtime.NumCPU())))
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			user := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
			s.bpf = append(s.bpf, 100*bpf/cpuTime)
			s.user = append(s.user, 100*user/cpuTime)
			s.totalShare = append(s.totalShare, 100*(bpf+user)/cpuTime)
			s.maxRSS = append(s.maxRSS, float64(ru.Maxrss)/1024)
		}
	}
	for _, s := range all {
		fmt.Printf("profile-997 @[ustack()], %d CPUs busy, %ds, %-8s BPF programs %.3f%%, tracer process %.3f%% (%.3f%% while tracing, past start-up and before exit), total %.3f%% of CPU time; peak RSS %.1f MiB\n",
			runtime.NumCPU(), secs, s.name, median(s.bpf), median(s.user), median(s.steady), median(s.totalShare), median(s.maxRSS))
	}
}

// procCPU is process pid's CPU time so far, in seconds.
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis: state is the
	// first, utime and stime the 12th and 13th.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / 100 // clock ticks: USER_HZ is 100 on Linux
}

// ustackMaps finds the walker's maps of a dstar run: those named
// ustack_* made after first.
func ustackMaps(first ebpf.MapID) map[string]*ebpf.Map {
	out := map[string]*ebpf.Map{}
	for id := first; ; {
		next, err := ebpf.MapGetNextID(id)
		if err != nil {
			return out
		}
		id = next
		m, err := ebpf.NewMapFromID(id)
		if err != nil {
			continue
		}
		info, err := m.Info()
		if err != nil || !strings.HasPrefix(info.Name, "ustack_") {
			m.Close()
			continue
		}
		out[info.Name] = m
	}
}

// tableMemory: the unwind tables of one python3 process, sampled by
// profile-997: the rows loaded (16 bytes each) and what the kernel
// reports each walker map holds (memlock; the rows array is allocated
// whole when made).
func tableMemory() {
	first := lastID(ebpf.MapGetNextID)
	cmd := exec.Command(*dstarBin, "-q", "-n", "profile-997 /pid == $target/ { @[ustack()] = count(); } tick-3s { exit(0); }",
		"-c", "python3 -c '"+pyLoop+"'")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		fail("%v", err)
	}
	time.Sleep(2 * time.Second)
	maps := ustackMaps(first)
	rows, ok := maps["ustack_rows"]
	if !ok {
		cmd.Process.Kill()
		fail("no ustack_rows map in dstar's run:\n%s", errb.String())
	}
	used := 0
	if mem, err := rows.Memory(); err == nil {
		buf := make([]byte, mem.Size())
		mem.ReadAt(buf, 0)
		for off := 0; off+16 <= len(buf); off += 16 {
			if !bytes.Equal(buf[off:off+16], make([]byte, 16)) {
				used++
			}
		}
	} else {
		fail("reading the rows: %v", err)
	}
	var lines []string
	var total uint64
	for name, m := range maps {
		if info, err := m.Info(); err == nil {
			ml, _ := info.Memlock()
			total += ml
			lines = append(lines, fmt.Sprintf("%s %.2f MiB", name, float64(ml)/(1<<20)))
		}
		m.Close()
	}
	if err := cmd.Wait(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		fail("%q: %v\n%s", cmd.Args, err, errb.String())
	}
	sort.Strings(lines)
	fmt.Printf("python3's unwind rows: %d (%.2f MiB); walker maps in the kernel: %.2f MiB (%s)\n",
		used, float64(used*16)/(1<<20), float64(total)/(1<<20), strings.Join(lines, ", "))
}
