package dcompiler_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dstar-trace/dstar/dcompiler"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/providers"
)

// BenchmarkCompile compiles scripts of 250, 500 and 1,000 clauses, each
// clause its own probe with a predicate, a thread-local, an aggregation
// and a printf: the per-clause cost should stay flat as the script grows.
// Code generation is included; loading into the kernel is not.
func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{250, 500, 1000} {
		var src strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&src, "tick-%dms /pid != %d && cpu < 64/ { self->n%d = timestamp; @c%d[execname, cpu] = count(); printf(\"%%s %%d\\n\", probename, %d); }\n", i+1, i, i, i, i)
		}
		text := src.String()
		reg := providers.Default()
		b.Run(fmt.Sprintf("clauses=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				f := source.NewFile("big.d", text)
				if _, err := dcompiler.Compile([]*source.File{f}, dcompiler.Options{Providers: reg}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
