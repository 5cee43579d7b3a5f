// Package sysnum maps the kernel's syscall names, as tracefs spells them
// (syscalls:sys_enter_NAME), to syscall numbers for the architecture dstar
// is built for. The syscall provider filters raw sys_enter/sys_exit events on
// these numbers.
//
// The tables are generated from golang.org/x/sys/unix, renaming the few
// syscalls whose <asm/unistd.h> name is not the kernel's (stat → newstat).
package sysnum

import "sort"

//go:generate go run ./internal/gensysnum -arch amd64
//go:generate go run ./internal/gensysnum -arch arm64

type entry struct {
	name string
	nr   int
}

// Lookup returns the number of the syscall the kernel calls name.
func Lookup(name string) (nr int, ok bool) {
	i := sort.Search(len(table), func(i int) bool { return table[i].name >= name })
	if i < len(table) && table[i].name == name {
		return table[i].nr, true
	}
	return 0, false
}

// Len is the number of syscalls in the table.
func Len() int { return len(table) }
