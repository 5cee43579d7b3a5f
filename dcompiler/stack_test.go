package dcompiler_test

import (
	"testing"

	"github.com/dstar-trace/dstar/dcompiler"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/providers"
)

// TestStackDefaultDepths checks Oracle's default depths: stack( ) 20
// frames, ustack( ) 100, both cut to -x maxframes.
func TestStackDefaultDepths(t *testing.T) {
	for _, c := range []struct {
		max, k, u int
	}{{0, 20, 100}, {25, 20, 25}, {10, 10, 10}} {
		f := source.NewFile("test.d", `profile-1 { @k[stack()] = count(); @u[ustack()] = count(); }`)
		p, err := dcompiler.Compile([]*source.File{f}, dcompiler.Options{Providers: providers.Default(), MaxFrames: c.max})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range p.Info.Aggs {
			want := map[string]int{"k": c.k, "u": c.u}[a.Name]
			if got := a.Keys[0].Len; got != want {
				t.Errorf("maxframes %d: @%s's stack has %d frames, want %d", c.max, a.Name, got, want)
			}
		}
	}
}
