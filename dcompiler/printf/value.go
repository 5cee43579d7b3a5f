// This file defines Value, the run-time datum a conversion formats.

package printf

import (
	"strconv"
	"strings"
)

// ValueKind says what a Value holds.
type ValueKind uint8

// The kinds of Value.
const (
	IntValue ValueKind = iota
	StringValue
	FloatValue
	StackValue
	SymbolValue // an address named by sym( ), mod( ), usym( ) and the like
	// TableValue is a distribution's table, already drawn: a %@
	// conversion prints it as it is, whatever the conversion, as DTrace
	// prints quantize( ) and its kin in printa( ).
	TableValue
)

// Value is one recorded datum: an integer of a given size and signedness,
// a string, or (rarely) a floating-point number.
type Value struct {
	Kind ValueKind
	// Bits is an integer's two's complement bit pattern. Only the low
	// Size bytes count.
	Bits uint64
	// Signed says whether the integer's D type is signed. %d prints an
	// unsigned value as %u would, as DTrace does.
	Signed bool
	// Size is the integer's size in bytes: 1, 2, 4 or 8. Zero means 8.
	Size int
	// Str is the string, for a StringValue.
	Str string
	// Float is the number, for a FloatValue.
	Float float64
	// For a SymbolValue, Str is the name it prints and Bits the address
	// it sorts by.

	// Frames are a stack's frames, innermost first, as text
	// (vmlinux`do_sys_openat2+0x5a), for a StackValue.
	Frames []string
	// PCs are the frames' addresses, for a StackValue the engine read:
	// PCs[i] is where Frames[i] is. User says they are a user stack, of
	// process PID.
	PCs  []uint64
	User bool
	PID  int
}

// Int returns a signed 64-bit integer value.
func Int(v int64) Value { return Value{Kind: IntValue, Bits: uint64(v), Signed: true, Size: 8} }

// Uint returns an unsigned 64-bit integer value.
func Uint(v uint64) Value { return Value{Kind: IntValue, Bits: v, Size: 8} }

// Sized returns an integer value of the given size in bytes (1, 2, 4 or 8)
// and signedness; bits beyond the size are ignored.
func Sized(bits uint64, size int, signed bool) Value {
	return Value{Kind: IntValue, Bits: bits, Signed: signed, Size: size}
}

// Str returns a string value.
func Str(s string) Value { return Value{Kind: StringValue, Str: s} }

// Stack returns a stack value.
func Stack(frames []string) Value { return Value{Kind: StackValue, Frames: frames} }

// Symbol returns an address named text, which sorts as addr.
func Symbol(text string, addr uint64) Value {
	return Value{Kind: SymbolValue, Str: text, Bits: addr, Size: 8}
}

// Table returns a distribution's drawn table, for a %@ conversion.
func Table(text string) Value { return Value{Kind: TableValue, Str: text} }

// Float returns a floating-point value.
func Float(f float64) Value { return Value{Kind: FloatValue, Float: f} }

// size returns the value's size in bytes, 8 when unset or invalid.
func (v Value) size() int {
	switch v.Size {
	case 1, 2, 4:
		return v.Size
	}
	return 8
}

// Uint64 returns the integer zero-extended from its size.
func (v Value) Uint64() uint64 {
	switch v.size() {
	case 1:
		return uint64(uint8(v.Bits))
	case 2:
		return uint64(uint16(v.Bits))
	case 4:
		return uint64(uint32(v.Bits))
	}
	return v.Bits
}

// Int64 returns the integer sign-extended from its size.
func (v Value) Int64() int64 {
	switch v.size() {
	case 1:
		return int64(int8(v.Bits))
	case 2:
		return int64(int16(v.Bits))
	case 4:
		return int64(int32(v.Bits))
	}
	return int64(v.Bits)
}

// String returns the value as trace() would show it in quiet mode.
func (v Value) String() string {
	switch v.Kind {
	case StringValue, SymbolValue, TableValue:
		return v.Str
	case FloatValue:
		return strconv.FormatFloat(v.Float, 'g', -1, 64)
	case StackValue:
		return strings.Join(v.Frames, "\n")
	}
	if v.Signed {
		return strconv.FormatInt(v.Int64(), 10)
	}
	return strconv.FormatUint(v.Uint64(), 10)
}
