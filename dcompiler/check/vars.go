package check

import (
	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/dcompiler/types"
)

// Scope is where a variable lives.
type Scope int

// The scopes of D variables.
const (
	ScopeGlobal Scope = iota // x, and associative arrays a[k]
	ScopeThread              // self->x: one per thread
	ScopeClause              // this->x: one per probe firing
)

// VarRef is a variable reference as written: the variable's scope and
// name, and the keys of an associative array element.
type VarRef struct {
	Scope Scope
	Name  string
	Keys  []ast.Expr // nil unless an associative array
	Pos   source.Pos
}

// RefOf recognises x, self->x, this->x and a[keys] (a not a built-in);
// ok is false for anything else.
func RefOf(e ast.Expr) (ref VarRef, ok bool) {
	switch e := e.(type) {
	case *ast.Paren:
		return RefOf(e.X)
	case *ast.Ident:
		if ArgIndex(e.Name) >= 0 || isReserved(e.Name) {
			return VarRef{}, false
		}
		// (An inline's name is resolved before variables are.)
		return VarRef{Scope: ScopeGlobal, Name: e.Name, Pos: e.Pos}, true
	case *ast.Member:
		id, isID := e.X.(*ast.Ident)
		if !isID || !e.Arrow {
			return VarRef{}, false
		}
		switch id.Name {
		case "self":
			return VarRef{Scope: ScopeThread, Name: e.Name, Pos: e.Pos}, true
		case "this":
			return VarRef{Scope: ScopeClause, Name: e.Name, Pos: e.Pos}, true
		}
	case *ast.Index:
		// self->a[k]: a thread-local associative array.
		if m, isMember := e.X.(*ast.Member); isMember && m.Arrow {
			if id, isID := m.X.(*ast.Ident); isID && id.Name == "self" {
				return VarRef{Scope: ScopeThread, Name: m.Name, Keys: e.Keys, Pos: m.Pos}, true
			}
		}
		id, isID := e.X.(*ast.Ident)
		if !isID || id.Name == "args" || isReserved(id.Name) || ArgIndex(id.Name) >= 0 {
			return VarRef{}, false
		}
		return VarRef{Scope: ScopeGlobal, Name: id.Name, Keys: e.Keys, Pos: id.Pos}, true
	}
	return VarRef{}, false
}

// isReserved reports whether name is a built-in variable or function.
func isReserved(name string) bool {
	if _, ok := Builtins[name]; ok {
		return true
	}
	if _, ok := aggFuncs[name]; ok {
		return true
	}
	return isAction(name) || name == "self" || name == "this" || name == "args" || name == "uregs"
}

// scopeName is how DTrace names a reference in messages.
func (r VarRef) String() string {
	switch r.Scope {
	case ScopeThread:
		return "self->" + r.Name
	case ScopeClause:
		return "this->" + r.Name
	}
	return r.Name
}

// vars returns the table of a scope.
func (in *Info) vars(s Scope) map[string]*Var {
	switch s {
	case ScopeThread:
		return in.threads
	case ScopeClause:
		return in.locals
	}
	return in.globals
}

// create records that global scalar x (when it is one) exists from here
// on in program order: it is assigned, or incremented.
func (in *Info) create(x ast.Expr) {
	if id, ok := Unparen(x).(*ast.Ident); ok && in.created != nil {
		in.created[id.Name] = true
	}
}

// Lookup returns the variable a reference names, or nil.
func (in *Info) Lookup(r VarRef) *Var { return in.vars(r.Scope)[r.Name] }

// refType types a variable reference used as a value.
func (in *Info) refType(r VarRef, env *Env) (*types.Type, error) {
	v := in.Lookup(r)
	if v == nil {
		return nil, in.errorf(r.Pos, "D_IDENT_UNDEF", "failed to resolve %s: Unknown variable name", r)
	}
	if err := in.checkKeys(v, r, env); err != nil {
		return nil, err
	}
	return v.Type, nil
}

// tupleFits applies dtrace's bound on a tuple, an array's or an
// aggregation's keys: one more than -x tregs (8), as its code generator
// counts them.
func (in *Info) tupleFits(keys []ast.Expr, pos source.Pos) error {
	regs := in.Opts.TupleRegs
	if regs <= 0 {
		regs = 8
	}
	if len(keys) <= regs+1 {
		return nil
	}
	e := source.Errorf(in.file, pos, "", "Insufficient tuple registers to generate code")
	e.NoLine = true
	return e
}

// checkKeys checks an associative array's keys against its declaration.
func (in *Info) checkKeys(v *Var, r VarRef, env *Env) error {
	if err := in.tupleFits(r.Keys, r.Pos); err != nil {
		return err
	}
	if (v.Keys == nil) != (r.Keys == nil) {
		if r.Scope == ScopeGlobal {
			// DTrace's words for a global used as the other kind.
			have, as := "associative array", "scalar"
			if v.Keys == nil {
				have, as = as, have
			}
			return in.errorf(r.Pos, "D_IDENT_BADREF", "%s '%s' may not be referenced as %s", have, r.Name, as)
		}
		if v.Keys == nil {
			return in.errorf(r.Pos, "D_IDENT_BADREF", "%s is not an array", r)
		}
		return in.errorf(r.Pos, "D_IDENT_BADREF", "%s is an associative array and requires an index", r)
	}
	if len(v.Keys) != len(r.Keys) {
		return in.errorf(r.Pos, "D_PROTO_LEN", "%s[ ] prototype mismatch: %d key%s passed, %d expected", r.Name, len(r.Keys), plural(len(r.Keys)), len(v.Keys))
	}
	for i, k := range r.Keys {
		t, err := in.TypeOf(k, env)
		if err != nil {
			return err
		}
		if t.Kind == types.Float {
			return in.structKey(k, t, i)
		}
		pk := v.Keys[i]
		if t.IsString() != pk.IsString() || t.Kind == types.Void ||
			(t.Kind == types.Struct || pk.Kind == types.Struct) && !SameStruct(t, pk) {
			return in.errorf(k.Start(), "D_PROTO_ARG", "%s[ ] key #%d is incompatible with prototype:\n\tprototype: %s\n\t      key: %s", r.Name, i+1, v.Keys[i], t)
		}
		if t.IsString() && t.Size > v.Keys[i].Size {
			v.Keys[i] = types.StringT(in.Opts.StrSize)
		}
	}
	return nil
}

// declare makes the variable r names, of type t, on its first assignment.
func (in *Info) declare(r VarRef, t *types.Type, env *Env) (*Var, error) {
	if t.IsString() {
		t = types.StringT(in.Opts.StrSize)
	} else if t.Kind == types.Int && t.Size < 8 {
		t = types.Promote(t)
	}
	if t.Kind == types.Struct {
		if err := in.structVarOK(r.Pos, r.String(), t, r.Scope, r.Keys != nil); err != nil {
			return nil, err
		}
	}
	if err := in.tupleFits(r.Keys, r.Pos); err != nil {
		return nil, err
	}
	v := &Var{Name: r.Name, Scope: r.Scope, Type: t, Pos: r.Pos}
	for i, k := range r.Keys {
		kt, err := in.TypeOf(k, env)
		if err != nil {
			return nil, err
		}
		if kt.Kind == types.Void {
			return nil, in.errorf(k.Start(), "D_KEY_TYPE", "void expression may not be used as associative array index: key #%d", i+1)
		}
		if kt.Kind == types.Float {
			return nil, in.structKey(k, kt, i)
		}
		if kt.Kind == types.Struct && kt.Size <= 0 {
			return nil, in.errorf(k.Start(), "D_KEY_TYPE", "%s expression may not be used as associative array index: key #%d", kt, i+1)
		}
		if kt.IsString() {
			kt = types.StringT(in.Opts.StrSize)
		}
		v.Keys = append(v.Keys, kt)
	}
	if r.Keys != nil && v.Keys == nil {
		v.Keys = []*types.Type{}
	}
	in.addVar(v)
	return v, nil
}

// addVar records a new variable in its scope's table and list.
func (in *Info) addVar(v *Var) {
	in.vars(v.Scope)[v.Name] = v
	switch v.Scope {
	case ScopeThread:
		in.Threads = append(in.Threads, v)
	case ScopeClause:
		in.Locals = append(in.Locals, v)
	default:
		in.Globals = append(in.Globals, v)
	}
}

// predeclare declares, before checking, every variable the program
// assigns, so that a clause may read a variable a later clause assigns
// (self->ts set at entry, read at return, in either order).
func (in *Info) predeclare() {
	for round := 0; round < 3; round++ {
		for _, cl := range in.Clauses {
			in.file = cl.File
			env := &Env{}
			if len(cl.Probes) > 0 {
				env.Probe = cl.Probes[0]
			}
			ast.InspectStmts(cl.Body, func(e ast.Expr) {
				a, ok := e.(*ast.Assign)
				if !ok {
					return
				}
				if av, isAgg := AggTarget(a.LHS); isAgg {
					in.aggAssign(a, av, env)
					return
				}
				r, ok := RefOf(a.LHS)
				// x op= y declares nothing: x must exist already.
				if !ok || in.Lookup(r) != nil || a.Op != "=" {
					return
				}
				if t, err := in.TypeOf(a.RHS, env); err == nil && t.Kind != types.Void {
					in.declare(r, t, env)
				}
			})
		}
	}
}
