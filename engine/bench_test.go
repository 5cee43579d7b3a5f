package engine_test

import (
	"io"
	"syscall"
	"testing"

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
