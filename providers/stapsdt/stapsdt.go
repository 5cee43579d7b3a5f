// Package stapsdt reads the statically defined tracing probes that
// <sys/sdt.h> (systemtap's SDT macros, DTRACE_PROBE and STAP_PROBE) leave in
// an ELF file: one ELF note of type 3 named "stapsdt" per probe site, in the
// .note.stapsdt section, giving the site's address, the provider and probe
// names, the address of the probe's semaphore (0 if none) and a string that
// says where each argument lives at the site ("-4@%edi 8@-16(%rbp)").
package stapsdt

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// Note is one probe site.
type Note struct {
	Provider string
	Name     string
	// PC is the site's link-time virtual address, and Semaphore that of the
	// probe's semaphore (a u16 the program tests before evaluating the
	// arguments; 0 when the probe has none). Both are already corrected
	// for prelinking (the .stapsdt.base section having moved).
	PC        uint64
	Semaphore uint64
	// ArgSpec is the note's argument string as written; Args its decoding.
	ArgSpec string
	Args    []Arg
}

// noteType is the note type of version 3 probes, the only one sdt.h has
// emitted since 2010 (versions 1 and 2 are long gone).
const noteType = 3

// Notes returns the probe sites of f in the order of its notes. A file
// without a .note.stapsdt section has none. An argument that cannot be
// decoded does not make the note unusable: it is an Unsupported Arg.
func Notes(f *elf.File) ([]Note, error) {
	sec := f.Section(".note.stapsdt")
	if sec == nil {
		return nil, nil
	}
	if sec.Type != elf.SHT_NOTE {
		return nil, fmt.Errorf(".note.stapsdt is not a note section (%v)", sec.Type)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("reading .note.stapsdt: %w", err)
	}
	// The note's base is the link-time address of .stapsdt.base; if the
	// file was prelinked since, the section moved and every address with it.
	var baseNow uint64
	hasBase := false
	if b := f.Section(".stapsdt.base"); b != nil {
		baseNow, hasBase = b.Addr, true
	}
	addrSize := 8
	if f.Class == elf.ELFCLASS32 {
		addrSize = 4
	}
	var out []Note
	order := f.ByteOrder
	for len(data) > 0 {
		if len(data) < 12 {
			return nil, fmt.Errorf(".note.stapsdt: truncated note header")
		}
		namesz := int(order.Uint32(data[0:]))
		descsz := int(order.Uint32(data[4:]))
		typ := order.Uint32(data[8:])
		data = data[12:]
		nameEnd, descEnd := align4(namesz), 0
		if namesz < 0 || nameEnd > len(data) {
			return nil, fmt.Errorf(".note.stapsdt: truncated note name")
		}
		name := string(bytes.TrimRight(data[:namesz], "\x00"))
		descEnd = nameEnd + align4(descsz)
		if descsz < 0 || nameEnd+descsz > len(data) {
			return nil, fmt.Errorf(".note.stapsdt: truncated note body")
		}
		desc := data[nameEnd : nameEnd+descsz]
		data = data[min(descEnd, len(data)):]
		if name != "stapsdt" || typ != noteType {
			continue
		}
		n, err := parseDesc(desc, addrSize, order, f.Machine)
		if err != nil {
			return nil, err
		}
		if hasBase {
			delta := baseNow - n.base
			n.PC += delta
			if n.Semaphore != 0 {
				n.Semaphore += delta
			}
		}
		out = append(out, n.Note)
	}
	return out, nil
}

func align4(n int) int { return (n + 3) &^ 3 }

type rawNote struct {
	Note
	base uint64
}

// parseDesc decodes a note's body: pc, base, semaphore (addresses), then
// provider, name and argument string, each NUL-terminated.
func parseDesc(d []byte, addrSize int, order binary.ByteOrder, m elf.Machine) (rawNote, error) {
	var n rawNote
	if len(d) < 3*addrSize {
		return n, fmt.Errorf(".note.stapsdt: note body too short (%d bytes)", len(d))
	}
	addr := func(i int) uint64 {
		if addrSize == 4 {
			return uint64(order.Uint32(d[i*4:]))
		}
		return order.Uint64(d[i*8:])
	}
	n.PC, n.base, n.Semaphore = addr(0), addr(1), addr(2)
	strs := bytes.SplitN(d[3*addrSize:], []byte{0}, 4)
	if len(strs) < 3 {
		return n, fmt.Errorf(".note.stapsdt: note at %#x lacks its provider or probe name", n.PC)
	}
	n.Provider, n.Name = string(strs[0]), string(strs[1])
	n.ArgSpec = string(strs[2])
	n.Args = ParseArgs(n.ArgSpec, m)
	return n, nil
}
