//go:build !amd64

package main

import "errors"

// runToEntry and runToMain are implemented on amd64 only: elsewhere a -c
// child stays held at exec, before its shared libraries are mapped.
func runToEntry(pid int) error { return errNoRunTo }

func runToMain(pid int) error { return errNoRunTo }

var errNoRunTo = errors.New("holding a process past exec is not implemented on this architecture")
