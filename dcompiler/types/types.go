// Package types describes the types of D values: C's integers and pointers,
// D's string, and the promotion rules that decide the type of an arithmetic
// result.
package types

import "fmt"

// Kind is the broad class of a type.
type Kind int

const (
	Void Kind = iota
	Int
	Pointer
	String
	Struct // a kernel struct or union (BTF holds its layout)
	Array  // an array of Len elements of Elem
	Stack  // stack( ) or ustack( ): Len program counters (User says whose)
	Sym    // an address sym( ), mod( ), usym( ) and the like print by name (Fn says how)
	// Float is float, double or long double: BPF has no floating point,
	// so D only holds such values (kernel data, variables) and prints
	// them; it computes nothing with them, as DTrace on BPF.
	Float
)

// Type is a D type. Integers and pointers live in 64-bit registers; Size
// says how many bytes they have in memory and where arithmetic wraps.
type Type struct {
	Kind   Kind
	Size   int // bytes: 1, 2, 4, 8 for integers; buffer size for strings
	Signed bool
	Name   string // as DTrace spells it in messages ("int", "uint64_t", "string")
	Elem   *Type  // pointed-to type, for pointers; element type, for arrays
	Len    int    // elements, for arrays
	BTF    any    // the kernel type (a *btf.Struct or *btf.Union), for structs
	User   bool   // a user stack or address, for stacks and Sym
	Fn     string // for Sym: the function that names it (sym, mod, usym, umod or uaddr)
	// Bits, for a bit-field member, is its width, and BitOff where it
	// starts, in bits from the member's byte offset.
	Bits, BitOff int
}

// Common types.
var (
	VoidT   = &Type{Kind: Void, Name: "void"}
	CharT   = &Type{Kind: Int, Size: 1, Signed: true, Name: "char"}
	IntT    = &Type{Kind: Int, Size: 4, Signed: true, Name: "int"}
	UintT   = &Type{Kind: Int, Size: 4, Name: "uint_t"}
	LongT   = &Type{Kind: Int, Size: 8, Signed: true, Name: "long"}
	UlongT  = &Type{Kind: Int, Size: 8, Name: "unsigned long"}
	Int64T  = &Type{Kind: Int, Size: 8, Signed: true, Name: "int64_t"}
	Uint64T = &Type{Kind: Int, Size: 8, Name: "uint64_t"}
	PidT    = &Type{Kind: Int, Size: 4, Signed: true, Name: "pid_t"}
	UidT    = &Type{Kind: Int, Size: 4, Name: "uid_t"}
	VoidPtr = &Type{Kind: Pointer, Size: 8, Name: "void *", Elem: VoidT}
)

// StringT returns the string type of a buffer of size bytes.
func StringT(size int) *Type { return &Type{Kind: String, Size: size, Name: "string"} }

// StackT returns the type of a stack of up to frames program counters:
// in memory, a u64 header (the count of counters recorded, and for a user
// stack the process id in the high 32 bits, to find its symbols by) and
// then the counters. A kernel stack has room for StackSlack more: the walk
// starts in the tracing code that ran the probe, which the consumer leaves
// out.
func StackT(frames int, user bool) *Type {
	// D names both kinds "stack" (in messages too).
	room := frames + StackSlack
	if user {
		room = frames
	}
	return &Type{Kind: Stack, Size: 8 * (room + 1), Len: frames, Name: "stack", User: user}
}

// SymT returns the type of an address that fn (sym, mod, usym, umod or
// uaddr; func and ufunc are sym and usym) prints by name: DTrace's
// _symaddr and _usymaddr. In memory a kernel address is one u64; a user
// address is the process id and then the address, to find its symbols by.
func SymT(fn string, user bool) *Type {
	if user {
		return &Type{Kind: Sym, Size: 16, Name: "_usymaddr", User: true, Fn: fn}
	}
	return &Type{Kind: Sym, Size: 8, Name: "_symaddr", Fn: fn}
}

// StackSlack is how many frames of tracing code a kernel stack may start
// with.
const StackSlack = 8

func (t *Type) String() string { return t.Name }

// IsInt reports whether t is an integer.
func (t *Type) IsInt() bool { return t.Kind == Int }

// IsCharArray reports whether t is an array of char, which D treats as a
// string.
func (t *Type) IsCharArray() bool {
	return t.Kind == Array && t.Elem != nil && t.Elem.Kind == Int && t.Elem.Size == 1
}

// IsScalar reports whether t is an integer or a pointer.
func (t *Type) IsScalar() bool { return t.Kind == Int || t.Kind == Pointer }

// IsString reports whether t is a string.
func (t *Type) IsString() bool { return t.Kind == String }

// Promote applies C's integer promotion: types narrower than int become int.
func Promote(t *Type) *Type {
	if t.Kind == Int && t.Size < 4 {
		return IntT
	}
	return t
}

// Arith returns the type of a binary arithmetic result under D's usual
// arithmetic conversions: the operand type of higher rank, ranked by size
// with unsigned above signed. Unlike C, D promotes nothing to int first,
// as the Dynamic Tracing Guide describes it and DTrace computes it (char
// plus char is char, and wraps as one: Oracle's tst.cast-add-*).
func Arith(a, b *Type) *Type {
	if a.Kind == Pointer {
		return a
	}
	if b.Kind == Pointer {
		return b
	}
	if a.Kind != Int || b.Kind != Int {
		a, b = Promote(a), Promote(b)
	}
	if a.Size != b.Size {
		if a.Size > b.Size {
			return a
		}
		return b
	}
	if !a.Signed {
		return a
	}
	return b
}

// Named returns the integer type of a C type name, as D knows it.
func Named(name string) (*Type, error) {
	if t, ok := named[name]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("invalid type name %s", name)
}

var named = map[string]*Type{}

func init() {
	add := func(size int, signed bool, names ...string) {
		t := &Type{Kind: Int, Size: size, Signed: signed, Name: names[0]}
		for _, n := range names {
			named[n] = t
		}
	}
	add(1, true, "char", "signed char", "int8_t")
	add(1, false, "unsigned char", "uint8_t", "uchar_t")
	add(2, true, "short", "signed short", "short int", "signed short int", "int16_t")
	add(2, false, "unsigned short", "unsigned short int", "uint16_t", "ushort_t")
	add(4, true, "int", "signed int", "signed", "int32_t", "pid_t", "id_t")
	add(4, false, "unsigned int", "unsigned", "uint32_t", "uint_t", "uid_t", "gid_t", "ipaddr_t", "in_addr_t")
	add(8, true, "long", "signed long", "long int", "signed long int", "long long", "signed long long", "long long int", "int64_t", "intptr_t", "ssize_t", "longlong_t")
	add(8, false, "unsigned long", "unsigned long int", "unsigned long long", "unsigned long long int", "uint64_t", "uintptr_t", "size_t", "ulong_t", "u_longlong_t")
	named["float"] = &Type{Kind: Float, Size: 4, Name: "float"}
	named["double"] = &Type{Kind: Float, Size: 8, Name: "double"}
	named["long double"] = &Type{Kind: Float, Size: 16, Name: "long double"}
	named["int"] = IntT
	named["uint64_t"] = Uint64T
	named["int64_t"] = Int64T
	named["void"] = VoidT
	named["string"] = StringT(0) // size fixed by the compiler's strsize
}

// FromC parses a type as a tracepoint format file spells it ("int",
// "const char *", "unsigned long") into a D type; unknown names give a
// 64-bit integer of the given size so that the value is still usable.
func FromC(name string, size int, signed bool) *Type {
	if t, ok := named[name]; ok && t.Kind == Int && t.Size == size {
		return t
	}
	if size != 1 && size != 2 && size != 4 && size != 8 {
		size = 8
	}
	return &Type{Kind: Int, Size: size, Signed: signed, Name: name}
}
