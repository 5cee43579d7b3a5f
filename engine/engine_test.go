package engine_test

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/dstar-trace/dstar/dcompiler"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/engine"
	"github.com/dstar-trace/dstar/providers"
	"github.com/dstar-trace/dstar/providers/bpftest"
)

func compile(t *testing.T, src string) *dcompiler.Program {
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

// progsNamed counts the kernel's BPF programs whose name starts with prefix.
func progsNamed(t *testing.T, prefix string) int {
	n := 0
	id := ebpf.ProgramID(0)
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			return n
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue
		}
		if info, err := p.Info(); err == nil && strings.HasPrefix(info.Name, prefix) {
			n++
		}
		p.Close()
	}
}

// TestNothingLeftBehind enables and closes programs of every provider and
// checks that every file descriptor and kernel program is released.
func TestNothingLeftBehind(t *testing.T) {
	bpftest.Require(t)
	src := `BEGIN { x = 1; } tick-997hz { @[cpu] = count(); } profile-997 { @p = count(); }
		syscall::getpid:entry { @g = sum(arg0); } sdt:sched::sched_switch { @s[args->prev_comm] = count(); }
		END { printf("end %d\n", x); }`
	prog := compile(t, src)
	before := openFDs(t)
	for i := 0; i < 3; i++ {
		var out bytes.Buffer
		s := engine.NewSession(engine.Options{Quiet: true, Out: &out, Err: &out})
		en, err := s.Enable(prog, providers.Default())
		if err != nil {
			t.Fatal(err)
		}
		if n := progsNamed(t, "d"+strconv.Itoa(prog.Probes()[1].ID)+"_tick"); n != 1 {
			t.Fatalf("tick program loaded %d times while enabled", n)
		}
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
	if n := progsNamed(t, "d"+strconv.Itoa(prog.Probes()[1].ID)+"_tick"); n != 0 {
		t.Errorf("%d programs left in the kernel", n)
	}
}
