package parser

import (
	"strings"
	"testing"

	"github.com/dstar-trace/dstar/dcompiler/bigprog"

	"github.com/dstar-trace/dstar/dcompiler/lexer"
	"github.com/dstar-trace/dstar/dcompiler/source"
)

var seeds = []string{
	`translator struct s < struct task_struct *T > { a = T->pid; b = xlate <psinfo_t *> (T)->pr_pid; };`,
	`BEGIN { trace(xlate <psinfo_t *> (curthread)->pr_pid); trace(xlate<x>(y).z); }`,
	`BEGIN { printf("hello, world\n"); exit(0); }`,
	`syscall::openat:entry /pid == $target/ { @[copyinstr(arg1)] = count(); }`,
	`profile-997 /arg0/ { @a[execname, pid] = sum(arg1 * 2 + 1); } tick-1s { trace(x ? y : z); }`,
	`#pragma D option quiet
	sdt:sched::sched_process_exec { printf("%s %d\n", args->filename, (int)args->pid); }`,
	`BEGIN { x = 'a' + 0x1fUL - 077; y = "\x41\101\n"; i++; --j; z = sizeof(int); }`,
	`/* c */ a:b:c:d, e::f: /x/ { if (x) { y = 1; } else z = 2; }`,
}

// FuzzLexer checks that scanning never panics and always advances.
func FuzzLexer(f *testing.F) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		lx := lexer.New(source.NewFile("f.d", src))
		for i := 0; i <= len(src)+1; i++ {
			tok, err := lx.Next()
			if err != nil || tok.Kind == lexer.EOF {
				return
			}
		}
		t.Fatalf("lexer did not reach the end of %q", src)
	})
}

// Fuzzing lowers the nesting bounds so that inputs of a few kilobytes
// reach them (the fixed fuzzing budget then takes about as long as before).
const fuzzNest, fuzzHeight = 40, 400

// largeSeeds are generated programs of every bigprog shape, past the
// fuzzing bounds and just under them, so that fuzzing mutates large
// programs too.
func largeSeeds() []string {
	out := []string{
		"BEGIN { x = " + strings.Repeat("(", fuzzNest+1) + "1" + strings.Repeat(")", fuzzNest+1) + "; }",
		"BEGIN { " + strings.Repeat("if (x) y = 1; else ", fuzzNest+1) + "y = 2; }",
		bigprog.Sum(fuzzHeight + 1),
	}
	for _, sh := range bigprog.Shapes {
		out = append(out, sh.Gen(fuzzNest-5))
	}
	return out
}

// FuzzParse checks that parsing never panics and that every error carries
// a position inside the source.
func FuzzParse(f *testing.F) {
	for _, s := range append(seeds, largeSeeds()...) {
		f.Add(s)
	}
	maxNest, maxHeight = fuzzNest, fuzzHeight
	defer func() { maxNest, maxHeight = MaxNest, MaxHeight }()
	f.Fuzz(func(t *testing.T, src string) {
		file := source.NewFile("f.d", src)
		_, err := Parse(file)
		if err == nil {
			return
		}
		se, ok := err.(*source.Error)
		if !ok {
			t.Fatalf("error without position: %v", err)
		}
		if int(se.Pos) < 0 || int(se.Pos) > len(src) {
			t.Fatalf("error position %d outside source of %d bytes", se.Pos, len(src))
		}
		_ = se.Excerpt()
	})
}
