package main

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// runToEntry lets a child held at exec (ptrace-stopped) run to its
// executable's entry point (AT_ENTRY from the auxiliary vector) and stops
// it there: by then the dynamic linker has mapped the shared libraries, so
// pid probes on them (libc.so.6) can be found in /proc/PID/maps and placed
// before the program's own code runs.
func runToEntry(pid int) error {
	entry, err := auxEntry(pid)
	if err != nil {
		return err
	}
	return runTo(pid, entry, "the entry point")
}

// runToMain runs a child held at its entry point on to its main function.
func runToMain(pid int) error {
	addr, err := mainAddress(pid)
	if err != nil {
		return err
	}
	return runTo(pid, addr, "main")
}

// runTo plants a breakpoint at run-time address addr of a ptrace-stopped
// child, continues it to there, then restores the instruction and the PC,
// leaving the child stopped at addr.
func runTo(pid int, addr uint64, what string) error {
	orig := make([]byte, 8)
	if _, err := unix.PtracePeekText(pid, uintptr(addr), orig); err != nil {
		return fmt.Errorf("reading %s: %v", what, err)
	}
	patched := append([]byte(nil), orig...)
	patched[0] = breakInsn
	if _, err := unix.PtracePokeText(pid, uintptr(addr), patched); err != nil {
		return fmt.Errorf("planting a breakpoint at %s: %v", what, err)
	}
	sig := 0
	for {
		if err := unix.PtraceCont(pid, sig); err != nil {
			return err
		}
		var ws unix.WaitStatus
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
			return err
		}
		if ws.Exited() || ws.Signaled() {
			return fmt.Errorf("process exited before reaching %s", what)
		}
		if ws.Stopped() && ws.StopSignal() == unix.SIGTRAP {
			break
		}
		sig = int(ws.StopSignal()) // not ours: deliver it
	}
	if _, err := unix.PtracePokeText(pid, uintptr(addr), orig); err != nil {
		return fmt.Errorf("restoring %s: %v", what, err)
	}
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(pid, &regs); err != nil {
		return err
	}
	// After int3 traps, the PC is one byte past it.
	if regs.Rip != addr+1 {
		return fmt.Errorf("stopped at %#x, not at %s (%#x)", regs.Rip, what, addr)
	}
	regs.Rip = addr
	return unix.PtraceSetRegs(pid, &regs)
}

// breakInsn is x86's breakpoint instruction, int3.
const breakInsn = 0xcc

// auxEntry reads AT_ENTRY, the run-time address of the executable's entry
// point, from /proc/PID/auxv.
func auxEntry(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/auxv", pid))
	if err != nil {
		return 0, err
	}
	for i := 0; i+16 <= len(b); i += 16 {
		if binary.LittleEndian.Uint64(b[i:]) == atEntry {
			return binary.LittleEndian.Uint64(b[i+8:]), nil
		}
	}
	return 0, fmt.Errorf("no AT_ENTRY in /proc/%d/auxv", pid)
}

// atEntry is the auxiliary vector's AT_ENTRY tag (elf.h).
const atEntry = 9
