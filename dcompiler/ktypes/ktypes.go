// Package ktypes gives D the kernel's types, from its BTF: struct, union
// and typedef names, and what a member of each is. The kernel's BTF is
// read once, and only when a program names a kernel type (it takes tens of
// milliseconds).
package ktypes

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/providers"
)

var kernel = providers.KernelBTF

// Lookup returns the D type of a kernel type name: "struct task_struct",
// "union X", or a typedef. Integers keep their size and sign; structs and
// unions become types.Struct.
// ErrUnknown is Lookup's error for a name the kernel's BTF does not have.
var ErrUnknown = errors.New("unknown type")

func Lookup(name string) (*types.Type, error) {
	spec, err := kernel()
	if err != nil {
		return nil, fmt.Errorf("kernel types need BTF (/sys/kernel/btf/vmlinux): %v", err)
	}
	word, rest, _ := strings.Cut(name, " ")
	var t btf.Type
	switch word {
	case "struct":
		var s *btf.Struct
		err = spec.TypeByName(rest, &s)
		t = s
	case "union":
		var u *btf.Union
		err = spec.TypeByName(rest, &u)
		t = u
	case "enum":
		var e *btf.Enum
		err = spec.TypeByName(rest, &e)
		t = e
	default:
		var td *btf.Typedef
		err = spec.TypeByName(name, &td)
		t = td
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s", ErrUnknown, name)
	}
	return FromBTF(t), nil
}

// FromBTF converts a BTF type to D's.
func FromBTF(t btf.Type) *types.Type {
	under := btf.UnderlyingType(t)
	name := providers.BareTypeName(t)
	switch u := under.(type) {
	case *btf.Int:
		return &types.Type{Kind: types.Int, Size: int(u.Size), Signed: u.Encoding&btf.Signed != 0, Name: name}
	case *btf.Enum:
		return &types.Type{Kind: types.Int, Size: int(u.Size), Signed: u.Signed, Name: name}
	case *btf.Float:
		return &types.Type{Kind: types.Float, Size: int(u.Size), Name: name}
	case *btf.Pointer:
		elem := FromBTF(u.Target)
		return &types.Type{Kind: types.Pointer, Size: 8, Name: name, Elem: elem}
	case *btf.Struct, *btf.Union:
		size, _ := btf.Sizeof(u)
		return &types.Type{Kind: types.Struct, Size: size, Name: name, BTF: u}
	case *btf.Array:
		elem := FromBTF(u.Type)
		return &types.Type{Kind: types.Array, Size: elem.Size * int(u.Nelems), Name: name, Elem: elem, Len: int(u.Nelems)}
	}
	return &types.Type{Kind: types.Void, Name: name}
}

// Member finds member name of struct or union type t, also inside
// anonymous members, and returns its byte offset and type.
func Member(t *types.Type, name string) (int, *types.Type, error) {
	bt, ok := t.BTF.(btf.Type)
	if !ok || members(bt) == nil {
		return 0, nil, fmt.Errorf("%s is not a struct or union", t.Name)
	}
	off, m, found := find(bt, name)
	if !found {
		return 0, nil, fmt.Errorf("%s is not a member of %s", name, t.Name)
	}
	if m.BitfieldSize != 0 {
		// A bit-field: its first byte's offset, and where in the bytes
		// from there its bits lie (little-endian, as the kernel's).
		bits := off*8 + int(m.Offset)%8
		bt := *FromBTF(m.Type)
		bt.Bits, bt.BitOff = int(m.BitfieldSize), bits%8
		if bt.Kind != types.Int || bt.BitOff+bt.Bits > 64 {
			return 0, nil, fmt.Errorf("%s is a bit-field member of %s that D cannot read", name, t.Name)
		}
		return bits / 8, &bt, nil
	}
	return off, FromBTF(m.Type), nil
}

// members returns the members of a struct or union, nil for other types.
func members(t btf.Type) []btf.Member {
	switch t := btf.UnderlyingType(t).(type) {
	case *btf.Struct:
		return t.Members
	case *btf.Union:
		return t.Members
	}
	return nil
}

func find(t btf.Type, name string) (int, btf.Member, bool) {
	for _, m := range members(t) {
		if m.Name == name {
			return int(m.Offset.Bytes()), m, true
		}
		if m.Name == "" && members(m.Type) != nil {
			if off, mm, found := find(m.Type, name); found {
				return int(m.Offset.Bytes()) + off, mm, true
			}
		}
	}
	return 0, btf.Member{}, false
}

// Field is a member of a struct or union a D program defines.
type Field struct {
	Name string
	Type *types.Type
	Len  int // array length, 0 for none
	Bits int // a bit-field's width, 0 for none
}

// Define lays out a struct (or union) a D program defines, as C does:
// each member aligned to its size (arrays to their element's, structs to
// their widest member's), the whole padded to its alignment.
//
// Bit-fields are laid out as DTrace's CTF does it, not as C: each is an
// integer of the fewest bytes (1, 2, 4 or 8) that hold it, aligned to
// that size, starting at the first such byte after the bits before it;
// and a struct that has them is not padded at its end (struct { int a :
// 1; int b : 3; } has size 2).
func Define(kind, name string, fields []Field) (*types.Type, error) {
	var members []btf.Member
	off, align, end, bitfields := 0, 1, 0, false
	for _, f := range fields {
		bt, size, a, err := btfOf(f.Type)
		if err != nil {
			return nil, fmt.Errorf("member %s: %v", f.Name, err)
		}
		if f.Len > 0 {
			bt = &btf.Array{Index: &btf.Int{Name: "int", Size: 4}, Type: bt, Nelems: uint32(f.Len)}
			size *= f.Len
		}
		if f.Bits > 0 {
			bitfields = true
			size = 1
			for size*8 < f.Bits {
				size *= 2
			}
			a = size
			it := *bt.(*btf.Int)
			it.Size = uint32(size)
			bt = &it
		}
		align = max(align, a)
		m := btf.Member{Name: f.Name, Type: bt, BitfieldSize: btf.Bits(f.Bits)}
		if kind == "union" {
			members = append(members, m)
			off = max(off, size)
			continue
		}
		start := (end + 7) / 8
		start = (start + a - 1) / a * a
		m.Offset = btf.Bits(start * 8)
		members = append(members, m)
		off, end = start+size, start*8+size*8
		if f.Bits > 0 {
			end = start*8 + f.Bits
		}
	}
	size := (off + align - 1) / align * align
	if bitfields {
		size = off
	}
	var bt btf.Type
	if kind == "union" {
		bt = &btf.Union{Name: name, Size: uint32(size), Members: members}
	} else {
		bt = &btf.Struct{Name: name, Size: uint32(size), Members: members}
	}
	return &types.Type{Kind: types.Struct, Size: size, Name: kind + " " + name, BTF: bt}, nil
}

// btfOf describes a D type in BTF, with its size and alignment.
func btfOf(t *types.Type) (btf.Type, int, int, error) {
	switch t.Kind {
	case types.Int:
		if enum, ok := t.BTF.(*btf.Enum); ok {
			return enum, t.Size, t.Size, nil
		}
		enc := btf.IntEncoding(0)
		if t.Signed {
			enc = btf.Signed
		}
		if t.Size == 1 {
			enc |= btf.Char
		}
		return &btf.Int{Name: t.Name, Size: uint32(t.Size), Encoding: enc}, t.Size, t.Size, nil
	case types.Float:
		return &btf.Float{Name: t.Name, Size: uint32(t.Size)}, t.Size, t.Size, nil
	case types.Pointer:
		var target btf.Type = &btf.Void{}
		if t.Elem != nil && t.Elem.Kind == types.Struct {
			target, _ = t.Elem.BTF.(btf.Type)
		} else if t.Elem != nil && t.Elem.Kind == types.Int {
			target, _, _, _ = btfOf(t.Elem)
		}
		return &btf.Pointer{Target: target}, 8, 8, nil
	case types.Struct:
		bt, ok := t.BTF.(btf.Type)
		if !ok {
			return nil, 0, 0, fmt.Errorf("%s has no layout", t.Name)
		}
		a := 1
		for _, m := range members(bt) {
			if _, _, ma, err := btfOf(FromBTF(m.Type)); err == nil {
				a = max(a, ma)
			}
		}
		return bt, t.Size, a, nil
	case types.Array:
		if t.Elem == nil {
			break
		}
		et, es, ea, err := btfOf(t.Elem)
		if err != nil {
			return nil, 0, 0, err
		}
		return &btf.Array{Index: &btf.Int{Name: "int", Size: 4}, Type: et, Nelems: uint32(t.Len)}, es * t.Len, ea, nil
	}
	return nil, 0, 0, fmt.Errorf("type %s cannot be a member", t.Name)
}
