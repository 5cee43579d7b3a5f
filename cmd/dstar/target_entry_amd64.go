package main

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// runToEntry lets a child held at exec (ptrace-stopped) run to its
// executable's entry point and stops it there: by then the dynamic linker
// has mapped the shared libraries, so pid probes on them (libc.so.6) can
// be found in /proc/PID/maps and placed before the program's own code
// runs. It plants a breakpoint at the entry (AT_ENTRY from the auxiliary
// vector), continues to it, then restores the instruction and the PC.
func runToEntry(pid int) error {
	entry, err := auxEntry(pid)
	if err != nil {
		return err
	}
	orig := make([]byte, 8)
	if _, err := unix.PtracePeekText(pid, uintptr(entry), orig); err != nil {
		return fmt.Errorf("reading the entry point: %v", err)
	}
	patched := append([]byte(nil), orig...)
	patched[0] = breakInsn
	if _, err := unix.PtracePokeText(pid, uintptr(entry), patched); err != nil {
		return fmt.Errorf("planting a breakpoint at the entry point: %v", err)
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
			return fmt.Errorf("process exited before reaching its entry point")
		}
		if ws.Stopped() && ws.StopSignal() == unix.SIGTRAP {
			break
		}
		sig = int(ws.StopSignal()) // not ours: deliver it
	}
	if _, err := unix.PtracePokeText(pid, uintptr(entry), orig); err != nil {
		return fmt.Errorf("restoring the entry point: %v", err)
	}
	pc, regs, err := getPC(pid)
	if err != nil {
		return err
	}
	if pc != entry+breakPCAdj {
		return fmt.Errorf("stopped at %#x, not at the entry point %#x", pc, entry)
	}
	return setPC(pid, regs, entry)
}

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

// int3 is the x86 breakpoint instruction; once it traps, the PC is one
// byte past it.
const (
	breakInsn  = 0xcc
	breakPCAdj = 1
)

func getPC(pid int) (uint64, *unix.PtraceRegs, error) {
	var r unix.PtraceRegs
	if err := unix.PtraceGetRegs(pid, &r); err != nil {
		return 0, nil, err
	}
	return r.Rip, &r, nil
}

func setPC(pid int, r *unix.PtraceRegs, pc uint64) error {
	r.Rip = pc
	return unix.PtraceSetRegs(pid, r)
}

// atEntry is the auxiliary vector's AT_ENTRY tag (elf.h).
const atEntry = 9
