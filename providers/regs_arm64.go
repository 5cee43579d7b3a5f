package providers

import "strconv"

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
	// C ABI: x0-x7; the return value in x0.
	callArgs:  []int16{0, 8, 16, 24, 32, 40, 48, 56},
	ret:       0,
	sp:        248,
	stackArgs: 0,
	// Go: x0-x8.
	goArgs: [9]int16{0, 8, 16, 24, 32, 40, 48, 56, 64},
	names:  arm64RegNames(),
}

// arm64RegNames names x0-x30 (R_X0...), sp, pc and pstate, and the
// machine-independent R_PC, R_SP, R_FP, R_PS, R_R0 and R_R1.
func arm64RegNames() map[string]int {
	m := map[string]int{"R_SP": 31, "R_PC": 32, "R_PS": 33, "R_FP": 29, "R_R0": 0, "R_R1": 1}
	for i := 0; i <= 30; i++ {
		m["R_X"+strconv.Itoa(i)] = i
	}
	return m
}

// userRegs names the arm64 registers: x0-x30 and their w halves, sp.
var userRegs = func() map[string]userReg {
	m := map[string]userReg{"sp": {248, 0, 8}, "fp": {232, 0, 8}, "lr": {240, 0, 8}}
	for i := 0; i <= 30; i++ {
		n := strconv.Itoa(i)
		m["x"+n] = userReg{int16(8 * i), 0, 8}
		m["w"+n] = userReg{int16(8 * i), 0, 4}
	}
	return m
}()
