package providers

import (
	"os"
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
	cmd, stdin := startPiped(t, path)

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
	post := []asm.Instruction{
		asm.LoadMem(asm.R0, regState, sparseLayout.argOff(0), asm.DWord),
		asm.LoadMem(asm.R1, regState, sparseLayout.argOff(1), asm.DWord),
		asm.Mov.Reg(regIndex, asm.R1),
		asm.Mul.Imm(asm.R1, 7),
		asm.JEq.Reg(asm.R0, asm.R1, "ok"),
		asm.Mov.Imm(regIndex, 3),
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

// TestUSDTOperands checks the operand forms against values the test sets
// in an asm statement: high and low byte registers, the r8-r15 parts,
// memory at an offset from a register, and sign or zero extension by size.
func TestUSDTOperands(t *testing.T) {
	h := newHarness(t, denseLayout)
	if !regs.supported || len(userRegs) == 0 || userRegs["rax"].size == 0 {
		t.Skip("the operands are x86-64's")
	}
	dir := t.TempDir()
	path := sdttest.Build(t, dir, "operands", map[string]string{"operands.c": `#include <sys/sdt.h>
#include <unistd.h>
static long counter __attribute__((used)) = -9;
static int tab[2] __attribute__((used)) = {1, -2};
int main(void) {
	char c;
	if (read(0, &c, 1) != 1)
		return 1;
	__asm__ volatile(STAP_PROBE_ASM(regs, sym, -8@counter(%%rip) -4@tab+4(%%rip) 4@tab(%%rip)) ::: "memory");
	long vals[4] = {10, -20, 30, 40};
	__asm__ volatile(
		"mov $0x1234, %%eax\n\t"
		"mov $-3, %%rbx\n\t"
		"movabs $0x1fffffffb, %%r9\n\t"
		"mov %0, %%rsi\n\t"
		STAP_PROBE_ASM(regs, hit, -1@%%ah 1@%%al -1@%%bl 1@%%bl -4@%%r9d 8@%%r9 -4@8(%%rsi) 8@16(%%rsi) 2@%%ax -2@-8(%%rsi))
		:: "r"(vals) : "rax", "rbx", "rsi", "r9", "memory");
	return 0;
}
`}, "-O1")
	cmd, stdin := startPiped(t, path)

	u := NewUSDT()
	ps, err := u.Probes(Desc{Provider: "regs" + strconv.Itoa(cmd.Process.Pid), Name: "hit"})
	if err != nil || len(ps) != 1 {
		t.Fatalf("probes: %v, %v", ps, err)
	}
	prog := h.program(ebpf.Kprobe, u, ps[0])
	c, err := u.Attach(ps[0], prog)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Variables through the instruction pointer, in a PIE.
	hs := newHarness(t, denseLayout)
	syms, err := u.Probes(Desc{Provider: "regs" + strconv.Itoa(cmd.Process.Pid), Name: "sym"})
	if err != nil || len(syms) != 1 {
		t.Fatalf("probes: %v, %v", syms, err)
	}
	cs, err := u.Attach(syms[0], hs.program(ebpf.Kprobe, u, syms[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	stdin.Write([]byte{'\n'})
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if got, _ := hs.last(); got != [NumArgs]uint64{neg(9), neg(2), 1} || hs.total() != 1 {
		t.Errorf("sym: %d events, args %#x; want 1, [-9 -2 1]", hs.total(), got)
	}
	if n := h.total(); n != 1 {
		t.Fatalf("%d events, want 1", n)
	}
	args, _ := h.last()
	// -8(%rsi) is below vals: whatever the stack holds there, only its
	// low two bytes, sign-extended, may show.
	low := int64(args[9])
	if low < -32768 || low > 32767 {
		t.Errorf("arg9 = %#x, not a sign-extended 16-bit value", args[9])
	}
	args[9] = 0
	want := [NumArgs]uint64{0x12, 0x34, neg(3), 0xfd, neg(5), 0x1fffffffb, neg(20), 30, 0x1234, 0}
	if args != want {
		t.Errorf("args = %#x\nwant   %#x", args, want)
	}
}

func neg(v int64) uint64 { return uint64(-v) }
