//go:build !amd64

package main

import "errors"

// runToEntry is implemented on amd64 only: elsewhere a -c child stays held
// at exec, before its shared libraries are mapped.
func runToEntry(pid int) error {
	return errors.New("running to the entry point is not implemented on this architecture")
}
