package engine_test

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/dstar-trace/dstar/dcompiler"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/engine"
	"github.com/dstar-trace/dstar/providers"
	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/tracefs"
)

func compile(t testing.TB, src string) *dcompiler.Program {
	t.Helper()
	p, err := dcompiler.Compile([]*source.File{source.NewFile("t.d", src)}, dcompiler.Options{Providers: providers.Default()})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	return p
}

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// loaded counts how many of ids are programs still in the kernel.
func loaded(ids []ebpf.ProgramID) int {
	n := 0
	for _, id := range ids {
		if p, err := ebpf.NewProgramFromID(id); err == nil {
			p.Close()
			n++
		}
	}
	return n
}

// TestNothingLeftBehind enables and closes programs of every provider and
// checks that every file descriptor and kernel program is released.
func TestNothingLeftBehind(t *testing.T) {
	bpftest.Require(t)
	src := `BEGIN { x = 1; } tick-997hz { @[cpu] = count(); } profile-997 { @p = count(); }
		syscall::getpid:entry { @g = sum(arg0); } sdt:sched::sched_switch { @s[args->prev_comm] = count(); }
		END { printf("end %d\n", x); }`
	prog := compile(t, src)
	// Compiling read formats, which holds the tracefs gate (a lock file)
	// until the session attaches or a second passes: not the session's.
	tracefs.Idle()
	before := openFDs(t)
	var all []ebpf.ProgramID
	for i := 0; i < 3; i++ {
		var out bytes.Buffer
		s := engine.NewSession(engine.Options{Quiet: true, Out: &out, Err: &out})
		en, err := s.Enable(prog, providers.Default())
		if err != nil {
			t.Fatal(err)
		}
		ids := en.ProgramIDs()
		if len(ids) != len(prog.Code.Programs) || loaded(ids) != len(ids) {
			t.Fatalf("%d programs for %d, %d of them loaded", len(ids), len(prog.Code.Programs), loaded(ids))
		}
		all = append(all, ids...)
		if err := en.Disable(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "end 1\n") {
			t.Errorf("END output: %q", out.String())
		}
	}
	if after := openFDs(t); after != before {
		t.Errorf("%d file descriptors before, %d after", before, after)
	}
	// The kernel frees a program an RCU grace period after its last link
	// goes: give it a few.
	deadline := time.Now().Add(5 * time.Second)
	for loaded(all) != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := loaded(all); n != 0 {
		t.Errorf("%d programs left in the kernel", n)
	}
}
