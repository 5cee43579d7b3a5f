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
}
