package providers

// regsLayout is where the probes' prologues find things in the kernel's
// struct pt_regs. It is the one place that knows the layout; the values are
// in the per-architecture files regs_<arch>.go.
type regsLayout struct {
	supported bool

	// ip is the offset of the instruction pointer (x86 ip, arm64 pc).
	ip int16
	// mode is the offset of the register that tells kernel from user mode
	// (x86 cs, arm64 pstate); (reg & modeMask) == 0 means kernel mode when
	// kernelIfZero, user mode otherwise.
	mode         int16
	modeMask     int32
	kernelIfZero bool

	// sysArgs are the offsets of the six syscall arguments.
	sysArgs [6]int16
	// sysNr is the offset of the syscall number as saved at entry
	// (x86 orig_ax, arm64 syscallno) and sysNrSize its size (8 or 4, signed).
	sysNr     int16
	sysNrSize int
}

// userReg is where a user register named as the assembler names it in SDT
// argument specs ("rdi", "edi", "di", "dil", "ah") is in pt_regs: the
// 8-byte slot at off, shifted right by shift bits, size bytes wide.
type userReg struct {
	off   int16
	shift int
	size  int
}
