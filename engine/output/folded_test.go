package output

import (
	"strings"
	"testing"

	"github.com/dstar-trace/dstar/dcompiler/printf"
)

// Folded output: root first, offsets gone, rows that fold alike merged,
// other keys as root frames, a kernel stack above the user stack it was
// entered from, and rows of no width left out.
func TestFolded(t *testing.T) {
	user := func(leafOff string) printf.Value {
		return printf.Stack([]string{"libc.so.6`getppid+" + leafOff, "chain`middle+0x9", "chain`top+0x9", "chain`main+0x1c", "0x7f00deadbeef"})
	}
	a := &Aggregation{Func: Count, Folded: true, Rows: []Row{
		{Keys: []printf.Value{user("0x7")}, Value: 3},
		{Keys: []printf.Value{user("0xb")}, Value: 2},
		{Keys: []printf.Value{printf.Stack([]string{"chain`top+0x1"})}, Value: 0},
	}}
	// At exit, with no newline first: the output is all folded stacks.
	if got, want := writeFinal(t, a), "0x7f00deadbeef;chain`main;chain`top;chain`middle;libc.so.6`getppid 5\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}

	b := &Aggregation{Func: Sum, Folded: true, Rows: []Row{
		{Keys: []printf.Value{printf.Str("chain"), printf.Stack([]string{"vmlinux`do_sys_openat2+0x5a", "vmlinux`do_syscall_64+0x80"}),
			printf.Stack([]string{"libc.so.6`open64+0x4", "chain`main+0x10"}), printf.Sized(7, 4, true)}, Value: 40},
	}}
	want := "chain;7;chain`main;libc.so.6`open64;vmlinux`do_syscall_64;vmlinux`do_sys_openat2 40\n"
	if got := writePrinta(t, b); got != "\n"+want {
		t.Errorf("got %q, want %q", got, "\n"+want)
	}

	// Without a stack, or with a distribution, the usual layout; and
	// then the newline before all at exit.
	c := &Aggregation{Func: Count, Folded: true, Rows: []Row{{Keys: []printf.Value{printf.Str("x")}, Value: 1}}}
	c2 := *c
	c2.Folded = false
	if got, want := writeFinal(t, c), writeFinal(t, &c2); got != want {
		t.Errorf("no stack: got %q, want %q", got, want)
	}
	q := &Aggregation{Func: Quantize, Folded: true, Rows: []Row{{Keys: []printf.Value{printf.Stack([]string{"f+0x1"})}, Buckets: make([]int64, QuantizeBuckets)}}}
	if got := writeFinal(t, a, q); !strings.HasPrefix(got, "\n0x7f00deadbeef;") || !strings.Contains(got, "\n              f+0x1\n") {
		t.Errorf("folded and quantize: got %q", got)
	}
}
