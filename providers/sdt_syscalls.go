package providers

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf/asm"
	"github.com/dstar-trace/dstar/providers/sysnum"
	"github.com/dstar-trace/dstar/providers/tracefs"
)

// The syscalls group's tracepoints (sdt:syscalls::sys_enter_NAME and
// sys_exit_NAME) are not tracepoints of their own: the kernel makes each
// from the raw sys_enter or sys_exit tracepoint, filtered on the system
// call's number. Served by perf events, each costs the kernel a grace
// period when released, one after another under a global mutex (about
// 27 ms here: 721 of them took 20 s to tear down). So dstar serves them
// as the syscall provider does: one program on the raw tracepoint,
// dispatching on the number, whose link closes in a fraction of a
// millisecond. The record's fields are what the raw tracepoint gives: the
// arguments from the saved registers, the return value, and the number,
// so args->field reads the same values from where the prologue puts them.

// sdtSyscall is what an sdt probe of the syscalls group served on a raw
// tracepoint keeps.
type sdtSyscall struct{ syscallProbe }

// rawSyscall says whether e is a syscalls tracepoint dstar can serve on a
// raw tracepoint: one whose number it knows, on an architecture whose
// registers it knows.
func rawSyscall(e tracefs.Event) (sdtSyscall, bool) {
	if e.Group != "syscalls" || !regs.supported {
		return sdtSyscall{}, false
	}
	name, entry := strings.CutPrefix(e.Name, "sys_enter_")
	if !entry {
		var ok bool
		if name, ok = strings.CutPrefix(e.Name, "sys_exit_"); !ok {
			return sdtSyscall{}, false
		}
	}
	nr, ok := sysnum.Lookup(name)
	if !ok {
		return sdtSyscall{}, false
	}
	return sdtSyscall{syscallProbe{nr: nr, entry: entry}}, true
}

// slotSyscallArgs says where each field of a syscalls record is found:
// __syscall_nr is the probe's own number; the others, in order, are in
// arg0, arg1, ..., where sdtSyscallPrologue leaves them.
func slotSyscallArgs(args []Arg, sc sdtSyscall) {
	n := 0
	for i := range args {
		a := &args[i]
		if a.Name == "__syscall_nr" {
			a.Kind, a.Value = ArgConst, int64(sc.nr)
			continue
		}
		if isScalar(a) && n < NumArgs {
			n++
			a.Slot = n
		}
	}
}

// sdtSyscallPrologue fills arg0..arg5 with the arguments at entry, arg0
// with the return value at exit, as the record's fields are, zeroing the
// rest and errno (the sdt provider has none).
func sdtSyscallPrologue(pr *Probe, p *Prologue, sc sdtSyscall) {
	if sc.entry {
		syscallEntry(pr, p, int32(sc.nr))
		return
	}
	if !p.Filtered {
		exitNr(p)
		p.Insns = append(p.Insns, asm.JNE.Imm(asm.R0, int32(sc.nr), p.Skip))
	}
	setup(p)
	p.Insns = append(p.Insns, asm.LoadMem(asm.R0, p.Ctx, 8, asm.DWord)) // ret
	storeArg(p, 0, asm.R0)
	zeroArgs(p, 1)
	zeroErrno(p)
}

// Group puts the sdt syscalls probes served on raw tracepoints on
// sys_enter or sys_exit, apart from the syscall provider's (their
// programs differ); other sdt probes share nothing.
func (*SDT) Group(pr *Probe) string {
	sc, ok := pr.Private.(sdtSyscall)
	switch {
	case !ok:
		return ""
	case sc.entry:
		return "sdt_sys_enter"
	}
	return "sdt_sys_exit"
}

// Key is the system call's number.
func (*SDT) Key(pr *Probe) int64 {
	sc, _ := pr.Private.(sdtSyscall)
	return int64(sc.nr)
}

// LoadKey loads the number of the system call entering or returning.
func (*SDT) LoadKey(group string, p *Prologue) error {
	g, ok := strings.CutPrefix(group, "sdt_")
	if !ok {
		return fmt.Errorf("sdt: no shared attach point %q", group)
	}
	return (*Syscall)(nil).LoadKey(g, p)
}
