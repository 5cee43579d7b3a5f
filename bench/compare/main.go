// Command compare measures dstar beside bpftrace in one run, alternating
// between them round by round so that both see the same machine, and
// prints the medians and their ratios.
//
// It measures start-up (launch to exit of a BEGIN-only program: wall time
// and peak RSS), the cost each tracer adds to a getpid system call for
// "@ = count()" against an empty BPF program on the same event, and printf
// throughput with every record accounted for (delivered or reported as
// dropped), and tracing every system call at once; and for user stacks,
// the cost of @[ustack()] at a uprobe 20 frames deep, the CPU that
// profile-997 { @[ustack()] = count(); } adds on busy CPUs, and the memory
// of a python3 process's unwind tables. Arguments name the measurements to
// run (startup, overhead, printf, allsyscalls, ustack, profile, utables);
// none runs them all. Run it through bench/run, which builds what it needs.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

var (
	dstarBin = flag.String("dstar", "dstar", "dstar binary")
	loadgen  = flag.String("loadgen", "loadgen", "load generator binary")
	rounds   = flag.Int("rounds", 5, "rounds of each measurement")
	calls    = flag.Int("calls", 2_000_000, "getpid calls per overhead run")
	pcalls   = flag.Int("printf-calls", 500_000, "getpid calls per printf run")
	ucalls   = flag.Int("ustack-calls", 100_000, "calls of f per ustack run")
	profDur  = flag.Int("profile-seconds", 10, "seconds of each profile run")
)

func main() {
	flag.Parse()
	if _, err := exec.LookPath("bpftrace"); err != nil {
		fmt.Fprintln(os.Stderr, "compare: bpftrace is not installed (Debian package bpftrace)")
		os.Exit(1)
	}
	only := map[string]bool{}
	for _, a := range flag.Args() {
		only[a] = true
	}
	for _, b := range []struct {
		name string
		run  func()
	}{{"startup", startup}, {"overhead", overhead}, {"printf", printfThroughput}, {"allsyscalls", allSyscalls},
		{"ustack", ustackCost}, {"profile", profileCost}, {"utables", tableMemory}} {
		if len(only) == 0 || only[b.name] {
			b.run()
		}
	}
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// runTimed runs a command to completion: wall seconds and peak RSS in KiB.
func runTimed(name string, args ...string) (float64, int64, string) {
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s %q: %v\n%s", name, args, err, out.String())
		os.Exit(1)
	}
	wall := time.Since(start).Seconds()
	return wall, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss, out.String()
}

func startup() {
	var dw, bw, dr, br []float64
	for i := 0; i < *rounds; i++ {
		w, r, _ := runTimed(*dstarBin, "-n", "BEGIN { exit(0); }")
		dw, dr = append(dw, w), append(dr, float64(r))
		w, r, _ = runTimed("bpftrace", "-e", "BEGIN { exit(); }")
		bw, br = append(bw, w), append(br, float64(r))
	}
	fmt.Printf("start-up, BEGIN { exit }        dstar %7.1f ms %7.1f MiB   bpftrace %7.1f ms %7.1f MiB   wall %.3fx  rss %.3fx\n",
		median(dw)*1000, median(dr)/1024, median(bw)*1000, median(br)/1024, median(dw)/median(bw), median(dr)/median(br))
}

// nsPerCall runs the load generator under tracer (or alone when tracer is
// nil) and returns what it reports: nanoseconds per getpid.
func nsPerCall(tracer []string, n int) float64 {
	load := fmt.Sprintf("%s -n %d", *loadgen, n)
	var cmd *exec.Cmd
	if tracer == nil {
		cmd = exec.Command(*loadgen, "-n", strconv.Itoa(n))
	} else {
		args := append(append([]string{}, tracer[1:]...), "-c", load)
		cmd = exec.Command(tracer[0], args...)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "%q: %v\n%s%s", cmd.Args, err, out.String(), errb.String())
		os.Exit(1)
	}
	m := regexp.MustCompile(`(?m)^(\d+\.\d+)$`).FindStringSubmatch(out.String())
	if m == nil {
		fmt.Fprintf(os.Stderr, "%q: no timing in output:\n%s", cmd.Args, out.String())
		os.Exit(1)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// emptyFloor attaches an empty program to the raw sys_enter tracepoint (the
// event dstar's syscall provider uses) and measures the load under it.
func emptyFloor(n int) float64 {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.RawTracepoint, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer prog.Close()
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_enter", Program: prog})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer l.Close()
	return nsPerCall(nil, n)
}

func overhead() {
	type series struct {
		name   string
		tracer []string
		vals   []float64
	}
	all := []*series{
		{name: "dstar    @ = count()", tracer: []string{*dstarBin, "-q", "-n", "syscall::getpid:entry { @ = count(); }"}},
		{name: "bpftrace @ = count()", tracer: []string{"bpftrace", "-q", "-e", "tracepoint:syscalls:sys_enter_getpid { @ = count(); }"}},
		{name: "bpftrace empty", tracer: []string{"bpftrace", "-q", "-e", "tracepoint:syscalls:sys_enter_getpid { }"}},
		{name: "dstar    @[execname] = count()", tracer: []string{*dstarBin, "-q", "-n", "syscall::getpid:entry { @[execname] = count(); }"}},
		{name: "bpftrace @[comm] = count()", tracer: []string{"bpftrace", "-q", "-e", "tracepoint:syscalls:sys_enter_getpid { @[comm] = count(); }"}},
		{name: "dstar    @ = quantize(tid)", tracer: []string{*dstarBin, "-q", "-n", "syscall::getpid:entry { @ = quantize(tid); }"}},
		{name: "bpftrace @ = hist(tid)", tracer: []string{"bpftrace", "-q", "-e", "tracepoint:syscalls:sys_enter_getpid { @ = hist(tid); }"}},
		{name: "dstar    @[execname, tid] = count()", tracer: []string{*dstarBin, "-q", "-n", "syscall::getpid:entry { @[execname, tid] = count(); }"}},
		{name: "bpftrace @[comm, tid] = count()", tracer: []string{"bpftrace", "-q", "-e", "tracepoint:syscalls:sys_enter_getpid { @[comm, tid] = count(); }"}},
	}
	var base, floor []float64
	for i := 0; i < *rounds; i++ {
		b := nsPerCall(nil, *calls)
		base = append(base, b)
		floor = append(floor, emptyFloor(*calls)-b)
		for _, s := range all {
			s.vals = append(s.vals, nsPerCall(s.tracer, *calls)-b)
		}
	}
	fmt.Printf("getpid untraced                 %7.1f ns/call\n", median(base))
	fmt.Printf("added by an empty raw-tp program %6.1f ns/call (dstar's floor)\n", median(floor))
	for _, s := range all {
		fmt.Printf("added by %-36s %7.1f ns/call\n", s.name, median(s.vals))
	}
	fmt.Printf("dstar/bpftrace for @ = count(): %.3f (above each one's empty program: %.3f)\n",
		median(all[0].vals)/median(all[1].vals),
		(median(all[0].vals)-median(floor))/(median(all[1].vals)-median(all[2].vals)))
	for i := 3; i+1 < len(all); i += 2 {
		fmt.Printf("dstar/bpftrace for %s: %.3f\n", strings.TrimSpace(strings.TrimPrefix(all[i].name, "dstar")),
			median(all[i].vals)/median(all[i+1].vals))
	}
}

// allSyscalls measures tracing every system call: dstar's syscall:::entry
// (one program on raw sys_enter dispatching by number) beside bpftrace's
// tracepoint:syscalls:sys_enter_* (one program per tracepoint). Wall time
// covers start-up, attaching every probe, a run of true(1) and tear-down;
// the per-getpid cost is set beside each one's single-syscall probe.
func allSyscalls() {
	var dw, bw, dAll, dOne, bAll, bOne []float64
	for i := 0; i < *rounds; i++ {
		w, _, _ := runTimed(*dstarBin, "-q", "-n", "syscall:::entry { @ = count(); }", "-c", "/bin/true")
		dw = append(dw, w)
		w, _, _ = runTimed("bpftrace", "-q", "-e", "tracepoint:syscalls:sys_enter_* { @ = count(); }", "-c", "/bin/true")
		bw = append(bw, w)
		b := nsPerCall(nil, *calls)
		dAll = append(dAll, nsPerCall([]string{*dstarBin, "-q", "-n", "syscall:::entry { @ = count(); }"}, *calls)-b)
		dOne = append(dOne, nsPerCall([]string{*dstarBin, "-q", "-n", "syscall::getpid:entry { @ = count(); }"}, *calls)-b)
		bAll = append(bAll, nsPerCall([]string{"bpftrace", "-q", "-e", "tracepoint:syscalls:sys_enter_* { @ = count(); }"}, *calls)-b)
		bOne = append(bOne, nsPerCall([]string{"bpftrace", "-q", "-e", "tracepoint:syscalls:sys_enter_getpid { @ = count(); }"}, *calls)-b)
	}
	fmt.Printf("every syscall, run of true      dstar %7.1f ms   bpftrace %7.1f ms   wall %.3fx\n",
		median(dw)*1000, median(bw)*1000, median(dw)/median(bw))
	fmt.Printf("added per getpid, all syscalls  dstar %7.1f ns (%.2fx its getpid probe)   bpftrace %7.1f ns (%.2fx its getpid probe)   dstar/bpftrace %.3f\n",
		median(dAll), median(dAll)/median(dOne), median(bAll), median(bAll)/median(bOne), median(dAll)/median(bAll))
}

var lostRe = regexp.MustCompile(`(?m)(\d+) drops on CPU|Lost (\d+) events`)

func printfThroughput() {
	dir, _ := os.MkdirTemp("", "dstar-bench")
	defer os.RemoveAll(dir)
	type series struct {
		name             string
		args             func(out string) []string
		rate, delivered  []float64
		accounted, total int
	}
	all := []*series{
		{name: "dstar", args: func(out string) []string {
			return []string{*dstarBin, "-q", "-o", out, "-n", `syscall::getpid:entry /pid == $target/ { printf("%d %s\n", pid, execname); }`}
		}},
		{name: "bpftrace", args: func(out string) []string {
			return []string{"bpftrace", "-q", "-o", out, "-e", `tracepoint:syscalls:sys_enter_getpid /pid == cpid/ { printf("%d %s\n", pid, comm); }`}
		}},
	}
	for i := 0; i < *rounds; i++ {
		for _, s := range all {
			out := filepath.Join(dir, s.name+".out")
			os.Remove(out)
			args := s.args(out)
			load := fmt.Sprintf("%s -n %d", *loadgen, *pcalls)
			cmd := exec.Command(args[0], append(args[1:], "-c", load)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "%q: %v\n%s", cmd.Args, err, stderr.String())
				os.Exit(1)
			}
			ns, _ := strconv.ParseFloat(strings.TrimSpace(lastLine(stdout.String())), 64)
			b, _ := os.ReadFile(out)
			lines := bytes.Count(b, []byte("\n"))
			lost := 0
			for _, m := range lostRe.FindAllStringSubmatch(stderr.String()+string(b), -1) {
				n, _ := strconv.Atoi(m[1] + m[2])
				lost += n
			}
			// bpftrace's output file has its own lines ("Attaching ...").
			delivered := bytes.Count(b, []byte(" loadgen\n"))
			s.rate = append(s.rate, 1e9/ns)
			s.delivered = append(s.delivered, float64(delivered))
			s.total += *pcalls
			s.accounted += delivered + lost
			_ = lines
		}
	}
	for _, s := range all {
		fmt.Printf("printf, %-8s %10.0f events/s traced   delivered %.0f of %d per run (median); delivered+dropped %d of %d\n",
			s.name, median(s.rate), median(s.delivered), *pcalls, s.accounted, s.total)
	}
	fmt.Printf("printf events/s, dstar/bpftrace: %.2fx\n", median(all[0].rate)/median(all[1].rate))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
