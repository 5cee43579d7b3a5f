package elfsym

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"errors"
	"io"
)

// A Go binary's function table, .gopclntab, is what the Go runtime
// itself unwinds and names frames with, so no strip can take it away:
// go build -ldflags='-s -w' keeps the section. A file stripped of its
// section headers too (sstrip, objcopy --strip-section-headers) still
// holds the table in its read-only segment, where it is found by the
// header it starts with (Go 1.18 and later). The table's addresses are
// offsets from the start of Go's text, which the section header of
// .text gives, and the layout of Go's linker without it.

// goPCLNTab returns the bytes of ef's Go function table, from its
// .gopclntab section or, without section headers, found in its
// segments; nil when ef is not a Go binary.
func goPCLNTab(ef *elf.File) ([]byte, error) {
	if sec := ef.Section(".gopclntab"); sec != nil {
		return sec.Data()
	}
	if len(ef.Sections) > 1 {
		return nil, nil // a file with sections, none of them Go's
	}
	for _, p := range ef.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X != 0 || p.Filesz == 0 {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			return nil, err
		}
		if tab := findPCLNTab(ef, b); tab != nil {
			return tab, nil
		}
	}
	return nil, nil
}

// goTextStart returns the address of the start of ef's Go text: .text,
// or without section headers where Go's linker puts it, a page into
// the text segment (which starts with the ELF headers and notes, in
// the page it reserves for them); 0 when there is no such segment.
func goTextStart(ef *elf.File) uint64 {
	if t := ef.Section(".text"); t != nil {
		return t.Addr
	}
	const headerPage = 0x1000
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && p.Off == 0 && p.Filesz > headerPage {
			return p.Vaddr + headerPage
		}
	}
	return 0
}

// pclnMagics are the first words of Go 1.18's and Go 1.20's tables.
var pclnMagics = []uint32{0xfffffff0, 0xfffffff1}

// findPCLNTab finds, in a segment's bytes b, a Go function table whose
// functions lie in ef's executable segments: the header's magic, two
// zero bytes, the instruction size quantum and the pointer size, then
// a table that parses.
func findPCLNTab(ef *elf.File, b []byte) []byte {
	for _, magic := range pclnMagics {
		var m [4]byte
		ef.ByteOrder.PutUint32(m[:], magic)
		pat := append(m[:], 0, 0)
		for off := 0; ; {
			i := bytes.Index(b[off:], pat)
			if i < 0 {
				break
			}
			at := off + i
			off = at + 1
			if at+8 > len(b) || !validQuantum(b[at+6]) || b[at+7] != 4 && b[at+7] != 8 {
				continue
			}
			if funcs, err := pclnFuncs(ef, b[at:], goTextStart(ef)); err == nil && len(funcs) > 0 && inText(ef, funcs) {
				return b[at:]
			}
		}
	}
	return nil
}

// validQuantum reports whether q is an instruction size quantum Go
// uses: 1 (x86), 2 (s390x), 4 (arm64, the other RISCs).
func validQuantum(q byte) bool { return q == 1 || q == 2 || q == 4 }

// inText reports whether every function of funcs lies in an executable
// segment of ef: bytes that only look like a table's header fail it.
func inText(ef *elf.File, funcs []gosym.Func) bool {
	for _, fn := range funcs {
		ok := false
		for _, p := range ef.Progs {
			if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && p.Vaddr <= fn.Entry && fn.End <= p.Vaddr+p.Memsz {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// pclnFuncs parses the table tab, whose code starts at text.
func pclnFuncs(ef *elf.File, tab []byte, text uint64) (funcs []gosym.Func, err error) {
	// debug/gosym trusts the table it is given: bytes that are not one
	// can make it index out of range.
	defer func() {
		if recover() != nil {
			funcs, err = nil, errors.New("malformed Go function table")
		}
	}()
	t, err := gosym.NewTable(nil, gosym.NewLineTable(tab, text))
	if err != nil {
		return nil, err
	}
	return t.Funcs, nil
}

// goFuncs reads the functions of a Go binary from its function table
// tab.
func goFuncs(ef *elf.File, tab []byte) ([]Symbol, error) {
	funcs, err := pclnFuncs(ef, tab, goTextStart(ef))
	if err != nil {
		return nil, err
	}
	out := make([]Symbol, 0, len(funcs))
	for _, fn := range funcs {
		if fn.Entry == 0 || fn.End <= fn.Entry {
			continue
		}
		out = append(out, Symbol{Name: fn.Name, Value: fn.Entry, Size: fn.End - fn.Entry, Global: true, Source: GoPCLNTab})
	}
	return out, nil
}
