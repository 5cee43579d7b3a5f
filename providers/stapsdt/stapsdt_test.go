package stapsdt

import (
	"debug/elf"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/dstar-trace/dstar/providers/stapsdt/sdttest"
)

func TestParseArgs(t *testing.T) {
	x86 := []struct {
		spec string
		want Arg
	}{
		{"-4@%edi", Arg{Size: 4, Signed: true, Kind: Reg, Reg: "edi"}},
		{"8@%rax", Arg{Size: 8, Kind: Reg, Reg: "rax"}},
		{"2@%ax", Arg{Size: 2, Kind: Reg, Reg: "ax"}},
		{"-1@%r8b", Arg{Size: 1, Signed: true, Kind: Reg, Reg: "r8b"}},
		{"8@-16(%rbp)", Arg{Size: 8, Kind: Mem, Reg: "rbp", Offset: -16}},
		{"4@16(%rsp)", Arg{Size: 4, Kind: Mem, Reg: "rsp", Offset: 16}},
		{"4@(%rdx)", Arg{Size: 4, Kind: Mem, Reg: "rdx"}},
		{"-8@8(%rax,%rbx,4)", Arg{Size: 8, Signed: true, Kind: Mem, Reg: "rax", Index: "rbx", Scale: 4, Offset: 8}},
		{"-4@$5", Arg{Size: 4, Signed: true, Kind: Imm, Offset: 5}},
		{"8@$-1", Arg{Size: 8, Kind: Imm, Offset: -1}},
		{"4@$0x10", Arg{Size: 4, Kind: Imm, Offset: 16}},
		{"%rdi", Arg{Size: 8, Kind: Reg, Reg: "rdi"}},
		{"8@counter(%rip)", Arg{Size: 8, Kind: Mem, Reg: "rip", Symbol: "counter"}},
		{"-4@tab+8(%rip)", Arg{Size: 4, Signed: true, Kind: Mem, Reg: "rip", Symbol: "tab", Offset: 8}},
		{"-4@x.1-4(%rip)", Arg{Size: 4, Signed: true, Kind: Mem, Reg: "rip", Symbol: "x.1", Offset: -4}},
		{"8@counter@GOTPCREL(%rip)", Arg{Size: 8, Kind: Unsupported, Reg: "rip", Err: `symbolic operand "counter@GOTPCREL(%rip)"`}},
		{"8@tab(,%rax,8)", Arg{Size: 8, Kind: Unsupported, Index: "rax", Scale: 8, Err: `symbolic operand "tab(,%rax,8)"`}},
		{"8@16(%rip)", Arg{Size: 8, Kind: Unsupported, Reg: "rip", Offset: 16, Err: `instruction-pointer-relative operand "16(%rip)"`}},
		{"3@%rax", Arg{Size: 8, Kind: Unsupported, Err: "bad size 3"}},
		{"x@%rax", Arg{Size: 8, Kind: Unsupported, Err: `bad size "x"`}},
		{"4@$sym", Arg{Size: 4, Kind: Unsupported, Err: `immediate "$sym" is not a number`}},
		{"4@8(%rax", Arg{Size: 4, Kind: Mem, Err: `bad memory operand "8(%rax"`}},
	}
	for _, c := range x86 {
		got := ParseArgs(c.spec, elf.EM_X86_64)
		c.want.Spec = c.spec
		if c.want.Err != "" {
			c.want.Kind = Unsupported
		}
		if len(got) != 1 || !reflect.DeepEqual(got[0], c.want) {
			t.Errorf("ParseArgs(%q) = %+v, want %+v", c.spec, got, c.want)
		}
	}
	arm := []struct {
		spec string
		want Arg
	}{
		{"-4@x0", Arg{Size: 4, Signed: true, Kind: Reg, Reg: "x0"}},
		{"8@[x29, -8]", Arg{Size: 8, Kind: Mem, Reg: "x29", Offset: -8}},
		{"4@[sp]", Arg{Size: 4, Kind: Mem, Reg: "sp"}},
		{"-4@5", Arg{Size: 4, Signed: true, Kind: Imm, Offset: 5}},
	}
	for _, c := range arm {
		got := ParseArgs(c.spec, elf.EM_AARCH64)
		c.want.Spec = c.spec
		if len(got) != 1 || !reflect.DeepEqual(got[0], c.want) {
			t.Errorf("ParseArgs(%q, arm64) = %+v, want %+v", c.spec, got, c.want)
		}
	}
	if got := ParseArgs("  -4@%edi   8@[x, 1] ", elf.EM_X86_64); len(got) != 2 || got[0].Reg != "edi" {
		t.Errorf("splitting: %+v", got)
	}
	if got := ParseArgs("", elf.EM_X86_64); len(got) != 0 {
		t.Errorf("empty spec: %+v", got)
	}
}

// The test program: probes without semaphores (DTRACE_PROBE, STAP_PROBE2
// with a constant) in one file, one with a semaphore in another, since
// _SDT_HAS_SEMAPHORES gives every probe of a file a semaphore.
var progSrc = map[string]string{
	"main.c": `#include <sys/sdt.h>
void gated(int);
int main(int argc, char **argv) {
	long l = -5;
	DTRACE_PROBE2(myprov, tick, argc, l);
	STAP_PROBE2(myprov, konst, 42, (unsigned char)argc);
	STAP_PROBE(myprov, plain);
	gated(argc);
	return 0;
}
`,
	"sem.c": `#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
__extension__ unsigned short myprov_gate_semaphore __attribute__((unused)) __attribute__((section(".probes")));
void gated(int x) {
	if (__builtin_expect(myprov_gate_semaphore, 0))
		STAP_PROBE1(myprov, gate, (short)x);
}
`,
}

func TestNotesProgram(t *testing.T) {
	dir := t.TempDir()
	path := sdttest.Build(t, dir, "prog", progSrc, "-O1")
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	notes, err := Notes(f)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Note{}
	for _, n := range notes {
		if n.Provider != "myprov" {
			t.Errorf("provider %q, want myprov", n.Provider)
		}
		byName[n.Name] = n
	}
	if len(notes) != 4 || len(byName) != 4 {
		t.Fatalf("notes: %+v", notes)
	}
	sizes := func(n Note) (out []int) {
		for _, a := range n.Args {
			if a.Kind == Unsupported {
				t.Errorf("%s: %s unsupported: %s", n.Name, a.Spec, a.Err)
			}
			s := a.Size
			if a.Signed {
				s = -s
			}
			out = append(out, s)
		}
		return out
	}
	for name, want := range map[string][]int{"tick": {-4, -8}, "konst": {-4, 1}, "plain": nil, "gate": {-2}} {
		if got := sizes(byName[name]); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: arg sizes %v, want %v (%q)", name, got, want, byName[name].ArgSpec)
		}
	}
	if a := byName["konst"].Args[0]; a.Kind != Imm || a.Offset != 42 {
		t.Errorf("konst arg0 = %+v, want the immediate 42", a)
	}

	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	sym := map[string]elf.Symbol{}
	for _, s := range syms {
		sym[s.Name] = s
	}
	in := func(pc uint64, fn string) bool {
		s := sym[fn]
		return s.Value <= pc && pc < s.Value+s.Size
	}
	for _, name := range []string{"tick", "konst", "plain"} {
		n := byName[name]
		if !in(n.PC, "main") {
			t.Errorf("%s: pc %#x not in main", name, n.PC)
		}
		if n.Semaphore != 0 {
			t.Errorf("%s: semaphore %#x, want none", name, n.Semaphore)
		}
	}
	if g := byName["gate"]; !in(g.PC, "gated") || g.Semaphore != sym["myprov_gate_semaphore"].Value || g.Semaphore == 0 {
		t.Errorf("gate: pc %#x semaphore %#x, want in gated and at %#x", g.PC, g.Semaphore, sym["myprov_gate_semaphore"].Value)
	}
}

func TestNotesSharedLibrary(t *testing.T) {
	dir := t.TempDir()
	path := sdttest.Build(t, dir, "libsdt.so", map[string]string{"lib.c": `#include <sys/sdt.h>
long lib_fn(long x) {
	DTRACE_PROBE1(mylib, libcall, x);
	return x + 1;
}
`}, "-O1", "-shared", "-fPIC")
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	notes, err := Notes(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || notes[0].Provider != "mylib" || notes[0].Name != "libcall" ||
		len(notes[0].Args) != 1 || notes[0].Args[0].Size != 8 || !notes[0].Args[0].Signed || notes[0].Args[0].Kind != Reg {
		t.Fatalf("notes: %+v", notes)
	}
	syms, _ := f.DynamicSymbols()
	found := false
	for _, s := range syms {
		if s.Name == "lib_fn" {
			found = s.Value <= notes[0].PC && notes[0].PC < s.Value+s.Size
		}
	}
	if !found {
		t.Errorf("pc %#x not in lib_fn", notes[0].PC)
	}
}

func TestNotesNone(t *testing.T) {
	// A Go test binary has no SDT notes.
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	if n, err := Notes(f); n != nil || err != nil {
		t.Errorf("Notes = %v, %v; want none", n, err)
	}
}

func TestNotesTruncated(t *testing.T) {
	// Malformed bodies are errors, never panics.
	for _, d := range [][]byte{nil, make([]byte, 10), make([]byte, 24), append(make([]byte, 24), 'p', 0)} {
		if _, err := parseDesc(d, 8, binary.LittleEndian, elf.EM_X86_64); err == nil {
			t.Errorf("parseDesc(%v): no error", d)
		}
	}
}
