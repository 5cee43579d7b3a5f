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
	callArgs: []int16{112, 104, 96, 88, 72, 64},
	ret:      80,
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
