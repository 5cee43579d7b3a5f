package engine

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dstar-trace/dstar/dcompiler/codegen"
	"github.com/dstar-trace/dstar/providers"
)

// TestRefusals checks the message that tells what the kernel refused: by
// reason, in order of first refusal, three probes named and the rest
// counted, and the error number's text with what a provider says after it.
func TestRefusals(t *testing.T) {
	prog := func(name string) *codegen.Program {
		return &codegen.Program{Probe: &providers.Probe{Provider: "sdt", Module: "g", Name: name}}
	}
	var r refusals
	r.tried = 10
	perm := fmt.Errorf("opening its perf event: %w (a hint)", unix.EPERM)
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		r.add(prog(n), perm)
	}
	r.add(prog("f"), fmt.Errorf("attaching: %w", unix.ENOENT))
	r.add(prog("g"), fmt.Errorf("no such thing"))
	want := "7 of 10 probes could not be enabled: sdt:g::a, sdt:g::b, sdt:g::c and 2 more: operation not permitted (a hint); sdt:g::f: no such file or directory; sdt:g::g: no such thing; -x skiprefused enables the other 3"
	if got := r.error().Error(); got != want {
		t.Errorf("error:\n%s\nwant:\n%s", got, want)
	}
	var one refusals
	one.tried = 1
	one.add(prog("a"), perm)
	if got, want := one.error().Error(), "cannot enable sdt:g::a: opening its perf event: operation not permitted (a hint)"; got != want {
		t.Errorf("the only probe: %q, want %q", got, want)
	}
}
