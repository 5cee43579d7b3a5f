package check

import (
	"math"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/ktypes"
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
		if d.Xlator != nil {
			if err := in.translatorDecl(d); err != nil {
				return err
			}
			continue
		}
		if d.Def != nil {
			if err := in.typeDef(d); err != nil {
				return err
			}
			continue
		}
		if d.Func || d.Extern && d.Keys != nil {
			// A function's prototype, or an extern array's: no D
			// variable either.
			continue
		}
		t, err := in.typeName(d.Type)
		if err != nil && d.Extern && !d.Typedef && isTagged(d.Type.Name) {
			// A kernel symbol's type may be one D has only by name, as
			// C's incomplete types.
			continue
		}
		if err != nil {
			if ierr := in.incomplete(d.Type, d.Name); ierr != nil && !d.Typedef {
				return ierr
			}
			return err
		}
		if in.defined(d.Name) {
			if _, td := in.typedefs[d.Name]; d.Typedef && td {
				return in.errorf(d.Pos, "D_DECL_IDRED", "typedef redeclared: %s", d.Name)
			}
			if d.Typedef {
				return in.errorf(d.Pos, "D_DECL_IDRED", "global variable identifier redeclared: %s", d.Name)
			}
			if d.Inline {
				return in.errorf(d.Pos, "D_DECL_IDRED", "identifier redefined: %s\n\t current: inline definition\n\tprevious: %s", d.Name, in.idKind(d.Name))
			}
			return in.errorf(d.Pos, "D_DECL_IDRED", "identifier redeclared: %s", d.Name)
		}
		switch {
		case d.Extern && !d.Typedef && !d.Inline:
			// The type of a kernel symbol, which `name reads; dstar
			// takes a symbol's type from the kernel, so this declares
			// nothing.
		case d.Typedef:
			in.typedefs[d.Name] = t
		case d.Inline && d.Params != nil:
			if err := in.inlineArrayDecl(d, t); err != nil {
				return err
			}
		case d.Inline:
			init, err := in.translateExpr(d.Init)
			if err != nil {
				return err
			}
			d.Init = init
			it, err := in.TypeOf(d.Init, &Env{Decl: true})
			if err != nil {
				return err
			}
			if it.IsString() != t.IsString() || it.Kind == types.Void {
				return in.errorf(d.Init.Start(), "D_OP_INCOMPAT", "inline %s definition uses incompatible types: \"%s\" = \"%s\"", d.Name, t, it)
			}
			if t.IsString() {
				// A literal's size is its own; anything else (probename,
				// a subroutine) may be as long as strsize where it is used.
				size := in.Opts.StrSize
				if _, lit := Unparen(d.Init).(*ast.StrLit); lit {
					size = max(it.Size, 1)
				}
				t = types.StringT(size)
			}
			in.inlines[d.Name] = &Inline{Name: d.Name, Type: t, Init: d.Init}
		default:
			if d.Keys != nil && len(d.Keys) == 0 {
				return in.errorf(d.Pos, "D_DECL_ARRNULL", "array declaration requires array dimension or tuple signature: %s", d.Name)
			}
			if d.Dim != nil {
				if t, err = in.arrayType(d, t); err != nil {
					return err
				}
			}
			scope := map[string]Scope{"": ScopeGlobal, "self": ScopeThread, "this": ScopeClause}[d.Storage]
			if t.Kind == types.Void {
				return in.errorf(d.Pos, "D_DECL_VOIDOBJ", "cannot have void object: %s", d.Name)
			}
			if t.Kind == types.Float && t.Size > 8 {
				return in.errorf(d.Pos, "D_UNKNOWN", "%s: variables of type %s are not supported", d.Name, t)
			}
			if t.Kind == types.Struct {
				if err := in.structVarOK(d.Pos, d.Name, t, scope, d.Keys != nil); err != nil {
					return err
				}
			}
			if t.IsString() {
				t = types.StringT(in.Opts.StrSize)
			}
			v := &Var{Name: d.Name, Scope: scope, Type: t, Pos: d.Pos}
			if d.Keys != nil {
				if scope == ScopeClause {
					return in.errorf(d.Pos, "D_DECL_LOCASSC", "associative arrays may not be declared as local variables: %s", d.Name)
				}
				v.Keys = []*types.Type{}
				for i, k := range d.Keys {
					kt, err := in.typeName(k)
					if err != nil {
						return err
					}
					if kt.Kind == types.Void {
						return in.errorf(d.Pos, "D_DECL_PROTO_TYPE", "array prototype may not use parameter of type void: (anonymous), parameter #%d", i+1)
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

// MaxArraySize bounds the bytes of a fixed-size array: all of them live
// in the one globals value, which the kernel allocates whole.
const MaxArraySize = 1 << 20

// arrayType checks the declaration of a fixed-size array ("int a[5];") of
// elem and returns its type. Only globals may be such arrays.
func (in *Info) arrayType(d *ast.Decl, elem *types.Type) (*types.Type, error) {
	n, ok := in.ConstInt(d.Dim)
	if !ok || n <= 0 {
		return nil, in.errorf(d.Pos, "D_DECL_ARRSUB", "positive integral constant expression or tuple signature expected as array declaration subscript")
	}
	if n > math.MaxInt32 {
		return nil, in.errorf(d.Pos, "D_DECL_ARRBIG", "array dimension too big")
	}
	if d.Storage != "" {
		return nil, in.errorf(d.Pos, "D_UNKNOWN", "%s->%s: only global variables may be fixed-size arrays", d.Storage, d.Name)
	}
	// Structs and unions are reached by address: &a[i], a[i].m.
	if !elem.IsScalar() && (elem.Kind != types.Struct || elem.Size <= 0) {
		return nil, in.errorf(d.Pos, "D_UNKNOWN", "array %s: arrays of %s are not supported", d.Name, elem)
	}
	size := elem.Size
	if elem.Kind == types.Pointer {
		size = 8
	}
	if n*int64(size) > MaxArraySize {
		return nil, in.errorf(d.Pos, "D_DECL_ARRBIG", "array dimension too big")
	}
	name := elem.Name + " "
	if strings.HasSuffix(name, "* ") {
		name = elem.Name
	}
	return &types.Type{Kind: types.Array, Size: int(n) * size, Name: name + "[" + strconv.FormatInt(n, 10) + "]", Elem: elem, Len: int(n)}, nil
}

// ArrayVar returns the global fixed-size array x names, or nil.
func (in *Info) ArrayVar(x ast.Expr) *Var {
	id, ok := Unparen(x).(*ast.Ident)
	if !ok {
		return nil
	}
	if v := in.globals[id.Name]; v != nil && v.Type.Kind == types.Array {
		return v
	}
	return nil
}

// ArrayIndex checks a[i] on a global fixed-size array a: one integer
// index, within the bounds when it is constant. An address (&a[n]) may
// be of the element one past the end, as in C.
func (in *Info) ArrayIndex(e *ast.Index, env *Env, addr bool) (*Var, error) {
	v := in.ArrayVar(e.X)
	if v == nil {
		return nil, nil
	}
	if len(e.Keys) != 1 {
		return nil, in.errorf(e.Pos, "D_ARR_BADREF", "cannot access scalar %s as an associative array", v.Name)
	}
	kt, err := in.TypeOf(e.Keys[0], env)
	if err != nil {
		return nil, err
	}
	if !kt.IsInt() {
		return nil, in.errorf(e.Keys[0].Start(), "D_OP_INT", "index of %s must be an integer", v.Name)
	}
	if i, ok := in.ConstInt(e.Keys[0]); ok {
		limit := int64(v.Type.Len)
		if addr {
			limit++
		}
		if i < 0 || i >= limit {
			return nil, in.errorf(e.Pos, "D_ARR_BOUNDS", "index outside array bounds: %d, max is %d", i, v.Type.Len)
		}
	}
	return v, nil
}

// Decay returns the pointer an array stands for in an expression: to its
// first element.
func Decay(t *types.Type) *types.Type {
	if t.Kind != types.Array {
		return t
	}
	return PointerTo(t.Elem)
}

// PointerTo returns the type of a pointer to t.
func PointerTo(t *types.Type) *types.Type {
	name := t.Name + " *"
	if strings.HasSuffix(t.Name, "*") {
		name = t.Name + "*"
	}
	return &types.Type{Kind: types.Pointer, Size: 8, Name: name, Elem: t}
}

// defined reports whether a declaration's name is already taken.
func (in *Info) defined(name string) bool {
	_, td := in.typedefs[name]
	_, il := in.inlines[name]
	_, ia := in.inlineArrays[name]
	return td || il || ia || in.globals[name] != nil || isReserved(name) && !in.hidden(name)
}

// idKind names what a defined identifier is, as DTrace does when an
// inline would redefine it.
func (in *Info) idKind(name string) string {
	switch {
	case in.inlines[name] != nil:
		return "scalar inline"
	case in.inlineArrays[name] != nil:
		return "associative array inline"
	case in.globals[name] != nil && in.globals[name].Keys != nil:
		return "associative array "
	case aggFuncs[name] != [2]int{}:
		return "aggregating function "
	case AggActions[name] || isActionFunc(name):
		return "tracing function "
	case isAction(name):
		return "function "
	}
	return "scalar "
}

// isActionFunc reports whether name is one of D's actions (DTrace's
// tracing functions) rather than a subroutine.
func isActionFunc(name string) bool {
	switch name {
	case "printf", "trace", "exit", "tracemem", "print", "speculate", "commit", "discard", "setopt",
		"freopen", "ftruncate", "stack", "ustack", "system", "raise", "stop", "chill", "breakpoint", "panic":
		return true
	}
	return false
}

// InlineOf returns the inline constant called name, or nil.
func (in *Info) InlineOf(name string) *Inline { return in.inlines[name] }

// constInlineType is the type of a reference to an inline whose value is
// an integer literal (NULL, an enumerator, "inline long X = 5;"): DTrace
// puts the literal itself in its place, of the literal's type, not the
// declared one (so sizeof (NULL) is 4). nil for any other inline.
func (in *Info) constInlineType(il *Inline) *types.Type {
	lit, ok := Unparen(il.Init).(*ast.IntLit)
	if !ok || !il.Type.IsInt() && il.Type.Kind != types.Pointer || strings.HasPrefix(lit.Text, "-") {
		return nil // (an enumerator's negative value is its enum's)
	}
	return literalType(lit)
}

// InlineType is the type a reference to inline il has.
func (in *Info) InlineType(il *Inline) *types.Type {
	if t := in.constInlineType(il); t != nil {
		return t
	}
	return il.Type
}

// typeDef defines a struct, union or enum the program declares. An enum's
// items become integer constants; its type is int.
func (in *Info) typeDef(d *ast.Decl) error {
	def := d.Def
	full := def.Kind + " " + def.Name
	if _, dup := in.typedefs[full]; dup {
		return in.errorf(d.Pos, "D_DECL_TYPERED", "type redeclared: %s", full)
	}
	if def.Kind == "enum" {
		enum := &btf.Enum{Name: def.Name, Size: 4, Signed: true}
		next := int64(0)
		mine := map[string]bool{}
		for _, item := range def.Items {
			if mine[item.Name] {
				return in.errorf(item.Next, "D_UNKNOWN", "failed to define enumerator '%s': Duplicate member or variable name", item.Name)
			}
			mine[item.Name] = true
			// DTrace checks an enumerator when its parser has read the
			// token after it: the errors are on that token's line.
			if item.Value != nil {
				v, ok := in.ConstInt(item.Value)
				if !ok {
					return in.errorf(item.Next, "D_DECL_ENCONST", "enumerator '%s' must be assigned to an integral constant expression", item.Name)
				}
				next = v
			}
			// An enumerator is an int; DTrace names INT_MAX for a value
			// out of range either way.
			if next > math.MaxInt32 || next < math.MinInt32 {
				return in.errorf(item.Next, "D_DECL_ENOFLOW", "enumerator '%s' value overflows INT_MAX (%d)", item.Name, math.MaxInt32)
			}
			if in.defined(item.Name) {
				return in.errorf(item.Next, "D_DECL_IDRED", "identifier redeclared: %s", item.Name)
			}
			in.inlines[item.Name] = &Inline{Name: item.Name, Type: types.IntT, Init: &ast.IntLit{Pos: item.Pos, Val: uint64(next), Text: strconv.FormatInt(next, 10)}}
			enum.Values = append(enum.Values, btf.EnumValue{Name: item.Name, Value: uint64(next)})
			next++
		}
		// An int, which print( ) shows by its enumerators' names.
		in.typedefs[full] = &types.Type{Kind: types.Int, Size: 4, Signed: true, Name: full, BTF: enum}
		return nil
	}
	if in.defining == nil {
		in.defining = map[string]bool{}
	}
	in.defining[full] = true
	t, err := in.layout(def)
	delete(in.defining, full)
	if err != nil {
		return err
	}
	in.typedefs[full] = t
	return nil
}

// layout lays out a struct or union definition; a member may be an
// anonymous struct or union defined in place.
func (in *Info) layout(def *ast.TypeDef) (*types.Type, error) {
	var fields []ktypes.Field
	seen := map[string]bool{}
	for _, m := range def.Members {
		if m.Name != "" && seen[m.Name] {
			return nil, in.errorf(m.Pos, "D_UNKNOWN", "failed to define member '%s': Duplicate member or variable name", m.Name)
		}
		seen[m.Name] = true
		var t *types.Type
		var err error
		if m.Def != nil && m.Def.Name != "" {
			// A tagged definition in place defines its tag, then is
			// the member's type.
			if err = in.typeDef(&ast.Decl{Pos: m.Def.Pos, Def: m.Def}); err == nil {
				t, err = in.typeName(m.Type)
			}
		} else if m.Def != nil {
			t, err = in.layout(m.Def)
		} else if t, err = in.typeName(m.Type); err != nil {
			if ierr := in.incomplete(m.Type, m.Name); ierr != nil {
				return nil, ierr
			}
		}
		if err != nil {
			return nil, err
		}
		if t.Kind == types.Void && m.Bits == nil {
			return nil, in.errorf(m.Pos, "D_DECL_VOIDOBJ", "cannot have void member: %s", m.Name)
		}
		if t.IsString() && m.Bits == nil {
			// A string member is a char array of strsize.
			t, m.Len = types.CharT, in.Opts.StrSize
		}
		f := ktypes.Field{Name: m.Name, Type: t, Len: m.Len}
		if m.Bits != nil {
			if f.Bits, err = in.bitField(m, t); err != nil {
				return nil, err
			}
		}
		fields = append(fields, f)
	}
	t, err := ktypes.Define(def.Kind, def.Name, fields)
	if err != nil {
		return nil, in.errorf(def.Pos, "D_UNKNOWN", "%s %s: %v", def.Kind, def.Name, err)
	}
	return t, nil
}

// bitField checks the width of bit-field m of type t, as DTrace does: a
// positive constant no wider than t, which must be an integer.
func (in *Info) bitField(m *ast.Member2, t *types.Type) (int, error) {
	n, ok := in.ConstInt(m.Bits)
	if !ok || n <= 0 {
		return 0, in.errorf(m.Pos, "D_DECL_BFCONST", "positive integral constant expression expected as bit-field size")
	}
	name := m.Name
	if name == "" {
		name = "(anon)"
	}
	if _, enum := t.BTF.(*btf.Enum); t.Kind != types.Int || enum || m.Len > 0 {
		return 0, in.errorf(m.Pos, "D_DECL_BFTYPE", "invalid type for bit-field: %s", name)
	}
	if n > int64(t.Size)*8 {
		return 0, in.errorf(m.Pos, "D_DECL_BFSIZE", "bit-field too big for type: %s", name)
	}
	return int(n), nil
}

// isTagged reports whether a type name is a struct, union or enum tag.
func isTagged(name string) bool {
	kind, _, _ := strings.Cut(name, " ")
	return kind == "struct" || kind == "union" || kind == "enum"
}
