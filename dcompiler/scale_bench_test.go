package dcompiler_test

import (
	"fmt"
	"testing"

	"github.com/dstar-trace/dstar/dcompiler"
	"github.com/dstar-trace/dstar/dcompiler/bigprog"
	"github.com/dstar-trace/dstar/dcompiler/cpp"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/providers"
)

// BenchmarkScale compiles each bigprog shape at 1k, 4k and 16k (nested
// parentheses at 600, 2,400 and 9,600, under the parser's bound): time
// and bytes per op should grow four times from one size to the next.
// Code generation is included; loading into the kernel is not.
func BenchmarkScale(b *testing.B) {
	reg := providers.Default()
	for _, sh := range bigprog.Shapes {
		sizes := []int{1000, 4000, 16000}
		if sh.Name == "parens" {
			sizes = []int{600, 2400, 9600}
		}
		for _, n := range sizes {
			text := sh.Gen(n)
			b.Run(fmt.Sprintf("%s=%d", sh.Name, n), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					text := text
					if sh.Name == "defines" {
						// As dstar -C: the preprocessor first.
						var err error
						if text, err = cpp.Run("big.d", text, cpp.Options{}); err != nil {
							b.Fatal(err)
						}
					}
					f := source.NewFile("big.d", text)
					if _, err := dcompiler.Compile([]*source.File{f}, dcompiler.Options{Providers: reg}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
