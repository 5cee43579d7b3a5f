//go:build !amd64 && !arm64

package providers

// regs is unknown on this architecture: prologues that need pt_regs
// (profile, syscall) report that they are unsupported.
var regs = regsLayout{}

var userRegs = map[string]userReg{}
