package ktypes

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/providers"
)

// Print formats the value print( ) recorded, as DTrace prints it: the
// address, then the pointed-to value with its type, members and array
// elements one to a line and indented one space per level, zero members
// left out, char arrays up to their NUL. b holds the value's bytes (as
// many as were recorded).
func Print(addr uint64, t *types.Type, b []byte, indent int) string {
	var w strings.Builder
	fmt.Fprintf(&w, "0x%x = *\n%s", addr, strings.Repeat(" ", indent))
	if bt, ok := t.BTF.(btf.Type); ok {
		printValue(&w, bt, b, indent)
	} else {
		fmt.Fprintf(&w, "(%s)%s", t.Name, intText(t.Size, t.Signed, t.Name == "char", b))
	}
	w.WriteString("\n")
	return w.String()
}

// printValue writes "(type)value"; a struct, union or array spans lines,
// its parts at indent+1 and its closing bracket at indent.
func printValue(w *strings.Builder, t btf.Type, b []byte, indent int) {
	name := strings.TrimSuffix(providers.BareTypeName(t), " ")
	pad := strings.Repeat(" ", indent+1)
	switch u := btf.UnderlyingType(t).(type) {
	case *btf.Struct, *btf.Union:
		fmt.Fprintf(w, "(%s) {\n", name)
		printMembers(w, u, b, indent, -1, 0, len(b))
		fmt.Fprintf(w, "%s}", strings.Repeat(" ", indent))
	case *btf.Array:
		fmt.Fprintf(w, "(%s) [\n", name)
		esize, _ := btf.Sizeof(u.Type)
		isChar := esize == 1
		for i := 0; i < int(u.Nelems) && esize > 0; i++ {
			eb := slice(b, i*esize, esize)
			if allZero(eb) {
				if isChar {
					break
				}
				continue
			}
			w.WriteString(pad)
			printValue(w, u.Type, eb, indent+1)
			w.WriteString(",\n")
		}
		fmt.Fprintf(w, "%s]", strings.Repeat(" ", indent))
	case *btf.Enum:
		v := intValue(b, int(u.Size), u.Signed)
		for _, e := range u.Values {
			if int64(e.Value) == v {
				fmt.Fprintf(w, "(%s)%s", name, e.Name)
				return
			}
		}
		fmt.Fprintf(w, "(%s)%d", name, v)
	case *btf.Pointer:
		fmt.Fprintf(w, "(%s)0x%x", name, uint64(intValue(b, 8, false)))
	case *btf.Int:
		// As DTrace: a character only when the type is named char (not
		// __u8, not a typedef of it).
		isChar := (u.Encoding&btf.Char != 0 || u.Size == 1) && name == "char"
		fmt.Fprintf(w, "(%s)%s", name, intText(int(u.Size), u.Encoding&btf.Signed != 0, isChar, b))
	default:
		fmt.Fprintf(w, "(%s)", name)
	}
}

// printMembers writes the non-zero members of a struct or union, one to
// a line at indent+1; an anonymous member's members belong to the parent.
// b may be cut short (-x printsize): as in DTrace, "..." then stands
// where the first member not recorded would be (at its indent, but inside
// the innermost struct still open there), and nothing after it is printed.
// next is where the member after t starts, relative to t (-1 when none
// follows), and nextIndent its indent: when it was not recorded, the "..."
// goes at the end of t. rec is how many bytes were recorded from t's start
// on (b holds those of t). printMembers says whether it printed "...".
func printMembers(w *strings.Builder, t btf.Type, b []byte, indent, next, nextIndent, rec int) bool {
	pad := strings.Repeat(" ", indent+1)
	ms := members(t)
	for i, m := range ms {
		off := int(m.Offset.Bytes())
		if off >= rec {
			w.WriteString(pad + "...\n")
			return true
		}
		following, followingIndent := next, nextIndent
		if i+1 < len(ms) {
			following, followingIndent = int(ms[i+1].Offset.Bytes()), indent
		}
		size, _ := btf.Sizeof(m.Type)
		mb := slice(b, off, size)
		if m.BitfieldSize != 0 {
			v := bits(b, uint32(m.Offset), uint32(m.BitfieldSize))
			if v != 0 {
				fmt.Fprintf(w, "%s.%s = (%s)%d,\n", pad, m.Name, providers.BareTypeName(m.Type), v)
			}
			continue
		}
		// An array is left out only when all of it is zero: a char
		// array with bytes after its NUL prints as an empty [ ].
		if allZero(mb) {
			continue
		}
		inner := -1
		if following >= 0 {
			inner = following - off
		}
		if m.Name == "" {
			// An anonymous member's members belong to the parent.
			if printMembers(w, m.Type, mb, indent, inner, followingIndent, rec-off) {
				return true
			}
			continue
		}
		fmt.Fprintf(w, "%s.%s = ", pad, m.Name)
		if members(m.Type) != nil {
			fmt.Fprintf(w, "(%s) {\n", strings.TrimSuffix(providers.BareTypeName(m.Type), " "))
			cut := printMembers(w, m.Type, mb, indent+1, inner, followingIndent, rec-off)
			fmt.Fprintf(w, "%s},\n", pad)
			if cut {
				return true
			}
			continue
		}
		printValue(w, m.Type, mb, indent+1)
		w.WriteString(",\n")
	}
	if next >= 0 && next >= rec {
		w.WriteString(strings.Repeat(" ", nextIndent+1) + "...\n")
		return true
	}
	return false
}

func intText(size int, signed, isChar bool, b []byte) string {
	v := intValue(b, size, signed)
	if isChar && v >= 0x20 && v < 0x7f {
		return fmt.Sprintf("'%c'", rune(v))
	}
	if signed {
		return fmt.Sprint(v)
	}
	return fmt.Sprint(uint64(v))
}

// intValue reads a little-endian integer of size bytes.
func intValue(b []byte, size int, signed bool) int64 {
	var buf [8]byte
	copy(buf[:], slice(b, 0, size))
	v := binary.LittleEndian.Uint64(buf[:])
	if signed && size < 8 {
		shift := 64 - 8*size
		return int64(v<<shift) >> shift
	}
	return int64(v)
}

// bits reads a bit-field of size bits at bit offset off.
func bits(b []byte, off, size uint32) uint64 {
	var v uint64
	for i := uint32(0); i < size; i++ {
		bit := off + i
		if int(bit/8) < len(b) && b[bit/8]&(1<<(bit%8)) != 0 {
			v |= 1 << i
		}
	}
	return v
}

// slice returns b[off:off+n], cut short where the record ended.
func slice(b []byte, off, n int) []byte {
	if off >= len(b) {
		return nil
	}
	return b[off:min(off+n, len(b))]
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
