package engine_test

import (
	"io"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/engine"
	"github.com/dstar-trace/dstar/providers"
	"github.com/dstar-trace/dstar/providers/bpftest"
)

// BenchmarkGetpid measures what a traced getpid system call costs under
// each program; "untraced" is the floor. bench/run compares the same
// programs with bpftrace.
func BenchmarkGetpid(b *testing.B) {
	bpftest.Require(b)
	for _, bc := range []struct{ name, src string }{
		{"untraced", ""},
		{"false-predicate", `syscall::getpid:entry /0/ { }`},
		{"count", `syscall::getpid:entry { @ = count(); }`},
		{"count-by-execname", `syscall::getpid:entry { @[execname] = count(); }`},
		{"sum-two-keys", `syscall::getpid:entry { @[execname, tid] = sum(arg0); }`},
		{"printf", `syscall::getpid:entry { printf("%d %s\n", pid, execname); }`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if bc.src != "" {
				s := engine.NewSession(engine.Options{Quiet: true, Out: io.Discard, Err: io.Discard})
				if _, err := s.Enable(compile(b, bc.src), providers.Default()); err != nil {
					b.Fatal(err)
				}
				defer s.Close()
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				syscall.RawSyscall(syscall.SYS_GETPID, 0, 0, 0)
			}
		})
	}
}

// BenchmarkStartup measures compiling, loading and enabling "BEGIN {
// exit(0); }", then closing it: dstar's own start-up, without the process.
func BenchmarkStartup(b *testing.B) {
	bpftest.Require(b)
	for i := 0; i < b.N; i++ {
		s := engine.NewSession(engine.Options{Quiet: true, Out: io.Discard, Err: io.Discard})
		if _, err := s.Enable(compile(b, `BEGIN { exit(0); }`), providers.Default()); err != nil {
			b.Fatal(err)
		}
		<-s.Done()
		s.Close()
	}
}

// BenchmarkSnapshot100k reads and merges an aggregation of 100,000 keys.
func BenchmarkSnapshot100k(b *testing.B) {
	bpftest.Require(b)
	s := engine.NewSession(engine.Options{Quiet: true, Out: io.Discard, Err: io.Discard})
	defer s.Close()
	en, err := s.Enable(compile(b, `syscall::getpid:entry { @[timestamp] = count(); }`), providers.Default())
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 100_000; i++ {
		syscall.RawSyscall(syscall.SYS_GETPID, 0, 0, 0)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		snap, err := en.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		if n := len(snap.Aggs[0].Rows); n < 100_000 {
			b.Fatalf("%d keys", n)
		}
	}
}

// BenchmarkProfileSymbolize reads and symbolises a system-wide profile
// recorded for real: profile-997 keyed by user and kernel stack, for
// DSTAR_BENCH_PROFILE seconds (default 3) while a shell loop starts short
// programs and another spins. Each iteration decodes every row as the
// first snapshot after tracing does, with user symbolisation's caches
// emptied (the parsed ELF files stay cached).
func BenchmarkProfileSymbolize(b *testing.B) {
	bpftest.Require(b)
	secs := 3
	if v, err := strconv.Atoi(os.Getenv("DSTAR_BENCH_PROFILE")); err == nil && v > 0 {
		secs = v
	}
	s := engine.NewSession(engine.Options{Quiet: true, Out: io.Discard, Err: io.Discard})
	defer s.Close()
	en, err := s.Enable(compile(b, `profile-997 { @[ustack(), stack()] = count(); }`), providers.Default())
	if err != nil {
		b.Fatal(err)
	}
	stopLoad := bpftest.StartLoad(b, bpftest.ProfileLoad...)
	time.Sleep(time.Duration(secs) * time.Second)
	stopLoad()
	if err := en.Disable(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	rows := 0
	for i := 0; i < b.N; i++ {
		if rows, err = engine.ReadAggsCold(en); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows), "rows")
}
