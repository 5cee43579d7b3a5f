package codegen

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/check"
	"github.com/dstar-trace/dstar/providers"
)

// contextFreer is what a Prologuer offers when some of its probes can be
// fired from a cheaper hook when their clauses read nothing of the
// context (providers.Registry does).
type contextFreer interface {
	ContextFree(pr *providers.Probe) *providers.Probe
}

// contextFree returns pr's context-free form when its provider has one
// and no clause on pr reads its arguments or record, else pr.
func (g *gen) contextFree(pr *providers.Probe) *providers.Probe {
	cf, ok := g.opts.Providers.(contextFreer)
	if !ok || g.readsContext(pr) {
		return pr
	}
	if light := cf.ContextFree(pr); light != nil {
		return light
	}
	return pr
}

// readsContext reports whether a clause on pr names args, arg0..arg9,
// directly or through the inlines it uses.
func (g *gen) readsContext(pr *providers.Probe) bool {
	reads := false
	seen := map[string]bool{}
	var visit func(e ast.Expr)
	visit = func(e ast.Expr) {
		id, ok := e.(*ast.Ident)
		if !ok || reads {
			return
		}
		if id.Name == "args" || check.ArgIndex(id.Name) >= 0 {
			reads = true
		} else if il := g.in.InlineOf(id.Name); il != nil && !seen[id.Name] {
			seen[id.Name] = true
			ast.Inspect(il.Init, visit)
		}
	}
	for _, cl := range g.in.ClausesOf[pr.ID] {
		ast.Inspect(cl.Pred, visit)
		ast.InspectStmts(cl.Body, visit)
	}
	return reads
}

// checkContextFree makes sure a program made for a context-free probe
// loads nothing from its context: its helpers may only be handed it.
func checkContextFree(p *Program) error {
	for _, ins := range p.Spec.Instructions {
		if ins.Src == regCtx && ins.OpCode.Class() == asm.LdXClass {
			return fmt.Errorf("internal error: the program for %s reads its context, which its hook does not fill", p.Probe)
		}
	}
	return nil
}
