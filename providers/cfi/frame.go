package cfi

import (
	"fmt"
	"strings"
)

// cie is a Common Information Entry: what the FDEs that point at it share.
type cie struct {
	codeAlign uint64
	dataAlign int64
	raReg     uint64
	fdeEnc    uint8 // pointer encoding of the FDEs' addresses
	augData   bool  // 'z': FDEs carry an augmentation length
	signal    bool  // 'S': the FDEs describe signal trampolines
	initial   []byte
	err       error // a CIE we cannot read: its FDEs get no rule
}

// fde is a Frame Description Entry: the rules for one range of code.
type fde struct {
	cie        *cie
	start, end uint64
	insns      []byte
}

// section is a call-frame section's bytes and where they are loaded.
type section struct {
	data []byte
	addr uint64 // sh_addr: what pc-relative pointers are relative to
	eh   bool   // .eh_frame (else .debug_frame)
}

// parse reads every FDE of s, with the CIE each points at. Entries it
// cannot read are left out: the code they describe gets no rule.
func (s section) parse() ([]fde, error) {
	cies := map[int]*cie{}
	var fdes []fde
	r := &reader{b: s.data}
	for r.off < len(s.data) {
		start := r.off
		length := uint64(r.u32())
		dwarf64 := length == 0xffffffff
		if dwarf64 {
			length = r.u64()
		}
		if r.err != nil {
			return fdes, fmt.Errorf("entry at %#x: %w", start, r.err)
		}
		if length == 0 {
			if s.eh {
				break // the terminator
			}
			continue
		}
		body := r.off
		if length > uint64(len(s.data)-body) {
			return fdes, fmt.Errorf("entry at %#x: length %#x runs past the section", start, length)
		}
		end := body + int(length)
		e := &reader{b: s.data[:end], off: body}
		r.off = end
		var id uint64
		if dwarf64 {
			id = e.u64()
		} else {
			id = uint64(e.u32())
		}
		if s.isCIE(id, dwarf64) {
			cies[start] = s.cie(e)
			continue
		}
		var at int
		if s.eh {
			at = body - int(id)
		} else {
			at = int(id)
		}
		c, ok := cies[at]
		if !ok {
			// A CIE after its FDE is allowed in .debug_frame.
			if at < 0 || at >= len(s.data) {
				continue
			}
			c = s.cieAt(at)
			cies[at] = c
		}
		if c.err != nil {
			continue
		}
		if f, ok := s.fde(e, c); ok {
			fdes = append(fdes, f)
		}
	}
	return fdes, nil
}

func (s section) isCIE(id uint64, dwarf64 bool) bool {
	if s.eh {
		return id == 0
	}
	if dwarf64 {
		return id == ^uint64(0)
	}
	return id == 0xffffffff
}

// cieAt reads the CIE whose entry starts at offset at.
func (s section) cieAt(at int) *cie {
	r := &reader{b: s.data, off: at}
	length := uint64(r.u32())
	dwarf64 := length == 0xffffffff
	if dwarf64 {
		length = r.u64()
	}
	if r.err != nil || length > uint64(len(s.data)-r.off) {
		return &cie{err: errTruncated}
	}
	e := &reader{b: s.data[:r.off+int(length)], off: r.off}
	var id uint64
	if dwarf64 {
		id = e.u64()
	} else {
		id = uint64(e.u32())
	}
	if !s.isCIE(id, dwarf64) {
		return &cie{err: fmt.Errorf("no CIE at %#x", at)}
	}
	return s.cie(e)
}

// cie reads a CIE's fields after its id.
func (s section) cie(r *reader) *cie {
	c := &cie{fdeEnc: peAbsptr}
	version := r.u8()
	aug := r.cstring()
	if version >= 4 {
		if size := r.u8(); size != 8 {
			c.err = fmt.Errorf("address size %d", size)
		}
		r.u8() // segment selector size
	}
	c.codeAlign = r.uleb()
	c.dataAlign = r.sleb()
	if version == 1 {
		c.raReg = uint64(r.u8())
	} else {
		c.raReg = r.uleb()
	}
	if aug != "" && !strings.HasPrefix(aug, "z") {
		// "eh" and other pre-'z' augmentations put data we cannot
		// size between the fields and the instructions.
		c.err = fmt.Errorf("augmentation %q", aug)
		return c
	}
	if strings.HasPrefix(aug, "z") {
		c.augData = true
		n := int(r.uleb())
		data := r.bytes(n)
		a := &reader{b: data}
		for _, ch := range aug[1:] {
			switch ch {
			case 'L':
				a.u8() // the LSDA's encoding: its pointer is in the FDE's augmentation data
			case 'P':
				enc := a.u8()
				a.pointer(enc&^peIndirect, 0)
			case 'R':
				c.fdeEnc = a.u8()
			case 'S':
				c.signal = true
			case 'B', 'G':
				// arm64 branch protection, memory tagging: no data.
			default:
				c.err = fmt.Errorf("augmentation %q", aug)
				return c
			}
		}
		if a.err != nil {
			c.err = fmt.Errorf("augmentation %q: %w", aug, a.err)
			return c
		}
	}
	c.initial = r.b[r.off:]
	if r.err != nil && c.err == nil {
		c.err = r.err
	}
	return c
}

// fde reads an FDE's fields after its CIE pointer.
func (s section) fde(r *reader, c *cie) (fde, bool) {
	enc := c.fdeEnc
	if !s.eh {
		enc = peUData8
	}
	start := r.pointer(enc, s.addr+uint64(r.off))
	length := r.pointer(enc&0x0f, 0)
	if c.augData {
		r.bytes(int(r.uleb()))
	}
	if r.err != nil || start == 0 || length == 0 || start+length < start {
		// An FDE at address 0 describes code the linker discarded.
		return fde{}, false
	}
	return fde{cie: c, start: start, end: start + length, insns: r.b[r.off:]}, true
}
