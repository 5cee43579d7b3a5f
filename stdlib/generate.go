package stdlib

// syscalls.star is made from the syscall provider's tables.
//go:generate go run ./internal/gensyscalls -o syscalls.star
