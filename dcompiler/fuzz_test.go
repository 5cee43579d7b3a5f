package dcompiler_test

import (
	"errors"
	"testing"

	"github.com/dstar-trace/dstar/dcompiler"
	"github.com/dstar-trace/dstar/dcompiler/bigprog"
	"github.com/dstar-trace/dstar/dcompiler/check"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/providers"
)

// dtraceOnly matches only the dtrace provider's probes, so fuzzing needs no
// tracefs and touches no kernel.
type dtraceOnly struct{ providers.DTrace }

func (d dtraceOnly) Match(desc providers.Desc) ([]*providers.Probe, error) {
	return d.Probes(desc)
}

func (dtraceOnly) Dispatcher(*providers.Probe) (providers.Dispatcher, string) { return nil, "" }

// FuzzCompile runs the whole compiler front end and code generator on
// arbitrary text: it must never panic, and every error must be positioned
// in the source (or be a description that matched nothing).
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`BEGIN { printf("hello, world\n"); exit(0); }`,
		`BEGIN { x = 1 + 2 * 3; y = x / 2; z = x % 4; trace(x << 2 | y ^ z); }`,
		`BEGIN /x == 0 && $1 > 2/ { @[execname, pid] = count(); @s = sum(arg0 - 1); }`,
		`END { s = "abc"; printf("%s %-5d %x\n", s == "abc" ? "yes" : "no", -1, 255); }`,
		`ERROR { trace(arg4); } BEGIN { x = 0; trace(1 / x); }`,
		`BEGIN { @a = (count()); @b[1, "x"] = ((sum(2))); }`,
		`BEGIN { tracemem(arg0, 8); trace(*(int *)copyin(arg0, 4)); trace(args[1]); printa("%d %@d", @q); }`,
		`inline int N = 2; self int x; BEGIN { s = speculation(); speculate(s); printf("%s", substr(strjoin("a", "b"), N)); }`,
		`BEGIN { @q = lquantize(1, 0, 10, 2); @r = llquantize(5, 10, 0, 3, 10); trunc(@q, 1); normalize(@r, 2); }`,
		`BEGIN { i++; --i; i += 4; trace(i ^^ 1); trace(copyinstr(arg0)); }`,
		`struct s { int a; string n; }; translator struct s < struct task_struct *T > { a = T->pid; n = T->comm; };
BEGIN { trace(xlate <struct s *> (curthread)->a); trace(curpsinfo->pr_psargs); trace(curlwpsinfo->pr_pri); }`,
	} {
		f.Add(s)
	}
	// Large generated programs, of a few kilobytes so that the fixed
	// fuzzing budget takes about as long as before (the parser's
	// nesting bounds are fuzzed in FuzzParse, with smaller bounds).
	for _, sh := range bigprog.Shapes {
		f.Add(sh.Gen(50))
	}
	f.Fuzz(func(t *testing.T, src string) {
		file := source.NewFile("f.d", src)
		_, err := dcompiler.Compile([]*source.File{file}, dcompiler.Options{
			Providers: dtraceOnly{}, Macros: []string{"f.d", "3", "word"},
		})
		if err == nil {
			return
		}
		var nm *check.NoMatchError
		if errors.As(err, &nm) {
			return
		}
		var se *source.Error
		if !errors.As(err, &se) {
			t.Fatalf("error without position: %v", err)
		}
		if int(se.Pos) < 0 || int(se.Pos) > len(src) {
			t.Fatalf("error position %d outside the source (%d bytes): %v", se.Pos, len(src), err)
		}
	})
}
