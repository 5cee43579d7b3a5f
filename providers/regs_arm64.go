package providers

import "fmt"

// The arm64 struct pt_regs: regs[31], sp, pc, pstate, orig_x0, s32
// syscallno, ... (8 bytes each but syscallno). Perf-event programs see the
// user_pt_regs prefix (regs, sp, pc, pstate), which is the same.
var regs = regsLayout{
	supported: true,
	ip:        256, // pc
	mode:      264, // pstate: mode bits 0-3 are zero (EL0t) in user mode
	modeMask:  0xf,
	// Syscall ABI: x0-x5.
	sysArgs:   [6]int16{0, 8, 16, 24, 32, 40},
	sysNr:     280, // syscallno
	sysNrSize: 4,
}

// userRegs names the arm64 registers: x0-x30 and their w halves, sp.
var userRegs = func() map[string]userReg {
	m := map[string]userReg{"sp": {248, 0, 8}, "fp": {232, 0, 8}, "lr": {240, 0, 8}}
	for i := 0; i <= 30; i++ {
		n := fmt.Sprint(i)
		m["x"+n] = userReg{int16(8 * i), 0, 8}
		m["w"+n] = userReg{int16(8 * i), 0, 4}
	}
	return m
}()
