//go:build !linux || !(amd64 || arm64)

package sysnum

// table is empty where dstar has no syscall table: the syscall provider then
// offers no probes.
var table = [...]entry{}
