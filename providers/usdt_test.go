package providers

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/dstar-trace/dstar/providers/stapsdt/sdttest"
)

func TestUSDTClaims(t *testing.T) {
	u := NewUSDT()
	for pat, want := range map[string]bool{"": true, "myprov1234": true, "myprov*": true, "syscall": false, "usdt": false} {
		if got := u.Claims(pat); got != want {
			t.Errorf("Claims(%q) = %v", pat, got)
		}
	}
	// A provider name may end in digits: python3 in process 1234 is
	// python31234, and every split whose process exists is a candidate.
	pid := os.Getpid()
	got := u.pidsFor("python3" + strconv.Itoa(pid))
	found := false
	for _, p := range got {
		found = found || p == pid
	}
	if !found {
		t.Errorf("pidsFor(python3%d) = %v, lacks %d", pid, got, pid)
	}
	if got := u.pidsFor("myprov*"); len(got) != 0 {
		t.Errorf("pidsFor(myprov*) without targets = %v", got)
	}
	u.AddTarget(pid)
	if got := u.pidsFor("myprov*"); len(got) != 1 || got[0] != pid {
		t.Errorf("pidsFor(myprov*) = %v, want the target %d", got, pid)
	}
}

// TestUSDTSites runs a probe with three sites in one function, two with
// constant arguments and one with registers: one probe, whose prologue
// dispatches on the attachment's cookie to the site's argument specs.
func TestUSDTSites(t *testing.T) {
	h := newHarness(t, sparseLayout)
	dir := t.TempDir()
	path := sdttest.Build(t, dir, "sites", map[string]string{"sites.c": `#include <sys/sdt.h>
#include <unistd.h>
int main(int argc, char **argv) {
	char c;
	if (read(0, &c, 1) != 1)
		return 1;
	DTRACE_PROBE2(multi, hit, 7L, (short)1);
	DTRACE_PROBE2(multi, hit, 14L, (short)2);
	DTRACE_PROBE2(multi, hit, 7L * argc, (short)argc);
	return 0;
}
`}, "-O2")
	cmd := exec.Command(path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()

	u := NewUSDT()
	pid := cmd.Process.Pid
	ps, err := u.Probes(Desc{Provider: "multi" + strconv.Itoa(pid)})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].String() != "multi"+strconv.Itoa(pid)+":sites:main:hit" {
		t.Fatalf("probes: %v", ps)
	}
	pr := ps[0]
	if sites := pr.Private.(*usdtProbe).sites; len(sites) != 3 || len(usdtVariants(sites)) < 2 {
		t.Fatalf("sites: %+v", sites)
	}
	if len(pr.Args) != 2 || pr.Args[0].Type != "int64_t" || pr.Args[1].Type != "int16_t" {
		t.Errorf("args: %+v", pr.Args)
	}
	// Count each event under arg1 (1 or 2), or under 3 if arg0 is not
	// 7*arg1.
	bad := "bad"
	post := []asm.Instruction{
		asm.LoadMem(asm.R0, regState, sparseLayout.argOff(0), asm.DWord),
		asm.LoadMem(asm.R1, regState, sparseLayout.argOff(1), asm.DWord),
		asm.Mov.Reg(regIndex, asm.R1),
		asm.Mul.Imm(asm.R1, 7),
		asm.JEq.Reg(asm.R0, asm.R1, "ok"),
		asm.Mov.Imm(regIndex, 3).WithSymbol(bad),
		asm.Mov.Reg(regIndex, regIndex).WithSymbol("ok"),
	}
	prog := h.program(ebpf.Kprobe, u, pr, post...)
	c, err := u.Attach(pr, prog)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stdin.Write([]byte{'\n'})
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := h.counts(); got != [4]uint64{0, 2, 1, 0} {
		t.Errorf("counts by arg1 = %v, want [0 2 1 0]", got)
	}
}
