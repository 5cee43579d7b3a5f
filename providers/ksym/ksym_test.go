package ksym

import (
	"os"
	"strings"
	"testing"
)

const sample = `ffffffff81000000 T _text
ffffffff81000000 t _stext_alias
ffffffff81000100 T do_syscall_64
ffffffff81000200 t helper
0000000000000000 A fixed_percpu_data
0000000000001000 D runqueues
ffffffff81000300 D some_data
ffffffffc0001000 t ext4_open	[ext4]
ffffffffc0001080 T ext4_read	[ext4]
`

func TestParseLookup(t *testing.T) {
	tab, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr uint64
		want string
	}{
		{0xffffffff81000000, "vmlinux`_text"},
		{0xffffffff81000168, "vmlinux`do_syscall_64+0x68"},
		{0xffffffff81000201, "vmlinux`helper+0x1"},
		// Data are named too, as printf's %a names &`some_data.
		{0xffffffff81000300, "vmlinux`some_data"},
		{0xffffffff81000308, "vmlinux`some_data+0x8"},
		{0xffffffffc0001010, "ext4`ext4_open+0x10"},
		{0xffffffffc0001090, "ext4`ext4_read+0x10"},
	} {
		s, ok := tab.Lookup(c.addr)
		if !ok || s.String() != c.want {
			t.Errorf("Lookup(%#x) = %v %v, want %s", c.addr, s, ok, c.want)
		}
	}
	for _, addr := range []uint64{0x1000, 0xffffffffc0001080 + maxGap} {
		if s, ok := tab.Lookup(addr); ok {
			t.Errorf("Lookup(%#x) = %v, want nothing", addr, s)
		}
	}
}

func TestNames(t *testing.T) {
	ns, err := ParseNames(strings.NewReader(sample + "ffffffffc0002000 t helper\t[ext4]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mod, name string
		want      Named
		err       error
	}{
		{"", "some_data", Named{"vmlinux", "some_data", 0xffffffff81000300, false}, nil},
		{"vmlinux", "do_syscall_64", Named{"vmlinux", "do_syscall_64", 0xffffffff81000100, true}, nil},
		// The kernel's own before a module's, unless the module is named.
		{"", "helper", Named{"vmlinux", "helper", 0xffffffff81000200, true}, nil},
		{"ext4", "helper", Named{"ext4", "helper", 0xffffffffc0002000, true}, nil},
		{"", "ext4_open", Named{"ext4", "ext4_open", 0xffffffffc0001000, true}, nil},
		{"", "nosuch", Named{}, ErrNoSymbol},
		{"vmlinux", "ext4_open", Named{}, ErrNoSymbol},
		{"nosuchmod", "helper", Named{}, ErrNoModule},
	} {
		got, err := ns.Find(c.mod, c.name)
		if got != c.want || err != c.err {
			t.Errorf("Find(%q, %q) = %+v, %v; want %+v, %v", c.mod, c.name, got, err, c.want, c.err)
		}
	}
}

// TestKernel resolves the running kernel's own functions back to their
// names.
func TestKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("kallsyms hides addresses from non-root users")
	}
	tab, err := Kernel()
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{"do_syscall_64", "schedule"} {
		addr, ok := tab.Address(fn)
		if !ok {
			t.Fatalf("no %s in kallsyms", fn)
		}
		if s, ok := tab.Lookup(addr + 3); !ok || s.String() != "vmlinux`"+fn+"+0x3" {
			t.Errorf("Lookup(%s+3) = %v", fn, s)
		}
	}
}

func BenchmarkKernelParse(b *testing.B) {
	data, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		b.Skip(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := Parse(strings.NewReader(string(data))); err != nil {
			b.Fatal(err)
		}
	}
}

func TestExtents(t *testing.T) {
	tab, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	got := tab.extents(func(name string) bool { return name != "helper" })
	want := map[string]Extent{
		// Up to the next function; the last of a module gets maxGap.
		"_text":         {0xffffffff81000000, 0xffffffff81000100},
		"do_syscall_64": {0xffffffff81000100, 0xffffffff81000200},
		"ext4_open":     {0xffffffffc0001000, 0xffffffffc0001080},
		"ext4_read":     {0xffffffffc0001080, 0xffffffffc0001080 + maxGap},
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %#x, want %#x", name, got[name], w)
		}
	}
	if _, ok := got["helper"]; ok {
		t.Errorf("helper was not asked for: %v", got)
	}
}
