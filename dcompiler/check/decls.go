package check

import (
	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/types"
)

// Inline is an inline constant: its type and its value's expression.
type Inline struct {
	Name string
	Type *types.Type
	Init ast.Expr
}

// decls declares what the program declares outside its clauses, in order:
// typedefs, inlines, and variables with their types.
func (in *Info) decls() error {
	for _, d := range in.Prog.Decls {
		in.file = d.File
		t, err := in.typeName(d.Type)
		if err != nil {
			return err
		}
		if in.defined(d.Name) {
			return in.errorf(d.Pos, "D_DECL_IDENTRED", "identifier redeclared: %s", d.Name)
		}
		switch {
		case d.Typedef:
			in.typedefs[d.Name] = t
		case d.Inline:
			it, err := in.TypeOf(d.Init, &Env{})
			if err != nil {
				return err
			}
			if it.IsString() != t.IsString() || it.Kind == types.Void {
				return in.errorf(d.Init.Start(), "D_OP_INCOMPAT", "inline %s definition uses incompatible types: \"%s\" = \"%s\"", d.Name, t, it)
			}
			if t.IsString() {
				t = types.StringT(max(it.Size, 1))
			}
			in.inlines[d.Name] = &Inline{Name: d.Name, Type: t, Init: d.Init}
		default:
			if t.Kind == types.Void || t.Kind == types.Struct {
				return in.errorf(d.Pos, "D_DECL_VOIDOBJ", "cannot have void or struct object: %s", d.Name)
			}
			scope := map[string]Scope{"": ScopeGlobal, "self": ScopeThread, "this": ScopeClause}[d.Storage]
			if t.IsString() {
				t = types.StringT(in.Opts.StrSize)
			}
			v := &Var{Name: d.Name, Scope: scope, Type: t, Pos: d.Pos}
			if d.Keys != nil {
				if scope != ScopeGlobal {
					return in.errorf(d.Pos, "D_DECL_ARRSUB", "only global variables may be associative arrays: %s", d.Name)
				}
				v.Keys = []*types.Type{}
				for _, k := range d.Keys {
					kt, err := in.typeName(k)
					if err != nil {
						return err
					}
					if kt.IsString() {
						kt = types.StringT(in.Opts.StrSize)
					}
					v.Keys = append(v.Keys, kt)
				}
			}
			in.addVar(v)
		}
	}
	return nil
}

// defined reports whether a declaration's name is already taken.
func (in *Info) defined(name string) bool {
	_, td := in.typedefs[name]
	_, il := in.inlines[name]
	return td || il || in.globals[name] != nil || isReserved(name)
}

// InlineOf returns the inline constant called name, or nil.
func (in *Info) InlineOf(name string) *Inline { return in.inlines[name] }
