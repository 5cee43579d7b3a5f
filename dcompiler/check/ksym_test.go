package check

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/dstar-trace/dstar/dcompiler/parser"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/providers/ksym"
)

// TestKernelSymbolTypes types `name and &`name against a made-up kernel:
// one whose BTF describes a global variable (as pahole's global_var
// feature makes it) and a per-CPU one, which the running kernel's BTF
// cannot be relied on for.
func TestKernelSymbolTypes(t *testing.T) {
	ulong := &btf.Int{Name: "long unsigned int", Size: 8}
	counter := &btf.Var{Name: "dstar_counter", Type: ulong, Linkage: btf.GlobalVar}
	pcpu := &btf.Var{Name: "dstar_pcpu", Type: ulong, Linkage: btf.GlobalVar}
	b, err := btf.NewBuilder(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ds := range []*btf.Datasec{
		{Name: ".data", Size: 8, Vars: []btf.VarSecinfo{{Type: counter, Size: 8}}},
		{Name: ".data..percpu", Size: 8, Vars: []btf.VarSecinfo{{Type: pcpu, Size: 8}}},
	} {
		if _, err := b.Add(ds); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	names, err := ksym.ParseNames(strings.NewReader(`ffffffff81000100 T vfs_read
ffffffff82000000 D dstar_counter
ffffffff82000100 D dstar_plain
0000000000001000 D dstar_pcpu
`))
	if err != nil {
		t.Fatal(err)
	}
	oldNames, oldBTF := kernelNames, kernelBTF
	kernelNames = func() (ksym.Names, error) { return names, nil }
	kernelBTF = func() (*btf.Spec, error) { return spec, nil }
	defer func() { kernelNames, kernelBTF = oldNames, oldBTF }()

	for _, c := range []struct{ expr, want string }{
		{"`dstar_counter", "long unsigned int"},
		{"&`dstar_counter", "long unsigned int *"},
		{"&vmlinux`dstar_plain", "void *"},
		{"&`vfs_read", "void *"},
		{"&`dstar_pcpu", "long unsigned int *"},
		{"`dstar_plain", "[D_SYM_NOTYPES] no symbolic type information is available for vmlinux`dstar_plain"},
		{"`dstar_pcpu", "[D_UNKNOWN] vmlinux`dstar_pcpu is a per-CPU variable"},
		{"`vfs_read", "[D_IDENT_BADREF] vmlinux`vfs_read is a function"},
		{"`nosuch", "[D_IDENT_UNDEF] failed to resolve `nosuch: Unknown symbol name"},
	} {
		f := source.NewFile("t.d", c.expr)
		x, err := parser.ParseExpr(f)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		in := &Info{file: f}
		ty, err := in.TypeOf(x, &Env{})
		got := ""
		if se, ok := err.(*source.Error); ok {
			got = "[" + se.Tag + "] " + se.Msg
		} else if err != nil {
			got = err.Error()
		} else {
			got = ty.Name
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %s, want %s", c.expr, got, c.want)
		}
	}
}
