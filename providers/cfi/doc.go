// Package cfi turns the call-frame information of an ELF file (.eh_frame,
// and .debug_frame where present) into a compact unwind table: for every
// address of the file's code, how to find the caller's frame from the
// current one. It reads files only; nothing here touches the kernel.
//
// The table is what a stack walker needs on x86-64 and no more: where the
// canonical frame address (CFA) is (the stack pointer or the frame pointer
// plus an offset, the PLT's computed rule, a signal frame, or the end of the
// stack), and where the caller's frame pointer was saved (unchanged, or at
// an offset from the CFA). The return address is always at CFA-8 on
// x86-64; a frame described otherwise gets no rule. Rows are sorted by
// address, relative to the file (its virtual addresses, before any load
// bias), and a row holds from its address up to the next row's. Adjacent
// equal rows are merged, and the gaps between functions hold a row with no
// rule, so that a walker never applies one function's rule to another's
// code.
//
// DWARF expressions are refused ("no rule": CFANone), except the two patterns
// toolchains emit for x86-64: the PLT's CFA expression and the signal
// trampoline's (a CIE with the "S" augmentation), which get rules of their
// own.
//
// Unwind is a reference walker over a captured stack, in Go, with the same
// semantics as the BPF one: tests compare the two.
package cfi
