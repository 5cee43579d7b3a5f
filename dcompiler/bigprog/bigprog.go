// Package bigprog generates large D programs of the shapes that stress a
// compiler's scaling: long expressions, deep nesting, many clauses, many
// string operations and large inline and #define expansions. Benchmarks,
// fuzz seeds and end-to-end tests share them so they measure and check
// the same programs.
package bigprog

import (
	"fmt"
	"strings"
)

// Shape is one kind of large program, generated at size n.
type Shape struct {
	Name string
	Gen  func(n int) string
	// Want is what the program prints when run with -q (it exits at once).
	Want func(n int) string
}

// Shapes lists every shape.
var Shapes = []Shape{
	{"sum", Sum, func(n int) string { return fmt.Sprintf("%d\n", n) }},
	{"constsum", ConstSum, func(n int) string { return fmt.Sprintf("%d\n", n) }},
	{"parens", Parens, func(n int) string { return "7\n" }},
	{"clauses", Clauses, func(n int) string { return fmt.Sprintf("%d\n", n) }},
	{"strings", Strings, func(n int) string { return fmt.Sprintf("%d\n", n) }},
	{"inlines", Inlines, func(n int) string { return fmt.Sprintf("%d\n", n) }},
	{"defines", Defines, func(n int) string { return fmt.Sprintf("%d\n", n) }},
}

// repeated is head, then part(i) for i from 1 to n, then tail.
func repeated(head string, n int, part func(i int) string, tail string) string {
	var b strings.Builder
	b.WriteString(head)
	for i := 1; i <= n; i++ {
		b.WriteString(part(i))
	}
	b.WriteString(tail)
	return b.String()
}

// Sum is one expression of n terms, each a variable: y + y + ... + y.
func Sum(n int) string {
	return repeated("BEGIN { y = 1; x = y", n-1, func(int) string { return " + y" },
		"; printf(\"%d\\n\", x); exit(0); }\n")
}

// ConstSum is one expression of n constant terms: 1 + 1 + ... + 1.
func ConstSum(n int) string {
	return repeated("BEGIN { x = 1", n-1, func(int) string { return " + 1" },
		"; printf(\"%d\\n\", x); exit(0); }\n")
}

// Parens is a value nested in n parentheses.
func Parens(n int) string {
	return "BEGIN { y = 7; x = " + strings.Repeat("(", n) + "y" + strings.Repeat(")", n) +
		"; printf(\"%d\\n\", x); exit(0); }\n"
}

// Clauses is n BEGIN clauses, each adding one to a global, and an END
// that prints it.
func Clauses(n int) string {
	return repeated("BEGIN { x = 0; }\n", n, func(int) string { return "BEGIN /x >= 0/ { x = x + 1; }\n" },
		"BEGIN { exit(0); }\nEND { printf(\"%d\\n\", x); }\n")
}

// Strings is n string operations, each a statement of its own: a
// comparison, a strjoin and a strlen, counting the comparisons that held.
func Strings(n int) string {
	return repeated("BEGIN { s = \"a\"; n = 0;\n", n,
		func(int) string { return "n += strjoin(s, \"b\") == \"ab\" && strlen(s) == 1 ? 1 : 0;\n" },
		"printf(\"%d\\n\", n); exit(0); }\n")
}

// Inlines is a chain of n inlines, each the one before plus one, so the
// last expands to n terms.
func Inlines(n int) string {
	return repeated("inline int i0 = 0;\n", n, func(i int) string { return fmt.Sprintf("inline int i%d = i%d + 1;\n", i, i-1) },
		fmt.Sprintf("BEGIN { printf(\"%%d\\n\", i%d); exit(0); }\n", n))
}

// Defines is a chain of n macros, each the one before plus one, so the
// last expands to n terms.
func Defines(n int) string {
	return repeated("#define D0 0\n", n, func(i int) string { return fmt.Sprintf("#define D%d D%d + 1\n", i, i-1) },
		fmt.Sprintf("BEGIN { printf(\"%%d\\n\", D%d); exit(0); }\n", n))
}
