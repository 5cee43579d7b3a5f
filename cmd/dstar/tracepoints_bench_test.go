package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// BenchmarkTracepoints attaches and releases 100, 1,000 and every
// tracepoint (system calls' included, spread evenly over the list) with
// dstar and with bpftrace in the same run, each counting events into one
// aggregation; BEGIN, which both fire once every probe is attached,
// prints a line and exits, and END prints another. Reported, as medians
// of the iterations: s/run, the whole run; s/teardown, from BEGIN's line
// to the process's exit (END, the output and the release of every
// probe); s/after-output, from the last line of output to the exit: what
// the user waits for the kernel's clean-up once the output is complete
// (bpftrace releases its probes before END, dstar after).
//
//   - dstar: clauses reading no field, served by raw tracepoints (the
//     system calls' by the raw sys_enter and sys_exit);
//   - dstar-fields: a clause reading a field, so every tracepoint but the
//     system calls' is a perf event, as all of bpftrace's are;
//   - dstar-run-fields: the same clause attached by a `dstar run`
//     script, which prints "ready", closes its session and prints
//     "done";
//   - bpftrace: tracepoint:GROUP:EVENT.
//
// With DSTAR_BASELINE set to another dstar binary (an earlier build),
// dstar-baseline runs it on the same script as dstar, for before and after
// figures from one run.
//
// Each iteration starts when the previous one's perf events are all
// released (dstar's releaser gone): a release in progress makes the
// kernel wait a grace period for each tracepoint enabled meanwhile.
//
//	go test ./cmd/dstar -run '^$' -bench Tracepoints -benchtime 3x
func BenchmarkTracepoints(b *testing.B) {
	bpftest.Require(b)
	var all []string
	for _, ev := range tracepoints(b, true) {
		// x86 refuses bpftrace's perf event there (dstar skips it only
		// with -x skiprefused).
		if ev != "irq_vectors:irq_work_exit" {
			all = append(all, ev)
		}
	}
	for _, n := range []int{100, 1000, len(all)} {
		evs := make([]string, n)
		for i := range evs {
			evs[i] = all[i*len(all)/n]
		}
		dir := b.TempDir()
		write := func(name, text string) string {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				b.Fatal(err)
			}
			return path
		}
		list := sdtList(evs)
		const begin = "BEGIN { printf(\"ready\\n\"); exit(0); }\n"
		dcount := write("count.d", list+" { @ = count(); }\n"+begin+"END { printf(\"done\\n\"); }\n")
		dfields := write("fields.d", list+" /arg0 != 12345/ { @ = count(); }\n"+begin+"END { printf(\"done\\n\"); }\n")
		bt := make([]string, n)
		for i, ev := range evs {
			bt[i] = "tracepoint:" + ev
		}
		btrace := write("count.bt", strings.Join(bt, ",")+" { @ = count(); }\n"+strings.Replace(begin, "exit(0)", "exit()", 1)+"END { printf(\"done\\n\"); }\n")
		b.Run(fmt.Sprintf("%d/dstar", n), func(b *testing.B) { benchRun(b, exec.Command(dstarBin, "-q", "-s", dcount)) })
		if base := os.Getenv("DSTAR_BASELINE"); base != "" {
			b.Run(fmt.Sprintf("%d/dstar-baseline", n), func(b *testing.B) { benchRun(b, exec.Command(base, "-q", "-s", dcount)) })
		}
		b.Run(fmt.Sprintf("%d/dstar-fields", n), func(b *testing.B) { benchRun(b, exec.Command(dstarBin, "-q", "-s", dfields)) })
		script := write("fields.star", fmt.Sprintf("s = dtrace.session(quiet=True)\ns.attach(%q)\nprint(\"ready\")\ns.close()\nprint(\"done\")\n",
			list+" /arg0 != 12345/ { @ = count(); }"))
		b.Run(fmt.Sprintf("%d/dstar-run-fields", n), func(b *testing.B) { benchRun(b, exec.Command(dstarBin, "run", script)) })
		b.Run(fmt.Sprintf("%d/bpftrace", n), func(b *testing.B) {
			if _, err := exec.LookPath("bpftrace"); err != nil {
				bpftest.Skip(b, "bpftrace is not installed (.ci/run installs it)")
			}
			cmd := exec.Command("bpftrace", btrace)
			cmd.Env = append(os.Environ(), "BPFTRACE_MAX_PROBES=100000")
			benchRun(b, cmd)
		})
	}
}

// benchRun runs proto b.N times, each when no releaser is left, and
// reports the medians of the whole run, of the time from its "ready" line
// to its exit, and of the time from its last line to its exit.
func benchRun(b *testing.B, proto *exec.Cmd) {
	var runs, teardowns, after []float64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		for releasers() > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		cmd := exec.Command(proto.Path, proto.Args[1:]...)
		cmd.Env = proto.Env
		var errb bpftest.Buffer
		cmd.Stderr = &errb
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		var ready, last time.Time
		done := false
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			last = time.Now()
			switch sc.Text() {
			case "ready":
				ready = last
			case "done":
				done = true
			}
		}
		err = cmd.Wait()
		end := time.Now()
		b.StopTimer()
		if err != nil || ready.IsZero() || !done {
			b.Fatalf("%s: %v (ready: %v, done: %v)\n%s", proto.Args[0], err, !ready.IsZero(), done, errb.String())
		}
		runs = append(runs, end.Sub(start).Seconds())
		teardowns = append(teardowns, end.Sub(ready).Seconds())
		after = append(after, end.Sub(last).Seconds())
	}
	b.ReportMetric(median(runs), "s/run")
	b.ReportMetric(median(teardowns), "s/teardown")
	b.ReportMetric(median(after), "s/after-output")
}

// BenchmarkRefusal is the issue's `sdt:::` case: a clause reading a field
// of every tracepoint, which x86 refuses on irq_vectors:irq_work_exit.
// dstar tries every probe, says how many were refused and why, and exits
// 1. The iterations run back to back, each while the previous one's
// releaser closes its perf events (as a user re-running a command sees):
// s/run is the median time from launch to the error, s/small-start that
// of a one-probe session started after each, while releasers work.
//
//	go test ./cmd/dstar -run '^$' -bench Refusal -benchtime 5x
func BenchmarkRefusal(b *testing.B) {
	bpftest.Require(b)
	if _, err := os.Stat("/sys/kernel/tracing/events/irq_vectors/irq_work_exit"); err != nil {
		bpftest.Skip(b, "no irq_vectors:irq_work_exit tracepoint (not x86)")
	}
	var runs, small []float64
	for range b.N {
		start := time.Now()
		out, err := exec.Command(dstarBin, "-q", "-n", "sdt::: /arg0 != 12345/ { @ = count(); }").CombinedOutput()
		runs = append(runs, time.Since(start).Seconds())
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "probes could not be enabled: sdt:irq_vectors::irq_work_exit") {
			b.Fatalf("%v\n%s", err, out)
		}
		// A small session started meanwhile (reading a format file).
		start = time.Now()
		if out, err := exec.Command(dstarBin, "-q", "-n", "syscall::kill:entry { @ = count(); } BEGIN { exit(0); }").CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		small = append(small, time.Since(start).Seconds())
	}
	b.ReportMetric(median(runs), "s/run")
	b.ReportMetric(median(small), "s/small-start")
	b.StopTimer()
	for releasers() > 0 {
		time.Sleep(50 * time.Millisecond)
	}
}
