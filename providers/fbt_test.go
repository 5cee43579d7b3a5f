package providers

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/ksym"
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

// TestFBTFentryTypes checks how fentry/fexit probes are typed from BTF
// (which needs no fentry support, only BTF): entry args are the
// function's parameters, return's args[1] its return value.
func TestFBTFentryTypes(t *testing.T) {
	spec, err := KernelBTF()
	if err != nil {
		bpftest.Skip(t, "no kernel BTF: "+err.Error())
	}
	f := NewFBT(func() (int, error) { return 1, nil })
	types := func(pr *Probe) []string {
		var out []string
		for _, a := range pr.Args {
			out = append(out, a.Type)
		}
		return out
	}
	entry := &Probe{Provider: "fbt", Module: "vmlinux", Function: "ksys_read", Name: "entry"}
	if !f.setMethod(entry, spec, FBTFeatures{}) || entry.AttachType != ebpf.AttachTraceFEntry || entry.AttachTo != "ksys_read" ||
		fmt.Sprint(types(entry)) != "[unsigned int char * size_t]" {
		t.Errorf("ksys_read:entry: %v %q %v", entry.AttachType, entry.AttachTo, types(entry))
	}
	ret := &Probe{Provider: "fbt", Module: "vmlinux", Function: "ksys_read", Name: "return"}
	if !f.setMethod(ret, spec, FBTFeatures{}) || ret.AttachType != ebpf.AttachTraceFExit || fmt.Sprint(types(ret)) != "[int ssize_t]" {
		t.Errorf("ksys_read:return: %v %v", ret.AttachType, types(ret))
	}
	if fp := ret.Private.(fbtProbe); fp.nargs != 3 || !fp.ret || fp.method != fbtFentry {
		t.Errorf("ksys_read:return: %+v", fp)
	}
	void := &Probe{Provider: "fbt", Module: "vmlinux", Function: "schedule", Name: "return"}
	if f.setMethod(void, spec, FBTFeatures{}); len(void.Args) != 1 {
		t.Errorf("schedule:return (void): args %v", types(void))
	}
	// Without fentry and without BTF, a kprobe.
	kp := &Probe{Provider: "fbt", Module: "vmlinux", Function: "ksys_read", Name: "entry"}
	miss := errors.New("missing")
	if !f.setMethod(kp, nil, FBTFeatures{KprobeMulti: miss, Fentry: miss}) || kp.ProgType != ebpf.Kprobe || kp.Args != nil {
		t.Errorf("kprobe fallback: %v %v", kp.ProgType, kp.Args)
	}
	if f.setMethod(kp, nil, FBTFeatures{miss, miss, miss}) {
		t.Error("a probe with no mechanism was accepted")
	}
}

func TestParseKallsyms(t *testing.T) {
	in := "ffffffff81000000 T _stext\n" +
		"ffffffff81001000 t vfs_read\n" +
		"ffffffff81002000 t vfs_read\n" + // a second static of the same name
		"ffffffff81003000 t foo.isra.0\n" +
		"ffffffff81004000 D some_data\n" +
		"ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n" +
		"ffffffffc0025df0 t bpf_prog_fe5c_d1_BEGIN\t[bpf]\n" +
		"ffffffffc0300000 t xfs_read\t[xfs]\n"
	tab, err := ksym.Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(traceable(tab.Functions()))
	if want := "[{_stext vmlinux} {vfs_read vmlinux} {xfs_read xfs}]"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
