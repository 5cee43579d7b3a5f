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

	// callArgs are the offsets of the registers the kernel's C calling
	// convention passes the first arguments in, and ret that of the return
	// value (kprobes on function entry and return).
	callArgs []int16
	ret      int16
	// sp is the offset of the stack pointer, and stackArgs how far above
	// it a function's first stack-passed argument is on entry (x86_64:
	// past the return address the call pushed).
	sp        int16
	stackArgs int16
	// goArgs are the offsets of the first nine integer arguments of a Go
	// function under Go's register ABI (ABIInternal, Go 1.17+).
	goArgs [9]int16
	// names are the D names of the registers uregs[] indexes (R_PC, ...),
	// each with its offset in pt_regs divided by 8, which is its index.
	names map[string]int
}

// UserRegNames returns the D names of the registers uregs[] indexes
// (R_PC, R_SP, R_FP, R_R0, ... and the architecture's own names) with
// their indexes: word i of struct pt_regs is uregs[i].
func UserRegNames() map[string]int { return regs.names }

// NumUserRegs is how many words uregs[] has (the size of pt_regs in
// u64s): 0 where the layout is unknown.
func NumUserRegs() int {
	n := 0
	for _, i := range regs.names {
		n = max(n, i+1)
	}
	return n
}

// userReg is where a user register named as the assembler names it in SDT
// argument specs ("rdi", "edi", "di", "dil", "ah") is in pt_regs: the
// 8-byte slot at off, shifted right by shift bits, size bytes wide.
type userReg struct {
	off   int16
	shift int
	size  int
}
