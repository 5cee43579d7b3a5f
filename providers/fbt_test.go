package providers

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"
)

// TestFBTKprobePrologue loads kprobe programs around the fbt entry and
// return prologues (the verifier checks their pt_regs reads even on a
// kernel that cannot attach them), and attaches them where it can.
func TestFBTKprobePrologue(t *testing.T) {
	h := newHarness(t, sparseLayout)
	f := NewFBT(func() (int, error) { return 1 << 24, nil })
	for _, name := range []string{"entry", "return"} {
		pr := &Probe{ID: 1, Provider: "fbt", Module: "vmlinux", Function: "ksys_read", Name: name, ProgType: ebpf.Kprobe,
			Private: fbtProbe{fn: "ksys_read", ret: name == "return", method: fbtKprobe}}
		prog := h.program(ebpf.Kprobe, f, pr, threadFilter(t)...)
		if probeFBT().Kprobe != nil {
			continue
		}
		c, err := f.Attach(pr, prog)
		if err != nil {
			t.Fatal(err)
		}
		os.ReadFile("/etc/hostname")
		c.Close()
		if h.total() == 0 {
			t.Errorf("%s: no events", pr)
		}
	}
}

// TestFBTUnavailable checks the error naming fbt gives on a kernel without
// any mechanism, and that listing every provider skips fbt there.
func TestFBTUnavailable(t *testing.T) {
	newHarness(t, denseLayout) // for bpftest.Require
	f := NewFBT(func() (int, error) { return 1 << 24, nil })
	ps, err := f.Probes(mustDesc(t, "fbt::ksys_read:entry"))
	if FBTAvailable() == nil {
		if err != nil || len(ps) != 1 {
			t.Fatalf("fbt::ksys_read:entry: %v, %v", ps, err)
		}
		return
	}
	if !errors.Is(err, ErrFBTUnavailable) {
		t.Fatalf("fbt::ksys_read:entry: %v, %v; want ErrFBTUnavailable", ps, err)
	}
	if ps, err := f.List(Desc{}); err != nil || len(ps) != 0 {
		t.Errorf("listing all: %d probes, %v", len(ps), err)
	}
}
