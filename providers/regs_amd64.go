package providers

// The x86_64 struct pt_regs: r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si
// di orig_ax ip cs flags sp ss, 8 bytes each. Perf-event programs see the
// same struct as the start of bpf_perf_event_data.
var regs = regsLayout{
	supported:    true,
	ip:           128,
	mode:         136, // cs: the low two bits are the privilege level
	modeMask:     3,
	kernelIfZero: true,
	// Syscall ABI: di, si, dx, r10, r8, r9.
	sysArgs:   [6]int16{112, 104, 96, 56, 72, 64},
	sysNr:     120, // orig_ax
	sysNrSize: 8,
	// C ABI: di, si, dx, cx, r8, r9; the return value in ax.
	callArgs:  []int16{112, 104, 96, 88, 72, 64},
	ret:       80,
	sp:        152,
	stackArgs: 8,
	// Go: ax, bx, cx, di, si, r8, r9, r10, r11.
	goArgs: [9]int16{80, 40, 88, 112, 104, 72, 64, 56, 48},
	names: map[string]int{
		"R_R15": 0, "R_R14": 1, "R_R13": 2, "R_R12": 3, "R_RBP": 4, "R_RBX": 5,
		"R_R11": 6, "R_R10": 7, "R_R9": 8, "R_R8": 9, "R_RAX": 10, "R_RCX": 11,
		"R_RDX": 12, "R_RSI": 13, "R_RDI": 14, "R_RIP": 16, "R_CS": 17,
		"R_RFL": 18, "R_RSP": 19, "R_SS": 20,
		// The machine-independent names.
		"R_PC": 16, "R_SP": 19, "R_FP": 4, "R_PS": 18, "R_R0": 10, "R_R1": 12,
	},
}

// userRegs names the x86_64 registers and their parts.
var userRegs = func() map[string]userReg {
	m := map[string]userReg{}
	// The legacy registers: rax, eax, ax, al, ah and the like.
	for _, r := range []struct {
		name string // "a", "b", "c", "d": rNx, eNx, Nx, Nl, Nh
		off  int16
	}{{"a", 80}, {"b", 40}, {"c", 88}, {"d", 96}} {
		m["r"+r.name+"x"] = userReg{r.off, 0, 8}
		m["e"+r.name+"x"] = userReg{r.off, 0, 4}
		m[r.name+"x"] = userReg{r.off, 0, 2}
		m[r.name+"l"] = userReg{r.off, 0, 1}
		m[r.name+"h"] = userReg{r.off, 8, 1}
	}
	for _, r := range []struct {
		name string // "si": rsi, esi, si, sil
		off  int16
	}{{"si", 104}, {"di", 112}, {"bp", 32}, {"sp", 152}} {
		m["r"+r.name] = userReg{r.off, 0, 8}
		m["e"+r.name] = userReg{r.off, 0, 4}
		m[r.name] = userReg{r.off, 0, 2}
		m[r.name+"l"] = userReg{r.off, 0, 1}
	}
	// r8-r15 and their r8d, r8w, r8b (also r8l) parts.
	for i, off := range []int16{72, 64, 56, 48, 24, 16, 8, 0} {
		n := "r" + string(rune('0'+8+i))
		if i >= 2 {
			n = "r1" + string(rune('0'+i-2))
		}
		m[n] = userReg{off, 0, 8}
		m[n+"d"] = userReg{off, 0, 4}
		m[n+"w"] = userReg{off, 0, 2}
		m[n+"b"] = userReg{off, 0, 1}
		m[n+"l"] = userReg{off, 0, 1}
	}
	m["rip"] = userReg{128, 0, 8}
	return m
}()
