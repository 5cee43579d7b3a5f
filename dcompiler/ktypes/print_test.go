package ktypes

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/dstar-trace/dstar/dcompiler/types"
)

// A struct of an int, a char[5], a union and a long, at offsets 0, 4, 8
// and 16.
func testStruct() *btf.Struct {
	i32 := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	ch := &btf.Int{Name: "char", Size: 1, Encoding: btf.Signed | btf.Char}
	u8 := &btf.Typedef{Name: "__u8", Type: &btf.Int{Name: "unsigned char", Size: 1, Encoding: btf.Char}}
	u64 := &btf.Int{Name: "long unsigned int", Size: 8}
	un := &btf.Union{Size: 8, Members: []btf.Member{{Name: "c", Type: u8}, {Name: "d", Type: u64}}}
	return &btf.Struct{Name: "ps", Size: 24, Members: []btf.Member{
		{Name: "a", Type: i32},
		{Name: "b", Type: &btf.Array{Type: ch, Index: i32, Nelems: 5}, Offset: 4 * 8},
		{Name: "u", Type: un, Offset: 8 * 8},
		{Name: "e", Type: u64, Offset: 16 * 8},
	}}
}

func TestPrintTruncated(t *testing.T) {
	st := testStruct()
	b := make([]byte, 24)
	binary.LittleEndian.PutUint32(b, 1)
	copy(b[4:], "hi")
	binary.LittleEndian.PutUint64(b[8:], 258)
	binary.LittleEndian.PutUint64(b[16:], 5)
	typ := &types.Type{Kind: types.Struct, Size: 24, Name: "struct ps", BTF: btf.Type(st)}
	for _, c := range []struct {
		n    int
		want string
	}{
		// Cut inside b: "..." where u would be.
		{8, "(struct ps) {\n .a = (int)1,\n .b = (char [5]) [\n  (char)'h',\n  (char)'i',\n ],\n ...\n}"},
		// Cut where e starts: "..." at e's indent, inside the open union;
		// __u8 is a number, not a character.
		{16, "(struct ps) {\n .a = (int)1,\n .b = (char [5]) [\n  (char)'h',\n  (char)'i',\n ],\n .u = (union) {\n  .c = (__u8)2,\n  .d = (long unsigned int)258,\n ...\n },\n}"},
		// All of it: no "...".
		{24, "(struct ps) {\n .a = (int)1,\n .b = (char [5]) [\n  (char)'h',\n  (char)'i',\n ],\n .u = (union) {\n  .c = (__u8)2,\n  .d = (long unsigned int)258,\n },\n .e = (long unsigned int)5,\n}"},
	} {
		got := Print(0x10, typ, b[:c.n], 0)
		got = strings.TrimSuffix(strings.TrimPrefix(got, "0x10 = *\n"), "\n")
		if got != c.want {
			t.Errorf("printsize %d:\n%s\nwant:\n%s", c.n, got, c.want)
		}
	}
}

func TestPrintZeroArrayLeftOut(t *testing.T) {
	st := testStruct()
	b := make([]byte, 24)
	binary.LittleEndian.PutUint64(b[16:], 5)
	typ := &types.Type{Kind: types.Struct, Size: 24, Name: "struct ps", BTF: btf.Type(st)}
	want := "0x10 = *\n(struct ps) {\n .e = (long unsigned int)5,\n}\n"
	if got := Print(0x10, typ, b, 0); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
