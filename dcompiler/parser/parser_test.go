package parser

import (
	"strings"
	"testing"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/source"
)

// render prints an expression fully parenthesised, to check precedence.
func render(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.IntLit:
		return e.Text
	case *ast.StrLit:
		return "\"" + e.Val + "\""
	case *ast.Ident:
		return e.Name
	case *ast.MacroVar:
		return "$" + e.Name
	case *ast.KSym:
		return e.String()
	case *ast.AggVar:
		return "@" + e.Name
	case *ast.Paren:
		return render(e.X)
	case *ast.Unary:
		return "(" + e.Op + render(e.X) + ")"
	case *ast.Postfix:
		return "(" + render(e.X) + e.Op + ")"
	case *ast.Binary:
		return "(" + render(e.X) + " " + e.Op + " " + render(e.Y) + ")"
	case *ast.Assign:
		return "(" + render(e.LHS) + " " + e.Op + " " + render(e.RHS) + ")"
	case *ast.Cond:
		return "(" + render(e.C) + " ? " + render(e.T) + " : " + render(e.F) + ")"
	case *ast.Call:
		var args []string
		for _, a := range e.Args {
			args = append(args, render(a))
		}
		return e.Fn + "(" + strings.Join(args, ", ") + ")"
	case *ast.Index:
		var keys []string
		for _, a := range e.Keys {
			keys = append(keys, render(a))
		}
		return render(e.X) + "[" + strings.Join(keys, ", ") + "]"
	case *ast.Member:
		op := "."
		if e.Arrow {
			op = "->"
		}
		return render(e.X) + op + e.Name
	case *ast.Cast:
		return "((" + e.Type.Name + strings.Repeat("*", e.Type.Ptr) + ")" + render(e.X) + ")"
	case *ast.SizeofType:
		return "sizeof(" + e.Type.Name + ")"
	case *ast.Xlate:
		return "xlate<" + e.Type.Name + strings.Repeat("*", e.Type.Ptr) + ">(" + render(e.X) + ")"
	}
	return "?"
}

func TestPrecedence(t *testing.T) {
	tests := []struct{ in, want string }{
		{"1 + 2 * 3", "(1 + (2 * 3))"},
		{"1 - 2 - 3", "((1 - 2) - 3)"},
		{"a = b = c", "(a = (b = c))"},
		{"a || b ^^ c && d", "(a || (b ^^ (c && d)))"},
		{"a | b ^ c & d", "(a | (b ^ (c & d)))"},
		{"a == b < c", "(a == (b < c))"},
		{"a << 1 + 2", "(a << (1 + 2))"},
		{"-a * !b", "((-a) * (!b))"},
		{"a ? b : c ? d : e", "(a ? b : (c ? d : e))"},
		{"x += y * 2", "(x += (y * 2))"},
		{"(int)x + 1", "(((int)x) + 1)"},
		{"(x) + 1", "(x + 1)"},
		{"sizeof(int) * 2", "(sizeof(int) * 2)"},
		{"i++ + ++j", "((i++) + (++j))"},
		{"args->filename", "args->filename"},
		{"@a[execname, pid]", "@a[execname, pid]"},
		{"copyinstr(arg1, 32)", "copyinstr(arg1, 32)"},
		{"$1 + $$2 == $target", "(($1 + $$2) == $target)"},
		{"a, b", "(a , b)"},
		{"(unsigned long long *)p", "((unsigned long long*)p)"},
		{"xlate <psinfo_t *> (curthread)->pr_pid + 1", "(xlate<psinfo_t*>(curthread)->pr_pid + 1)"},
		{"-xlate <struct s> (a, b).m", "(-xlate<struct s>((a , b)).m)"},
		{"&`max_pfn + 1", "((&`max_pfn) + 1)"},
		{"*&vmlinux`jiffies_64 != a`b", "((*(&vmlinux`jiffies_64)) != a`b)"},
		{"x ? `a:`b", "(x ? `a : `b)"},
	}
	for _, tt := range tests {
		x, err := ParseExpr(source.NewFile("t", tt.in))
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if got := render(x); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestKernelSymbols: a backquote scopes a kernel symbol in expressions,
// and stays part of the name in probe descriptions.
func TestKernelSymbols(t *testing.T) {
	src := "fbt:vmlinux`x:vfs_read:entry, profile-1 /&`max_pfn/ { trace(vmlinux`jiffies); }"
	p, err := Parse(source.NewFile("t.d", src))
	if err != nil {
		t.Fatal(err)
	}
	c := p.Clauses[0]
	if len(c.Descs) != 2 || c.Descs[0].Text != "fbt:vmlinux`x:vfs_read:entry" || c.Descs[1].Text != "profile-1" {
		t.Errorf("descs: %+v %+v", c.Descs[0], c.Descs[1])
	}
	if got := render(c.Pred); got != "(&`max_pfn)" {
		t.Errorf("pred: %s", got)
	}
	if got := render(c.Body[0].(*ast.ExprStmt).X); got != "trace(vmlinux`jiffies)" {
		t.Errorf("body: %s", got)
	}
	for _, bad := range []string{"``x", "a` b", "`1"} {
		if _, err := ParseExpr(source.NewFile("t", bad)); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}

func TestClauses(t *testing.T) {
	src := `#pragma D option quiet
/* comment */ syscall::read:entry, syscall::write:entry
/pid == $target/
{
	@[probefunc] = count(); // c++ comment
	x = arg0 / 2;
}

profile-997 /x/ { trace(x) }
BEGIN {}
tick-1s`
	// A bare description is a clause of -n's only (a file with no name):
	// in a file, dtrace wants a predicate or actions.
	if _, err := Parse(source.NewFile("t.d", src)); err == nil || err.Error() != "line 11: expected predicate and/or actions following probe description" {
		t.Errorf("bare description in a file: %v", err)
	}
	p, err := Parse(source.NewFile("", src))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Pragmas) != 1 || p.Pragmas[0].Text != "D option quiet" {
		t.Errorf("pragmas: %+v", p.Pragmas)
	}
	if len(p.Clauses) != 4 {
		t.Fatalf("got %d clauses", len(p.Clauses))
	}
	c := p.Clauses[0]
	if len(c.Descs) != 2 || c.Descs[1].Text != "syscall::write:entry" {
		t.Errorf("descs: %+v %+v", c.Descs[0], c.Descs[1])
	}
	if render(c.Pred) != "(pid == $target)" {
		t.Errorf("pred: %s", render(c.Pred))
	}
	if len(c.Body) != 2 {
		t.Errorf("body: %d statements", len(c.Body))
	}
	if got := render(c.Body[1].(*ast.ExprStmt).X); got != "(x = (arg0 / 2))" {
		t.Errorf("division inside body: %s", got)
	}
	if p.Clauses[1].Descs[0].Text != "profile-997" {
		t.Errorf("profile desc: %s", p.Clauses[1].Descs[0].Text)
	}
	if p.Clauses[3].Body != nil {
		t.Errorf("bare description has a body")
	}
}

func TestTranslator(t *testing.T) {
	src := `struct s { int a; };
typedef struct s s_t;
translator s_t < struct task_struct *T > { a = T->pid + 1; b = xlate <s_t *> (T)->a; };
BEGIN { trace((s_t *)0); }`
	p, err := Parse(source.NewFile("t.d", src))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Decls) != 3 || p.Decls[2].Xlator == nil {
		t.Fatalf("decls: %+v", p.Decls)
	}
	x := p.Decls[2].Xlator
	if x.Out.Name != "s_t" || x.Out.Ptr != 0 || x.In.Name != "struct task_struct" || x.In.Ptr != 1 || x.Param != "T" {
		t.Errorf("translator %+v < %+v %s >", x.Out, x.In, x.Param)
	}
	var got []string
	for _, m := range x.Members {
		got = append(got, m.Name+" = "+render(m.X))
	}
	if want := "a = (T->pid + 1); b = xlate<s_t*>(T)->a"; strings.Join(got, "; ") != want {
		t.Errorf("members: %s, want %s", strings.Join(got, "; "), want)
	}

	for _, tt := range []struct{ in, want string }{
		{"translator s < struct t *T { a = 1; };", `line 1: syntax error near "{"`},
		{"translator s < struct t *T > { a = 1 };", `line 1: syntax error near "}"`},
		{"translator s < struct t *T > { a; };", `line 1: syntax error near ";"`},
		{"BEGIN { xlate(x); }", `line 1: syntax error near "("`},
		{"BEGIN { xlate <int *> x; }", `line 1: syntax error near "x; }"`},
	} {
		_, err := Parse(source.NewFile("t.d", tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%q: got %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"BEGIN { x = ; }", `line 1: syntax error near ";"`},
		{"BEGIN {\n\tprintf(\"x\"\n}", `line 3: syntax error near "}"`},
		{"BEGIN { x = 1", `line 1: syntax error near end of input`},
		{"BEGIN { /* open", `line 1: end-of-file encountered before matching */`},
		{"BEGIN { x = \"abc\n\"; }", `line 2: newline encountered in string literal`},
		{"BEGIN { x = 09; }", `line 1: constant 09 contains invalid digit 9`},
		{"BEGIN { x = 1zz; }", `line 1: syntax error near "zz; }"`},
		{"BEGIN /x/ y", `line 1: syntax error near end of input`},
		{"BEGIN /x/\n;", `line 2: expected actions { } following probe description and predicate`},
		{"BEGIN { trace(x)); }", `line 1: extra ) in input stream`},
		{"BEGIN /a[1/ { }", `line 1: closing ] expected in predicate before /`},
		{"BEGIN /f((1)/\n{ }", `line 2: closing ) expected in predicate before /`},
		{"BEGIN { f(1 + ); }", `line 1: syntax error near ")"`},
	}
	for _, tt := range tests {
		_, err := Parse(source.NewFile("t.d", tt.in))
		if err == nil {
			t.Errorf("%q: no error", tt.in)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("%q: got %q, want %q", tt.in, err.Error(), tt.want)
		}
		if _, ok := err.(*source.Error); !ok {
			t.Errorf("%q: error %T has no position", tt.in, err)
		}
	}
}

func TestExcerpt(t *testing.T) {
	_, err := Parse(source.NewFile("x.d", "BEGIN\n{\n\tx = 1 +;\n}\n"))
	se := err.(*source.Error)
	want := "x.d:3:9:\n\t\tx = 1 +;\n\t\t       ^"
	if got := se.Excerpt(); got != want {
		t.Errorf("excerpt:\n%s\nwant:\n%s", got, want)
	}
}

// TestNestingBound: nesting past MaxNest, or an operator chain past
// MaxHeight, is a positioned D_SYNTAX error however deep the input goes
// (a million parentheses must not exhaust the stack), and just under the
// bound parses.
func TestNestingBound(t *testing.T) {
	for _, c := range []struct {
		name, src string
		ok        bool
	}{
		{"parens under", "BEGIN { x = " + strings.Repeat("(", MaxNest-2) + "1" + strings.Repeat(")", MaxNest-2) + "; }", true},
		{"parens over", "BEGIN { x = " + strings.Repeat("(", MaxNest) + "1" + strings.Repeat(")", MaxNest) + "; }", false},
		{"million parens", "BEGIN { x = " + strings.Repeat("(", 1000000) + "1" + strings.Repeat(")", 1000000) + "; }", false},
		{"million unary minus", "BEGIN { x = " + strings.Repeat("-", 1000000) + "1; }", false},
		{"million assignments", "BEGIN { " + strings.Repeat("x = ", 1000000) + "1; }", false},
		{"million ternaries", "BEGIN { x = " + strings.Repeat("1 ? 2 : ", 1000000) + "3; }", false},
		{"million else ifs", "BEGIN { " + strings.Repeat("if (x) y = 1; else ", 1000000) + "y = 2; }", false},
		{"long sum", "BEGIN { x = 1" + strings.Repeat(" + 1", MaxHeight-10) + "; }", true},
		{"too long sum", "BEGIN { x = 1" + strings.Repeat(" + 1", MaxHeight+1) + "; }", false},
	} {
		_, err := Parse(source.NewFile("deep.d", c.src))
		if c.ok {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		se, ok := err.(*source.Error)
		if !ok || se.Tag != "D_SYNTAX" || !strings.Contains(se.Msg, "too deep") || int(se.Pos) <= 0 || int(se.Pos) >= len(c.src) {
			t.Errorf("%s: got %v, want a positioned D_SYNTAX error of nesting too deep", c.name, err)
		}
	}
}
