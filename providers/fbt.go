package providers

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// FBT is the function-boundary provider: fbt:MODULE:FUNCTION:entry|return
// on kernel functions. It needs kprobes or fentry programs; on a kernel
// with neither, naming the provider fails with a message that says which
// features are missing. Listing every provider skips it quietly.
type FBT struct{}

// Name is "fbt".
func (FBT) Name() string { return "fbt" }

// Probes fails when d names fbt itself: this version traces no kernel
// functions yet, and says whether the kernel could.
func (FBT) Probes(d Desc) ([]*Probe, error) {
	if d.Provider != "fbt" {
		return nil, nil
	}
	return nil, fbtUnavailable()
}

// Prologue is never reached: fbt has no probes.
func (FBT) Prologue(pr *Probe, p *Prologue) error { return fbtUnavailable() }

// Attach is never reached: fbt has no probes.
func (FBT) Attach(pr *Probe, prog *ebpf.Program) (io.Closer, error) {
	return nil, fbtUnavailable()
}

// ErrFBTUnavailable is wrapped by fbt's errors.
var ErrFBTUnavailable = errors.New("fbt provider unavailable")

// fbtUnavailable says what the kernel lacks for fbt, probing once.
var fbtUnavailable = sync.OnceValue(func() error {
	var missing []string
	if _, err := os.Stat("/sys/bus/event_source/devices/kprobe"); err != nil {
		missing = append(missing, "kprobes (this kernel was built without them: no kprobe event source in /sys/bus/event_source/devices)")
	}
	if err := fentryWorks(); err != nil {
		// (cilium/ebpf's hint about MEMLOCK does not apply to root.)
		msg, _, _ := strings.Cut(err.Error(), " (MEMLOCK")
		missing = append(missing, fmt.Sprintf("fentry/fexit programs (loading one failed: %s)", msg))
	}
	if len(missing) == 0 {
		return fmt.Errorf("%w: kernel function tracing is not implemented in this version of dstar", ErrFBTUnavailable)
	}
	return fmt.Errorf("%w: this kernel lacks %s", ErrFBTUnavailable, strings.Join(missing, " and "))
})

// fentryWorks loads (and drops) a trivial fentry program: the one way to
// learn whether the kernel takes them.
func fentryWorks() error {
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFEntry, AttachTo: "do_sys_openat2",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}, License: "GPL",
	})
	if err != nil {
		return err
	}
	return p.Close()
}
