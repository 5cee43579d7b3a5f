package cfi

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errTruncated is what a read past the end of an entry gives.
var errTruncated = errors.New("truncated")

// reader reads the little-endian DWARF encodings of a byte slice; the
// first error sticks, and every later read returns zero.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) need(n int) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || len(r.b)-r.off < n {
		r.fail(errTruncated)
		return false
	}
	return true
}

func (r *reader) u8() uint8 {
	if !r.need(1) {
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *reader) u16() uint16 {
	if !r.need(2) {
		return 0
	}
	r.off += 2
	return binary.LittleEndian.Uint16(r.b[r.off-2:])
}

func (r *reader) u32() uint32 {
	if !r.need(4) {
		return 0
	}
	r.off += 4
	return binary.LittleEndian.Uint32(r.b[r.off-4:])
}

func (r *reader) u64() uint64 {
	if !r.need(8) {
		return 0
	}
	r.off += 8
	return binary.LittleEndian.Uint64(r.b[r.off-8:])
}

func (r *reader) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		b := r.u8()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= uint64(b&0x7f) << shift
		}
		if b&0x80 == 0 {
			return v
		}
	}
}

func (r *reader) sleb() int64 {
	var v int64
	shift := uint(0)
	for {
		b := r.u8()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= int64(b&0x7f) << shift
		}
		shift += 7
		if b&0x80 == 0 {
			if shift < 64 && b&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

func (r *reader) bytes(n int) []byte {
	if !r.need(n) {
		return nil
	}
	r.off += n
	return r.b[r.off-n : r.off]
}

func (r *reader) cstring() string {
	for i := r.off; i < len(r.b); i++ {
		if r.b[i] == 0 {
			s := string(r.b[r.off:i])
			r.off = i + 1
			return s
		}
	}
	r.fail(errTruncated)
	return ""
}

// Pointer encodings (DW_EH_PE_*) of .eh_frame.
const (
	peAbsptr   = 0x00
	peULEB128  = 0x01
	peUData2   = 0x02
	peUData4   = 0x03
	peUData8   = 0x04
	peSLEB128  = 0x09
	peSData2   = 0x0a
	peSData4   = 0x0b
	peSData8   = 0x0c
	pePCRel    = 0x10
	peIndirect = 0x80
	peOmit     = 0xff
)

// pointer reads a pointer in encoding enc; at is the address the
// pointer's first byte is loaded at (for pc-relative ones).
func (r *reader) pointer(enc uint8, at uint64) uint64 {
	if enc == peOmit {
		return 0
	}
	var v uint64
	switch enc & 0x0f {
	case peAbsptr, peUData8, peSData8:
		v = r.u64()
	case peULEB128:
		v = r.uleb()
	case peUData2:
		v = uint64(r.u16())
	case peUData4:
		v = uint64(r.u32())
	case peSLEB128:
		v = uint64(r.sleb())
	case peSData2:
		v = uint64(int64(int16(r.u16())))
	case peSData4:
		v = uint64(int64(int32(r.u32())))
	default:
		r.fail(fmt.Errorf("pointer encoding %#x", enc))
		return 0
	}
	switch enc & 0x70 {
	case 0:
	case pePCRel:
		v += at
	default:
		// textrel, datarel, funcrel and aligned do not occur in the
		// FDEs of x86-64 and arm64 files.
		r.fail(fmt.Errorf("pointer encoding %#x", enc))
	}
	if enc&peIndirect != 0 {
		r.fail(fmt.Errorf("indirect pointer encoding %#x", enc))
	}
	return v
}
