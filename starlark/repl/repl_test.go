package repl

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/dstar-trace/dstar/providers"
	"github.com/dstar-trace/dstar/providers/bpftest"
)

func TestIsDClause(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{`syscall::read:entry { @[execname] = count(); }`, true},
		{`BEGIN { printf("hi\n"); }`, true},
		{`BEGIN{`, true},
		{`  tick-1s /n > 3/ {`, true},
		{`BEGIN /1/ { exit(0); }`, true},
		{`syscall::read:entry /pid == 1 &&`, true},
		{`syscall::read:entry`, true},
		{`syscall::read:entry,`, true},
		{`syscall::read:entry, syscall::write:entry {`, true},
		{`sdt:sched::sched_process_exec /args->filename == "x"/ { }`, true},
		{`print(1+1)`, false},
		{`x = {`, false},
		{`a / b`, false},
		{`a / 2`, false},
		{`x[1:2]`, false},
		{`a,`, false},
		{`BEGIN`, false},
		{`def f(x):`, false},
		{`"a:b" {`, false},
		{``, false},
	} {
		if got := isDClause(tc.line); got != tc.want {
			t.Errorf("isDClause(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

func TestBraces(t *testing.T) {
	for _, tc := range []struct {
		lines []string
		want  []bool // complete after each line
	}{
		{[]string{`BEGIN { printf("}"); }`}, []bool{true}},
		{[]string{`syscall::read:entry`, `/pid == 1/`, `{`, `  @[probefunc] = count(); /* } */`, `}`}, []bool{false, false, false, false, true}},
		{[]string{`BEGIN { /* a`, `} */ x = 1;`, `}`}, []bool{false, false, true}},
		{[]string{`BEGIN { // }`, `}`}, []bool{false, true}},
		{[]string{`BEGIN { x = '}'; }`}, []bool{true}},
		{[]string{`BEGIN { printf("\"}"); }`}, []bool{true}},
	} {
		var b braces
		for i, l := range tc.lines {
			b.feed(l)
			if got := b.complete(); got != tc.want[i] {
				t.Errorf("%q: complete after line %d = %v, want %v", tc.lines, i+1, got, tc.want[i])
			}
		}
	}
}

// run runs the REPL on input, without a terminal.
func run(t *testing.T, input string) (stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Run(Options{Stdin: strings.NewReader(input), Stdout: &out, Stderr: &errb}); code != 0 {
		t.Errorf("exit %d", code)
	}
	return out.String(), errb.String()
}

func TestStarlark(t *testing.T) {
	out, errs := run(t, `x = 20
x + 1
_ * 2
def f(a):
    for i in range(3):
        a += i

    return a

f(1)
if x > 3:
    print("big")
else:
    print("small")
None
undefined_name
print("after")
s = "abc"
s.upper()
load("@stdlib//nosuch.star", "y")
`)
	if want := "21\n42\n4\nbig\nafter\n\"ABC\"\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	if !strings.Contains(errs, "undefined: undefined_name") || !strings.Contains(errs, "no module @stdlib//nosuch.star") {
		t.Errorf("stderr %q", errs)
	}
}

func TestIncompleteInput(t *testing.T) {
	out, errs := run(t, "print(1)\nf(1,\n")
	if out != "1\n" || !strings.Contains(errs, "input ended inside a statement") {
		t.Errorf("stdout %q, stderr %q", out, errs)
	}
	out, errs = run(t, "BEGIN {\n")
	if out != "" || errs != "dstar: input ended inside a D clause\n" {
		t.Errorf("stdout %q, stderr %q", out, errs)
	}
}

func TestSessionIsLazy(t *testing.T) {
	var out, errb bytes.Buffer
	r := newShell(Options{Stdin: strings.NewReader(":attached\n:agg\n:run\nx = 1\n"), Stdout: &out, Stderr: &errb})
	defer r.close()
	r.loop()
	if r.current() != nil {
		t.Errorf("a session was made")
	}
	if out.String() != "nothing is attached\n" || errb.String() != "dstar: nothing is attached to run\n" {
		t.Errorf("stdout %q, stderr %q", out.String(), errb.String())
	}
	stdout, errs := run(t, "session\nprint(type(session))\nsession = 1\n:attached\nprint(type(session))\n")
	if want := "<dtrace.session: 0 attached>\ndtrace.session\nnothing is attached\nint\n"; stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	if errs != "" {
		t.Errorf("stderr %q", errs)
	}
}

func TestCommands(t *testing.T) {
	out, errs := run(t, ":h\n:help dtrace\n:a\n:detach x\n:detach 3\n:q\nprint(1)\n")
	for _, s := range []string{":list [PATTERN]", "dtrace.session("} {
		if !strings.Contains(out, s) {
			t.Errorf("no %q in stdout:\n%s", s, out)
		}
	}
	if strings.HasSuffix(out, "\n1\n") {
		t.Errorf("ran past :quit:\n%s", out)
	}
	want := "dstar: ambiguous command :a (:attached, :agg)\n" +
		"dstar: :detach wants an enabling's id (:attached lists them), not \"x\"\n" +
		"dstar: no enabling 3 is attached (:attached lists them)\n"
	if errs != want {
		t.Errorf("stderr %q, want %q", errs, want)
	}
}

func TestDClause(t *testing.T) {
	bpftest.Require(t)
	out, errs := run(t, `session = dtrace.session(quiet=True)
BEGIN { printf("one\n"); }
BEGIN
/1/
{
	printf("two\n");
}
END { printf("bye\n"); }
:detach 1
:attached
`)
	if want := "one\ntwo\n   ID  PROBES\n    2  dtrace:::BEGIN\n    3  dtrace:::END\nbye\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	if want := "dstar: enabling 1 matched 1 probe\ndstar: enabling 2 matched 1 probe\ndstar: enabling 3 matched 1 probe\n"; errs != want {
		t.Errorf("stderr %q, want %q", errs, want)
	}
}

func TestComplete(t *testing.T) {
	r := newShell(Options{Stdin: strings.NewReader("")})
	defer r.close()
	r.globals["dtrace_x"] = r.globals["json"]
	r.probes = []*providers.Probe{
		{Provider: "syscall", Module: "vmlinux", Function: "read", Name: "entry"},
		{Provider: "syscall", Module: "vmlinux", Function: "read", Name: "return"},
		{Provider: "syscall", Module: "vmlinux", Function: "readv", Name: "entry"},
		{Provider: "syscall", Module: "vmlinux", Function: "write", Name: "entry"},
		{Provider: "sdt", Module: "sched", Name: "sched_switch"},
	}
	r.probesRead = true
	for _, tc := range []struct {
		line       string
		pos        int // -1: the end
		head       string
		completion []string
		tail       string
	}{
		{"dtra", -1, "", []string{"dtrace", "dtrace:", "dtrace_x"}, ""},
		{"x = dtra", -1, "x = ", []string{"dtrace", "dtrace_x"}, ""},
		{"dtrace.se", -1, "dtrace.", []string{"session"}, ""},
		{"print(dtrace.com)", 16, "print(dtrace.", []string{"compile"}, ")"},
		{"json.dec", -1, "json.", []string{"decode"}, ""},
		{"sessi", -1, "", []string{"session"}, ""},
		{"session.pri", -1, "session.", []string{"printa"}, ""},
		{"sys", -1, "", []string{"syscall:"}, ""},
		{"BE", -1, "", []string{"BEGIN"}, ""},
		{"syscall:", -1, "", []string{"syscall:vmlinux:"}, ""},
		{"syscall::re", -1, "", []string{"syscall::read:", "syscall::readv:"}, ""},
		{"syscall:*:read:", -1, "", []string{"syscall:*:read:entry", "syscall:*:read:return"}, ""},
		{"syscall::read:entry, syscall::wr", -1, "syscall::read:entry, ", []string{"syscall::write:"}, ""},
		{"sdt:sched::", -1, "", []string{"sdt:sched::sched_switch"}, ""},
		{":li", -1, "", []string{":list"}, ""},
		{":", -1, "", []string{":help", ":list", ":attached", ":detach", ":agg", ":run", ":quit"}, ""},
		{":list syscall::w", -1, ":list ", []string{"syscall::write:"}, ""},
		{"el", -1, "", []string{"elif", "else"}, ""},
		{"nosuch.x", -1, "nosuch.x", nil, ""},
	} {
		pos := tc.pos
		if pos < 0 {
			pos = len(tc.line)
		}
		head, completion, tail := r.complete(tc.line, pos)
		if head != tc.head || !reflect.DeepEqual(completion, tc.completion) || tail != tc.tail {
			t.Errorf("complete(%q, %d) = %q, %q, %q; want %q, %q, %q", tc.line, pos, head, completion, tail, tc.head, tc.completion, tc.tail)
		}
	}
}
