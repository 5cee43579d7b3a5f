package check

import (
	"errors"
	"strings"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/ktypes"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/dcompiler/types"
)

// Variables of struct and union type (struct foo x; this struct foo s;
// self struct foo s;) hold the whole value. Their members are read and
// assigned as x.m, this->s.m and self->s.m; x = y copies a whole value
// of the same type.

// MaxStructVar bounds the bytes of a struct-valued thread-local or
// clause-local: those live in map values the kernel allocates whole, a
// clause-local in the per-CPU state beside the scratch memory.
const MaxStructVar = 4096

// structVarOK checks that a variable of struct type t can be had: the
// type complete, not too big.
func (in *Info) structVarOK(pos source.Pos, name string, t *types.Type, scope Scope, assoc bool) error {
	if t.Size <= 0 {
		return in.errorf(pos, "D_DECL_INCOMPLETE", "incomplete struct/union/enum %s: %s", t.Name, name)
	}
	if assoc && t.Size > MaxStructVar {
		return in.errorf(pos, "D_UNKNOWN", "%s: an associative array's %s may have at most %d bytes, not %d", name, t.Name, MaxStructVar, t.Size)
	}
	if scope != ScopeGlobal && t.Size > MaxStructVar {
		return in.errorf(pos, "D_UNKNOWN", "%s: a thread-local or clause-local %s may have at most %d bytes, not %d", name, t.Name, MaxStructVar, t.Size)
	}
	return nil
}

// DeletesStruct reports whether e assigns 0 to a dynamic variable of
// struct type (a thread-local, or an associative array's element): as
// any dynamic variable assigned 0, it is freed.
func (in *Info) DeletesStruct(e *ast.Assign) bool {
	r, ok := RefOf(e.LHS)
	if !ok || e.Op != "=" || r.Scope != ScopeThread && r.Keys == nil || !in.isZero(e.RHS) {
		return false
	}
	v := in.Lookup(r)
	return v != nil && v.Type.Kind == types.Struct
}

// SameStruct reports whether a and b are the same struct or union type,
// which is what struct assignment requires, as in C.
func SameStruct(a, b *types.Type) bool {
	if a.Kind != types.Struct || b.Kind != types.Struct {
		return false
	}
	return a == b || a.BTF != nil && a.BTF == b.BTF || a.BTF == nil && b.BTF == nil && a.Name == b.Name && a.Size == b.Size
}

// StructRoot returns the struct-valued variable an lvalue such as x.m,
// this->s.a.b or self->s.arr[i] is inside: the chain of '.' members
// (and indexes of array members) down to a variable. ok is false when e
// is not inside such a variable.
func (in *Info) StructRoot(e ast.Expr) (VarRef, *Var, bool) {
	switch x := Unparen(e).(type) {
	case *ast.Member:
		if r, isVar := RefOf(x); isVar {
			return in.structVar(r)
		}
		if x.Arrow {
			return VarRef{}, nil, false
		}
		return in.StructRoot(x.X)
	case *ast.Index:
		if r, isVar := RefOf(x); isVar {
			return in.structVar(r) // an element of an associative array
		}
		if m, isMember := x.X.(*ast.Member); isMember && !m.Arrow {
			return in.StructRoot(m)
		}
	case *ast.Ident:
		if r, isVar := RefOf(x); isVar {
			return in.structVar(r)
		}
	}
	return VarRef{}, nil, false
}

// structVar returns r and its variable when it is a struct-valued one.
func (in *Info) structVar(r VarRef) (VarRef, *Var, bool) {
	v := in.Lookup(r)
	if v == nil || (v.Keys == nil) != (r.Keys == nil) || v.Type.Kind != types.Struct {
		return VarRef{}, nil, false
	}
	return r, v, true
}

// structKey refuses a struct value as key #i of an aggregation: its keys
// are kept as integers and strings. (An associative array's key may be a
// struct, compared by its bytes, as DTrace's are.)
func (in *Info) structKey(k ast.Expr, t *types.Type, i int) error {
	return in.errorf(k.Start(), "D_UNKNOWN", "%s expression may not be used as a key yet: key #%d", t, i+1)
}

// incomplete reports a struct, union or enum that is only named, neither
// defined by the program nor the kernel's, used as the type of object
// name: in C a forward declaration, which DTrace calls incomplete.
func (in *Info) incomplete(tn *ast.TypeName, name string) error {
	word, _, _ := strings.Cut(tn.Name, " ")
	if tn.Ptr > 0 || word != "struct" && word != "union" && word != "enum" || in.typedefs[tn.Name] != nil {
		return nil
	}
	if _, err := ktypes.Lookup(tn.Name); !errors.Is(err, ktypes.ErrUnknown) {
		return nil
	}
	// A tag not yet defined is a forward declaration, which DTrace's
	// CTF names as a struct, even a union's.
	fwd := tn.Name
	if word == "union" && !in.defining[tn.Name] {
		// (A union being defined is one already, only incomplete.)
		fwd = "struct" + strings.TrimPrefix(fwd, "union")
	}
	return in.errorf(tn.Pos, "D_DECL_INCOMPLETE", "incomplete struct/union/enum %s: %s", fwd, name)
}
