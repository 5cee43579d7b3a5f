package check

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/ktypes"
	"github.com/dstar-trace/dstar/dcompiler/printf"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/providers"
	"golang.org/x/sys/unix"
)

// TypeOf types e on env's probe, declaring globals and aggregations on
// first assignment, and reports DTrace's errors for what is not allowed.
func (in *Info) TypeOf(e ast.Expr, env *Env) (*types.Type, error) {
	if in.typed == nil || !composite(e) {
		return in.typeOf(e, env)
	}
	// Checked: the code generator asks again for every operator's
	// operands, and each answer would type the whole subtree anew
	// (quadratic in a long expression's terms).
	key := typedKey{e, *env}
	if t, ok := in.typed[key]; ok {
		return t, nil
	}
	t, err := in.typeOf(e, env)
	if err == nil {
		in.typed[key] = t
	}
	return t, err
}

// composite reports whether e is made of other expressions, whose answers
// TypeOf and ConstInt remember; a leaf's are as quick to find again.
func composite(e ast.Expr) bool {
	switch e.(type) {
	case *ast.IntLit, *ast.StrLit, *ast.Ident, *ast.MacroVar, *ast.AggVar, *ast.KSym:
		return false
	}
	return true
}

// typedKey is an expression on a probe, whose type TypeOf remembers once
// the program is checked.
type typedKey struct {
	e   ast.Expr
	env Env
}

func (in *Info) typeOf(e ast.Expr, env *Env) (*types.Type, error) {
	switch e := e.(type) {
	case *ast.IntLit:
		return literalType(e), nil
	case *ast.StrLit:
		// A literal is cut at strsize too, as DTrace cuts every string.
		if n := len(e.Val) + 1; in.Opts.StrSize <= 0 || n <= in.Opts.StrSize {
			return types.StringT(n), nil
		}
		return types.StringT(in.Opts.StrSize), nil
	case *ast.Paren:
		return in.TypeOf(e.X, env)
	case *ast.MacroVar:
		_, s, isStr, err := in.Macro(e)
		if err != nil {
			return nil, err
		}
		if isStr {
			return types.StringT(len(s) + 1), nil
		}
		return types.IntT, nil
	case *ast.Ident:
		return in.identType(e, env)
	case *ast.KSym:
		return in.ksymType(e)
	case *ast.AggVar:
		// An aggregation that was never assigned is an unknown name,
		// as in dtrace; only "@a[...]" brings one into being.
		if in.aggs[e.Name] == nil {
			return nil, in.errorf(e.Pos, "D_IDENT_UNDEF", "failed to resolve @%s: Unknown variable name", e.Name)
		}
		return nil, in.errorf(e.Pos, "D_AGG_SCALAR", "aggregation @%s may only be used as the target of an aggregating function or as an argument to printa( ), clear( ), trunc( ), normalize( ) and denormalize( )", e.Name)
	case *ast.Unary:
		return in.unaryType(e, env)
	case *ast.Postfix:
		return in.incdec(e.Op, e.X, env)
	case *ast.Binary:
		return in.binaryType(e, env)
	case *ast.Cond:
		ct, err := in.TypeOf(e.C, env)
		if err != nil {
			return nil, err
		}
		if !ct.IsScalar() {
			return nil, in.errorf(e.C.Start(), "D_OP_SCALAR", "operator ?: expression must be of scalar type")
		}
		t, err := in.TypeOf(e.T, env)
		if err != nil {
			return nil, err
		}
		f, err := in.TypeOf(e.F, env)
		if err != nil {
			return nil, err
		}
		if t.IsString() != f.IsString() {
			return nil, in.errorf(e.Pos, "D_OP_INCOMPAT", "operator ?: operands must have compatible types")
		}
		if isActionCall(e.T) || isActionCall(e.F) {
			return nil, in.errorf(e.Pos, "D_OP_ACT", "action cannot be used in a conditional context")
		}
		if t.Kind == types.Struct || f.Kind == types.Struct {
			return nil, in.errorf(e.Pos, "D_UNKNOWN", "operator ?: on struct or union values is not supported yet")
		}
		if t.IsString() {
			return types.StringT(max(t.Size, f.Size)), nil
		}
		return types.Arith(t, f), nil
	case *ast.Assign:
		return in.assignType(e, env)
	case *ast.Call:
		return in.callType(e, env)
	case *ast.Index:
		return in.indexType(e, env)
	case *ast.Member:
		return in.memberType(e, env)
	case *ast.Xlate:
		return in.xlateType(e, env)
	case *ast.Cast:
		t, err := in.typeName(e.Type)
		if err != nil {
			return nil, err
		}
		if t.Kind == types.Struct {
			return nil, in.errorf(e.Type.Pos, "D_CAST_INVAL", "invalid cast expression: %s is not a scalar type", t.Name)
		}
		if xl := in.xlateOf(e.X); xl != nil {
			what := "translated data"
			if xl.Type.Ptr > 0 {
				what = "pointer to translated data"
			}
			return nil, in.errorAt(e.Pos, e.Next, "D_CAST_INVAL", "invalid cast expression: \"%s\" to \"%s\"", what, t)
		}
		xt, err := in.TypeOf(e.X, env)
		if err != nil {
			return nil, err
		}
		if xt.Kind == types.Struct || (xt.Kind == types.Float || t.Kind == types.Float) && !sameFloat(xt, t) {
			// A float converts to nothing else: that takes arithmetic
			// BPF has not.
			return nil, in.errorf(e.Pos, "D_CAST_INVAL", "invalid cast expression: \"%s\" to \"%s\"", xt, t)
		}
		return t, nil
	case *ast.SizeofType:
		if t, err := in.typeName(e.Type); err != nil {
			return nil, err
		} else if t.Kind == types.Void {
			return nil, in.errorf(e.Pos, "D_SIZEOF_TYPE", "cannot apply sizeof to an operand of unknown size")
		}
		return types.UlongT, nil
	case *ast.OffsetOf:
		if _, err := in.offsetOf(e); err != nil {
			return nil, err
		}
		return types.UlongT, nil
	}
	return nil, in.errorf(e.Start(), "D_SYNTAX", "unsupported expression")
}

func literalType(e *ast.IntLit) *types.Type {
	switch e.Suffix {
	case "char":
		// A character constant is an int, as in C ('c' has size 4).
		return types.IntT
	case "u":
		if e.Val > 0xffffffff {
			return types.UlongT
		}
		return types.UintT
	case "l", "ll":
		if e.Val > 1<<63-1 {
			return types.UlongT
		}
		return types.LongT
	case "ul", "lu", "ull", "llu":
		return types.UlongT
	}
	// C: the first of int, (unsigned int for octal/hex), long, unsigned long
	// that holds the value.
	hexOrOct := len(e.Text) > 1 && e.Text[0] == '0'
	switch {
	case e.Val <= 0x7fffffff:
		return types.IntT
	case hexOrOct && e.Val <= 0xffffffff:
		return types.UintT
	case e.Val <= 1<<63-1:
		return types.LongT
	}
	return types.UlongT
}

// baseTypeWords reports whether name is only C's integer and void type
// words (float and double are types dstar lacks, not bad combinations).
func baseTypeWords(name string) bool {
	words := strings.Fields(name)
	for _, w := range words {
		switch w {
		case "char", "short", "int", "long", "signed", "unsigned", "void":
		default:
			return false
		}
	}
	return len(words) > 1
}

func (in *Info) typeName(tn *ast.TypeName) (*types.Type, error) {
	if kind, tag, ok := strings.Cut(tn.Name, " "); ok && strings.Contains(tag, "`") {
		if _, ok := in.typedefs[tn.Name]; !ok {
			// A tag scoped to a module: D's (and C's, the
			// preprocessor's) are the program's own types; any other
			// module's are the kernel's, whose BTF holds them all.
			mod, name, _ := strings.Cut(tag, "`")
			scoped := *tn
			scoped.Name = kind + " " + name
			if _, mine := in.typedefs[scoped.Name]; (mod == "D" || mod == "C") && !mine {
				return nil, in.errorf(tn.Pos, "D_TYPE_ERR", "unknown type %s", tn.Name)
			}
			return in.typeName(&scoped)
		}
	}
	t, err := types.Named(tn.Name)
	if td, ok := in.typedefs[tn.Name]; ok {
		t, err = td, nil
	}
	if err != nil && baseTypeWords(tn.Name) {
		// "char int", "long short": C's type words that make no type.
		return nil, in.errorf(tn.Pos, "D_DECL_COMBO", "invalid type combination")
	}
	if err != nil {
		// Not one of D's own: one of the kernel's. DTrace's in6_addr_t
		// is the kernel's struct in6_addr.
		name := tn.Name
		if name == "in6_addr_t" {
			name = "struct in6_addr"
		}
		kt, kerr := ktypes.Lookup(name)
		if kerr != nil {
			return nil, in.errorf(tn.Pos, "D_TYPE_ERR", "%v", kerr)
		}
		t = kt
	}

	if t.Kind == types.String {
		t = types.StringT(in.Opts.StrSize)
	}
	if t.Kind == types.Int && t.Name != tn.Name && t.BTF == nil && err == nil {
		// Spelled as the program spells it ("uint8_t", not "unsigned char"),
		// as DTrace names types in messages and print( ).
		named := *t
		named.Name = tn.Name
		t = &named
	}
	for i := 0; i < tn.Ptr; i++ {
		t = &types.Type{Kind: types.Pointer, Size: 8, Name: t.Name + " *", Elem: t}
	}
	return t, nil
}

func (in *Info) identType(e *ast.Ident, env *Env) (*types.Type, error) {
	if ArgIndex(e.Name) >= 0 {
		return types.Int64T, nil
	}
	if il := in.inlines[e.Name]; il != nil {
		if xl := in.xlateOf(e); xl != nil && !env.Decl {
			return nil, in.errorf(e.Pos, "D_CG_DYN", "a translated %s may only be used with -> or . to read one of its members", spell(xl.Type))
		}
		if t := in.constInlineType(il); t != nil {
			return t, nil
		}
		return il.Type, nil
	}
	if in.inlineArrays[e.Name] != nil {
		return nil, in.errorf(e.Pos, "D_IDENT_BADREF", "%s is an inline array and requires an index", e.Name)
	}
	if e.Name == "curthread" {
		task, err := ktypes.Lookup("struct task_struct")
		if err != nil {
			return nil, in.errorf(e.Pos, "D_IDENT_UNDEF", "curthread: %v", err)
		}
		return &types.Type{Kind: types.Pointer, Size: 8, Name: "struct task_struct *", Elem: task}, nil
	}
	if e.Name == "args" || e.Name == "uregs" {
		// The built-in arrays are only ever indexed.
		return nil, in.errorf(e.Pos, "D_IDENT_BADREF", "array '%s' may not be referenced as scalar", e.Name)
	}
	if e.Name == "curcpu" {
		ci := in.typedefs["cpuinfo_t"]
		if ci == nil {
			return nil, in.errorf(e.Pos, "D_IDENT_UNDEF", "curcpu: cpuinfo_t is not defined (sched.d)")
		}
		return &types.Type{Kind: types.Pointer, Size: 8, Name: "cpuinfo_t *", Elem: ci}, nil
	}
	if t, ok := Builtins[e.Name]; ok {
		if t.Kind == types.String && t.Size < 0 {
			return types.StringT(in.Opts.StrSize), nil
		}
		if t.Kind == types.String && t.Size == 0 {
			// Cut at strsize, as a literal is.
			n := len(ProbeString(e.Name, env.Probe)) + 1
			if in.Opts.StrSize > 0 {
				n = min(n, in.Opts.StrSize)
			}
			return types.StringT(n), nil
		}
		return t, nil
	}
	if v := in.globals[e.Name]; v != nil {
		if in.ordered && in.created != nil && v.Keys == nil && !in.created[e.Name] {
			return nil, in.errorf(e.Pos, "D_IDENT_UNDEF", "failed to resolve %s: Unknown variable name", e.Name)
		}
		if v.Keys != nil {
			return nil, in.errorf(e.Pos, "D_IDENT_BADREF", "associative array '%s' may not be referenced as scalar", e.Name)
		}
		// A char array reads as the string in it, as in DTrace; any
		// other array's name is the address of its first element.
		if v.Type.IsCharArray() {
			return types.StringT(v.Type.Len), nil
		}
		return Decay(v.Type), nil
	}
	if _, ok := aggFuncs[e.Name]; ok || isAction(e.Name) {
		return nil, in.errorf(e.Pos, "D_IDENT_BADREF", "%s( ) may not be referenced as a scalar", e.Name)
	}
	// DTrace: an unknown identifier used before assignment is an error.
	return nil, in.errorf(e.Pos, "D_IDENT_UNDEF", "failed to resolve %s: Unknown variable name", e.Name)
}

// voidActions are the actions that have no value.
var voidActions = map[string]bool{
	"printf": true, "trace": true, "exit": true, "tracemem": true, "print": true,
	"speculate": true, "commit": true, "discard": true, "setopt": true, "freopen": true,
	"ftruncate": true, "system": true, "printa": true, "clear": true, "trunc": true,
	"normalize": true, "denormalize": true,
}

// valueArg types an argument of trace( ) or a printf-like action that is
// no value, as dtrace sees it: an aggregation (which trace( ) refuses as
// dynamic, and a format names), or an action with no value (void, its
// own arguments unchecked). It returns nil for other arguments.
func (in *Info) valueArg(e *ast.Call, a ast.Expr) (*types.Type, error) {
	switch e.Fn {
	case "trace", "printf", "system", "freopen":
	default:
		return nil, nil
	}
	switch a := Unparen(a).(type) {
	case *ast.AggVar:
		if e.Fn == "trace" {
			return nil, in.errorf(a.Pos, "D_TRACE_DYN", "trace( ) may not be applied to a dynamic expression")
		}
		return &types.Type{Kind: types.Void, Name: "aggregation"}, nil
	case *ast.Call:
		if voidActions[a.Fn] {
			return types.VoidT, nil
		}
	}
	return nil, nil
}

// MaxTracemem bounds tracemem( )'s bytes, which its record holds: a
// struct of a few kernel structs fits.
const MaxTracemem = 4096

// isActionCall reports whether e is a call of one of D's actions.
func isActionCall(e ast.Expr) bool {
	call, ok := Unparen(e).(*ast.Call)
	return ok && isActionFunc(call.Fn)
}

func isAction(name string) bool {
	switch name {
	case "printf", "trace", "exit", "copyinstr", "copyin", "tracemem", "print", "stringof", "speculate", "commit", "discard",
		"setopt", "freopen", "ftruncate", "stack", "ustack",
		"sym", "func", "mod", "usym", "ufunc", "umod", "uaddr",
		"system", "raise", "stop", "chill", "copyoutstr", "alloca", "bcopy", "copyinto", "copyout", "strtok", "d_path":
		return true
	}
	_, subr := Subroutines[name]
	return AggActions[name] || subr
}

// knownFunc says whether dtrace knows a function of that name, including
// the ones dstar does not implement: those are not unknown names.
func knownFunc(name string) bool {
	if _, ok := aggFuncs[name]; ok || isAction(name) {
		return true
	}
	switch name {
	case "breakpoint", "panic", "copyout", "jstack", "printm", "printt", "typeref", "getf",
		"link_ntop", "mutex_owned", "mutex_owner", "mutex_type_adaptive", "mutex_type_spin",
		"rw_iswriter", "rw_read_held", "rw_write_held", "msgsize", "msgdsize":
		return true
	}
	return false
}

// AggActions are the actions that take aggregations as arguments.
var AggActions = map[string]bool{
	"printa": true, "clear": true, "trunc": true, "normalize": true, "denormalize": true,
}

// undefinedAgg is the error for an aggregation no clause assigns, in
// DTrace's words: the tag is the function's (denormalize's is
// normalize's).
func (in *Info) undefinedAgg(e *ast.Call, av *ast.AggVar) error {
	fn := strings.ToUpper(strings.TrimPrefix(e.Fn, "de"))
	return in.errorf(av.Pos, "D_"+fn+"_AGGBAD", "undefined aggregation: @%s", av.Name)
}

// aggAction checks printa(), clear(), trunc(), normalize() and
// denormalize(): their aggregations must exist when they are used.
func (in *Info) aggAction(e *ast.Call, env *Env) error {
	if e.Fn == "printa" {
		return in.printa(e, env)
	}
	// DTrace's order: the prototype (clear(@), denormalize(@),
	// normalize(@, uint64_t), trunc(@, [int64_t])), then that the first
	// argument is an aggregation, then that the aggregation exists.
	lo, hi, param := 1, 1, ""
	switch e.Fn {
	case "normalize":
		lo, hi, param = 2, 2, "uint64_t"
	case "trunc":
		lo, hi, param = 1, 2, "int64_t"
	}
	if n := len(e.Args); n < lo || n > hi {
		cmp, want := "", lo
		switch {
		case lo != hi && n < lo:
			cmp = "at least "
		case lo != hi:
			cmp, want = "at most ", hi
		}
		return in.errorf(e.Pos, "D_PROTO_LEN", "%s( ) prototype mismatch: %d arg%s passed, %s%d expected", e.Fn, n, plural(n), cmp, want)
	}
	if len(e.Args) == 2 {
		a := e.Args[1]
		name := "aggregation"
		if _, ok := Unparen(a).(*ast.AggVar); !ok {
			t, err := in.TypeOf(a, env)
			if err != nil {
				return err
			}
			if t.IsInt() {
				name = ""
			} else {
				name = t.String()
			}
		}
		if name != "" {
			return in.errorf(a.Start(), "D_PROTO_ARG", "%s( ) argument #2 is incompatible with prototype:\n\tprototype: %s\n\t argument: %s", e.Fn, param, name)
		}
	}
	tag := "D_" + strings.ToUpper(strings.TrimPrefix(e.Fn, "de"))
	av, ok := Unparen(e.Args[0]).(*ast.AggVar)
	if !ok {
		if c, ok := Unparen(e.Args[0]).(*ast.Call); ok && isAggFunc(c.Fn) {
			return in.errorf(e.Args[0].Start(), tag+"_AGGARG", "%s( ) argument #1 is incompatible with prototype:\n\tprototype: aggregation\n\t argument: aggregating function", e.Fn)
		}
		return in.notAggregation(e, e.Args[0], 1, env)
	}
	if in.aggs[av.Name] == nil {
		return in.undefinedAgg(e, av)
	}
	return nil
}

// printa checks printa( )'s arguments in the order DTrace does: enough
// of them (two with a format string), each one an aggregation that has
// been defined, the format fit for the first, and the keys of each after
// the first matching the first's.
func (in *Info) printa(e *ast.Call, env *Env) error {
	args := e.Args
	if len(args) == 0 {
		return in.errorf(e.Pos, "D_PROTO_LEN", "printa( ) prototype mismatch: 0 args passed, at least 1 expected")
	}
	var format *ast.StrLit
	want := 1
	if lit, ok := Unparen(args[0]).(*ast.StrLit); ok {
		format, want = lit, 2
	}
	if len(args) < want {
		return in.errorf(e.Pos, "D_PRINTA_PROTO", "printa( ) prototype mismatch: %d args passed, %d expected", len(args), want)
	}
	var first *Agg
	for n := want; n <= len(args); n++ {
		a := args[n-1]
		av, ok := Unparen(a).(*ast.AggVar)
		if !ok {
			return in.notAggregation(e, a, n, env)
		}
		agg := in.aggs[av.Name]
		if agg == nil {
			return in.undefinedAgg(e, av)
		}
		if first != nil {
			if err := in.printaKeysMatch(e, first, agg); err != nil {
				return err
			}
			continue
		}
		first = agg
		if format != nil {
			f, err := printf.Parse(format.Val)
			if err == nil {
				// The conversions other than %@ take the keys, in order,
				// as dtrace checks them.
				err = f.CheckWith(printf.CheckOptions{Func: "printa", Aggregation: true,
					AggCount: agg.Func == "count", Target: in.Opts.Target != 0}, argTypesFor(agg.Keys))
			}
			if err != nil {
				tag := "D_UNKNOWN"
				if pe, ok := err.(*printf.Error); ok {
					tag = pe.Tag
				}
				return in.errorf(format.Pos, tag, "%s", err.Error())
			}
		}
	}
	return nil
}

// notAggregation reports argument #n of an aggregation action, a, which is
// not an aggregation, naming its type as DTrace does.
func (in *Info) notAggregation(e *ast.Call, a ast.Expr, n int, env *Env) error {
	t, err := in.TypeOf(a, env)
	if err != nil {
		return err
	}
	return in.errorf(a.Start(), "D_"+strings.ToUpper(e.Fn)+"_AGGARG", "%s( ) argument #%d is incompatible with prototype:\n\tprototype: aggregation\n\t argument: %s", e.Fn, n, t)
}

// printaKeysMatch checks that the aggregations a printa( ) joins have keys
// of the same number and of compatible types, as DTrace requires: each is
// compared with the first.
func (in *Info) printaKeysMatch(e *ast.Call, first, other *Agg) error {
	if len(first.Keys) != len(other.Keys) {
		plural := func(n int) string {
			if n == 1 {
				return ""
			}
			return "s"
		}
		return in.errorf(e.Pos, "D_PRINTA_AGGKEY", "printa( ): @%s and @%s do not have matching key signatures: @%s has %d key%s, @%s has %d key%s",
			first.Name, other.Name, first.Name, len(first.Keys), plural(len(first.Keys)), other.Name, len(other.Keys), plural(len(other.Keys)))
	}
	for i, k := range first.Keys {
		if o := other.Keys[i]; !keyCompatible(k, o) {
			return in.errorf(e.Pos, "D_PRINTA_AGGPROTO", "printa( ): @%s[ ] key #%d is incompatible with @%s:\n%9s key #%d: %s\n%9s key #%d: %s",
				other.Name, i+1, first.Name, first.Name, i+1, k, other.Name, i+1, o)
		}
	}
	return nil
}

// keyCompatible reports whether keys of types a and b can be joined: any
// two integers, any two strings, two stacks or two symbols of the same
// kind, or else the same type.
func keyCompatible(a, b *types.Type) bool {
	switch {
	case a.IsInt() && b.IsInt(), a.IsString() && b.IsString():
		return true
	case a.Kind == types.Stack || a.Kind == types.Sym:
		return a.Kind == b.Kind && a.User == b.User
	}
	return a.Kind == b.Kind && a.Name == b.Name
}

func (in *Info) unaryType(e *ast.Unary, env *Env) (*types.Type, error) {
	switch e.Op {
	case "++", "--":
		return in.incdec(e.Op, e.X, env)
	case "&":
		if _, agg := Unparen(e.X).(*ast.AggVar); agg {
			// An aggregation is a dynamic variable, as DTrace has it.
			return nil, in.errorf(e.Pos, "D_ADDROF_VAR", "cannot take address of dynamic variable")
		}
		// &a[n] may point one past the end, which a[n] may not read.
		if ix, ok := Unparen(e.X).(*ast.Index); ok {
			if v, err := in.ArrayIndex(ix, env, true); err != nil {
				return nil, err
			} else if v != nil {
				return PointerTo(v.Type.Elem), nil
			}
		}
	case "sizeof":
		// A member array need not be readable whole to have a size.
		if m, ok := Unparen(e.X).(*ast.Member); ok {
			if _, mt, err := in.MemberOffset(m, env); err == nil && mt.Kind == types.Array {
				return types.UlongT, nil
			} else if err == nil && mt.Bits > 0 {
				return nil, in.errorf(e.Pos, "D_SIZEOF_BITFIELD", "cannot apply sizeof to a bit-field")
			}
		}
		if _, err := in.TypeOf(e.X, env); err != nil {
			return nil, err
		}
		return types.UlongT, nil
	case "stringof":
		t, err := in.TypeOf(e.X, env)
		if err != nil {
			return nil, err
		}
		if !t.IsScalar() && !t.IsString() && !t.IsCharArray() {
			return nil, in.errorf(e.Pos, "D_STRINGOF_TYPE", "cannot apply stringof to a value of type %s", t)
		}
		if t.IsString() {
			return t, nil
		}
		return types.StringT(in.Opts.StrSize), nil
	}
	// &`name needs no type for `name: the address is known.
	if x, ok := Unparen(e.X).(*ast.KSym); ok && e.Op == "&" {
		return in.ksymAddrType(x)
	}
	t, err := in.TypeOf(e.X, env)
	if err != nil {
		return nil, err
	}
	switch e.Op {
	case "!":
		if !t.IsScalar() {
			return nil, in.errorf(e.Pos, "D_OP_SCALAR", "operator ! requires an operand of scalar type")
		}
		return types.IntT, nil
	case "-", "+", "~":
		if !t.IsInt() {
			if e.Op == "~" {
				return nil, in.errorf(e.Pos, "D_OP_INT", "operator %s requires an operand of integral type", e.Op)
			}
			return nil, in.errorf(e.Pos, "D_OP_ARITH", "operator %s requires an operand of arithmetic type", e.Op)
		}
		// D keeps the operand's type, with no promotion to int.
		return t, nil
	case "&":
		switch x := Unparen(e.X).(type) {
		case *ast.Unary:
			// &*p is p.
			if x.Op == "*" {
				return in.TypeOf(x.X, env)
			}
		case *ast.Ident:
			// An array's name is already an address; DTrace refuses &
			// of any variable.
			if in.ArrayVar(x) != nil {
				return nil, in.errorf(e.Pos, "D_ADDROF_VAR", "cannot take address of dynamic variable")
			}
		case *ast.Index:
			// &p[i] and &x->m[i]: the element's address.
			if et := in.PointerIndex(x, env); et != nil {
				return &types.Type{Kind: types.Pointer, Size: 8, Name: et.Name + " *", Elem: et}, nil
			}
			if _, at, err := in.MemberArray(x, env); err != nil {
				return nil, err
			} else if at != nil {
				return &types.Type{Kind: types.Pointer, Size: 8, Name: at.Elem.Name + " *", Elem: at.Elem}, nil
			}
		}
		if _, isVar := RefOf(e.X); isVar {
			// D's variables live in maps, not at addresses.
			return nil, in.errorf(e.Pos, "D_ADDROF_VAR", "cannot take address of dynamic variable")
		}
		m, ok := Unparen(e.X).(*ast.Member)
		if !ok || isArgsMember(m) {
			return nil, in.errorf(e.Pos, "D_ADDROF_LVAL", "unacceptable operand for unary & operator")
		}
		if _, mt, err := in.MemberOffset(m, env); err == nil && mt.Bits > 0 {
			return nil, in.errorf(e.Pos, "D_ADDROF_BITFIELD", "cannot take address of bit-field")
		}
		if _, mt, err := in.KernelMember(m, env); err != nil {
			return nil, err
		} else if !mt.IsString() {
			return &types.Type{Kind: types.Pointer, Size: 8, Name: mt.Name + " *", Elem: mt}, nil
		}
		return &types.Type{Kind: types.Pointer, Size: 8, Name: "char *", Elem: types.CharT}, nil
	case "*":
		if t.Kind != types.Pointer || t.Elem == nil {
			return nil, in.errorf(e.Pos, "D_DEREF_NONPTR", "cannot dereference non-pointer type")
		}
		if t.Elem.Kind == types.Void {
			return nil, in.errorf(e.Pos, "D_DEREF_VOID", "cannot dereference pointer to void")
		}
		if t.Elem.Kind != types.Int && t.Elem.Kind != types.Pointer && t.Elem.Kind != types.Struct && t.Elem.Kind != types.String {
			return nil, in.errorf(e.Pos, "D_UNKNOWN", "cannot dereference a pointer to %s yet", t.Elem.Name)
		}
		return t.Elem, nil
	}
	return nil, in.errorf(e.Pos, "D_UNKNOWN", "operator %s is not supported here", e.Op)
}

// incdec types ++ and -- of a modifiable integer.
func (in *Info) incdec(op string, x ast.Expr, env *Env) (*types.Type, error) {
	if _, macro := Unparen(x).(*ast.MacroVar); macro {
		// $pid++: a macro variable is a constant, no lvalue.
		return nil, in.errorf(x.Start(), "D_OP_LVAL", "operator %s requires modifiable lvalue as an operand", op)
	}
	in.create(x)
	// A variable ++ or -- brings into being is an int64_t, as in DTrace.
	t, err := in.lvalue(x, types.Int64T, env)
	if err != nil {
		return nil, err
	}
	if !t.IsScalar() {
		return nil, in.errorf(x.Start(), "D_OP_SCALAR", "operator ++ requires operand of scalar type")
	}
	return t, nil
}

// aggOperand rejects an aggregation as an operand of + or - or of a
// comparison as dtrace does: it types the aggregation "aggregation",
// incompatible with anything.
func (in *Info) aggOperand(e *ast.Binary, env *Env) error {
	if e.Op != "+" && e.Op != "-" && !compareOps[e.Op] {
		return nil
	}
	_, xagg := Unparen(e.X).(*ast.AggVar)
	_, yagg := Unparen(e.Y).(*ast.AggVar)
	if !xagg && !yagg {
		return nil
	}
	name := func(x ast.Expr) (string, error) {
		if av, ok := Unparen(x).(*ast.AggVar); ok && in.aggs[av.Name] != nil {
			return "aggregation", nil
		}
		t, err := in.TypeOf(x, env)
		if err != nil {
			return "", err
		}
		return t.String(), nil
	}
	x, err := name(e.X)
	if err != nil {
		return err
	}
	y, err := name(e.Y)
	if err != nil {
		return err
	}
	return in.errorf(e.Pos, "D_OP_INCOMPAT", "operands have incompatible types: \"%s\" %s \"%s\"", x, e.Op, y)
}

var compareOps = map[string]bool{"==": true, "!=": true, "<": true, "<=": true, ">": true, ">=": true}

func (in *Info) binaryType(e *ast.Binary, env *Env) (*types.Type, error) {
	if err := in.aggOperand(e, env); err != nil {
		return nil, err
	}
	x, err := in.TypeOf(e.X, env)
	if err != nil {
		return nil, err
	}
	y, err := in.TypeOf(e.Y, env)
	if err != nil {
		return nil, err
	}
	switch {
	case e.Op == ",":
		return y, nil
	case compareOps[e.Op]:
		if x.Kind == types.Float || y.Kind == types.Float {
			return nil, floatOp(in, e.Pos, e.Op)
		}
		if x.Kind == types.Struct || y.Kind == types.Struct {
			return nil, in.errorAt(e.Pos, e.Next, "D_OP_SCALAR", "operator %s requires operands of scalar type", e.Op)
		}
		if x.IsString() != y.IsString() && !in.StringNullCompare(e) {
			return nil, in.errorAt(e.Pos, e.Next, "D_OP_INCOMPAT", "operands have incompatible types: \"%s\" %s \"%s\"", x, e.Op, y)
		}
		return types.IntT, nil
	case e.Op == "&&" || e.Op == "||" || e.Op == "^^":
		if !x.IsScalar() || !y.IsScalar() {
			return nil, in.errorAt(e.Pos, e.Next, "D_OP_SCALAR", "operator %s requires operands of scalar type", e.Op)
		}
		return types.IntT, nil
	}
	if StringOffset(e, x, y) {
		// s + i: the string from its character i on.
		if x.IsString() {
			return x, nil
		}
		return y, nil
	}
	if !x.IsScalar() || !y.IsScalar() {
		// As DTrace words it: bitwise operators, shifts and % want
		// integers, the others arithmetic types.
		if intOps[e.Op] {
			return nil, in.errorAt(e.Pos, e.Next, "D_OP_INT", "operator %s requires operands of integral type", e.Op)
		}
		return nil, in.errorAt(e.Pos, e.Next, "D_OP_ARITH", "operator %s requires operands of arithmetic type", e.Op)
	}
	if e.Op == "/" || e.Op == "%" {
		// As DTrace folds constants: a constant zero divisor is an error
		// wherever it stands.
		if v, ok := in.ConstInt(e.Y); ok && v == 0 {
			return nil, in.errorAt(e.Pos, e.Next, "D_DIV_ZERO", "expression contains division by zero")
		}
	}
	if e.Op == "<<" || e.Op == ">>" {
		return x, nil // the left operand's type, unpromoted, as in D
	}
	if e.Op == "-" && x.Kind == types.Pointer && y.Kind == types.Pointer {
		return types.Int64T, nil // how many elements apart
	}
	if (e.Op == "+" || e.Op == "-") && (isVoidPtr(x) && !y.IsString() || isVoidPtr(y) && !x.IsString()) {
		// A void * points at nothing of known size, so it takes no steps.
		return nil, in.errorAt(e.Pos, e.Next, "D_OP_INCOMPAT", "operands have incompatible types: \"%s\" %s \"%s\"", x, e.Op, y)
	}
	return types.Arith(x, y), nil
}

// StringOffset reports whether e, of operand types x and y, is a string
// plus or minus an integer, which D types as the string that starts that
// many characters on.
func StringOffset(e *ast.Binary, x, y *types.Type) bool {
	switch e.Op {
	case "+":
		return x.IsString() && y.IsInt() || x.IsInt() && y.IsString()
	case "-":
		return x.IsString() && y.IsInt()
	}
	return false
}

// ptrIntMix reports whether assigning rhs, of type rt, to a pointer or
// integer of type lt mixes a pointer with an integer other than 0.
func (in *Info) ptrIntMix(lt, rt *types.Type, rhs ast.Expr) bool {
	switch {
	case lt.Kind == types.Pointer && rt.IsInt():
		v, ok := in.ConstInt(rhs)
		return !ok || v != 0
	case lt.IsInt() && rt.Kind == types.Pointer:
		return true
	}
	return false
}

// StringNullCompare reports whether e is a string compared for (in)equality
// with NULL (or 0), as DTrace allows for a string a subroutine such as
// strtok returned (see the codegen's nullString).
func (in *Info) StringNullCompare(e *ast.Binary) bool {
	if e.Op != "==" && e.Op != "!=" {
		return false
	}
	isNull := func(x ast.Expr) bool {
		v, ok := in.ConstInt(x)
		return ok && v == 0
	}
	return isNull(e.X) || isNull(e.Y)
}

// intOps are the binary operators of integers only.
var intOps = map[string]bool{"&": true, "|": true, "^": true, "<<": true, ">>": true, "%": true}

// isVoidPtr reports whether t is void *, which pointer arithmetic refuses.
func isVoidPtr(t *types.Type) bool {
	return t.Kind == types.Pointer && (t.Elem == nil || t.Elem.Kind == types.Void)
}

func (in *Info) assignType(e *ast.Assign, env *Env) (*types.Type, error) {
	if err := in.aggMultiDim(e.LHS); err != nil {
		return nil, err
	}
	if agg, ok := AggTarget(e.LHS); ok {
		return in.aggAssign(e, agg, env)
	}
	if r, ok := RefOf(e.LHS); ok && e.Op != "=" && in.Lookup(r) == nil {
		// x op= y reads x first: as in dtrace, x must be declared or
		// assigned before (x++ alone may start a variable).
		if id, isID := Unparen(e.LHS).(*ast.Ident); !isID || !isReserved(id.Name) && in.inlines[id.Name] == nil && ArgIndex(id.Name) < 0 {
			return nil, in.errorf(r.Pos, "D_VAR_UNDEF", "%s has not yet been declared or assigned", r)
		}
	}
	in.create(e.LHS) // before its right side, as DTrace cooks them
	rt, err := in.TypeOf(e.RHS, env)
	if err != nil {
		return nil, err
	}
	lt, err := in.lvalue(e.LHS, rt, env)
	if err != nil {
		return nil, err
	}
	if lt.Kind == types.Array {
		return nil, in.errorf(e.Pos, "D_OP_ARRFUN", "operator %s may not be applied to operand of type \"%s\"", e.Op, lt)
	}
	if r, ok := RefOf(e.LHS); ok && e.Op == "=" && r.Keys == nil {
		// As DTrace's, a variable holds alloca( ) pointers or other
		// values: a ternary giving either is refused.
		if c, ok := Unparen(e.RHS).(*ast.Cond); ok && in.isAlloca(c.T) != in.isAlloca(c.F) {
			return nil, in.errorf(e.Pos, "D_ALLOCA_INCOMPAT", "ternary conditional with alloca and non-alloca branches cannot be assigned to a variable")
		}
		if in.isAlloca(e.RHS) {
			if in.allocaVars == nil {
				in.allocaVars = map[[2]string]bool{}
			}
			in.allocaVars[[2]string{fmt.Sprint(r.Scope), r.Name}] = true
		}
	}
	if e.Op != "=" && (!rt.IsScalar() || !lt.IsScalar()) {
		return nil, in.errorf(e.Pos, "D_OP_INCOMPAT", "operands have incompatible types: \"%s\" %s \"%s\"", lt, e.Op, rt)
	}
	// += and -= on anything but integers need a pointer on the left to
	// a type of known size, as in dtrace.
	if (e.Op == "+=" || e.Op == "-=") && !lt.IsString() && !rt.IsString() && (!lt.IsInt() || !rt.IsInt()) {
		if lt.Kind != types.Pointer || lt.Elem == nil || lt.Elem.Kind == types.Void {
			return nil, in.errorf(e.Pos, "D_OP_VFPTR", "operator %s requires left-hand scalar operand of known size", e.Op)
		}
	}
	// A char * may point at a string, as in dtrace.
	charPtr := lt.Kind == types.Pointer && lt.Elem != nil && lt.Elem.Kind == types.Int && lt.Elem.Size == 1
	if lt.IsString() != rt.IsString() && !(lt.IsString() && e.Op == "=" && in.isZero(e.RHS)) && !(charPtr && e.Op == "=") ||
		(lt.Kind == types.Struct || rt.Kind == types.Struct) && !SameStruct(lt, rt) && !in.DeletesStruct(e) ||
		(lt.Kind == types.Float || rt.Kind == types.Float) && !sameFloat(lt, rt) ||
		e.Op == "=" && in.ptrIntMix(lt, rt, e.RHS) {
		// As dtrace's dt_node_is_ptrcompat, an integer and a pointer
		// mix only as the constant 0 (x = curthread; x = pid is an error).
		return nil, in.errorf(e.Pos, "D_OP_INCOMPAT", "operands have incompatible types: \"%s\" %s \"%s\"", lt, e.Op, rt)
	}
	return lt, nil
}

// SizeOf is what sizeof reports for a value of type t: a string's is
// the strsize option, one less than its buffer, which has room for the
// NUL too (a literal's type is its own length and NUL).
func (in *Info) SizeOf(t *types.Type) int {
	switch {
	case t.Kind == types.Pointer:
		return 8
	case t.Kind == types.String && t.Size == in.Opts.StrSize:
		return t.Size - 1
	}
	return t.Size
}

// TypeNamed resolves a type as written in a cast or sizeof.
func (in *Info) TypeNamed(tn *ast.TypeName) (*types.Type, error) { return in.typeName(tn) }

// lvalue types an assignable expression, declaring its variable with type
// t on first assignment.
func (in *Info) lvalue(x ast.Expr, t *types.Type, env *Env) (*types.Type, error) {
	if id, isID := Unparen(x).(*ast.Ident); isID && in.inlines[id.Name] != nil {
		return nil, in.errorf(id.Pos, "D_OP_WRITE", "operator = can only be applied to a writable variable")
	}
	if ix, isIdx := Unparen(x).(*ast.Index); isIdx {
		if v, err := in.ArrayIndex(ix, env, false); v != nil || err != nil {
			if err != nil {
				return nil, err
			}
			return v.Type.Elem, nil
		}
	}
	r, ok := RefOf(x)
	if ix, isIdx := Unparen(x).(*ast.Index); isIdx && in.PointerIndex(ix, env) != nil {
		ok = false
	}
	if !ok {
		if mt, isMem, err := in.MemoryLvalue(x, env); isMem {
			return mt, err
		}
		if id, isID := Unparen(x).(*ast.Ident); isID {
			if _, builtin := Builtins[id.Name]; builtin || ArgIndex(id.Name) >= 0 {
				return nil, in.errorf(id.Pos, "D_OP_WRITE", "operator = can only be applied to a writable variable")
			}
			if isReserved(id.Name) {
				return nil, in.errorf(id.Pos, "D_IDENT_BADREF", "%s( ) may not be referenced as a scalar", id.Name)
			}
		}
		if err := localArray(x); err != nil {
			return nil, in.errorf(x.Start(), "D_ARR_LOCAL", "%v", err)
		}
		return nil, in.errorf(x.Start(), "D_OP_LVAL", "operator = requires a writable lvalue operand")
	}
	if v := in.Lookup(r); v != nil {
		if err := in.checkKeys(v, r, env); err != nil {
			return nil, err
		}
		return v.Type, nil
	}
	v, err := in.declare(r, t, env)
	if err != nil {
		return nil, err
	}
	return v.Type, nil
}

// AggTarget recognises "@name" and "@name[keys]" on the left of '='.
func AggTarget(x ast.Expr) (*ast.AggVar, bool) {
	switch x := x.(type) {
	case *ast.AggVar:
		return x, true
	case *ast.Index:
		a, ok := x.X.(*ast.AggVar)
		return a, ok
	}
	return nil, false
}

// AggKeys returns the key expressions of an aggregation target.
func AggKeys(x ast.Expr) []ast.Expr {
	if ix, ok := x.(*ast.Index); ok {
		return ix.Keys
	}
	return nil
}

func (in *Info) aggAssign(e *ast.Assign, av *ast.AggVar, env *Env) (*types.Type, error) {
	call, ok := Unparen(e.RHS).(*ast.Call)
	if e.Op != "=" || !ok {
		return nil, in.errorf(e.Pos, "D_AGG_FUNC", "@%s must be assigned the result of an aggregating function", av.Name)
	}
	nargs, ok := aggFuncs[call.Fn]
	if !ok {
		// dtrace resolves the function's name before it asks whether
		// the function aggregates.
		if !knownFunc(call.Fn) {
			return nil, in.errorf(call.Pos, "D_FUNC_UNDEF", "failed to resolve %s: Unknown function name", call.Fn)
		}
		return nil, in.errorf(call.Pos, "D_AGG_FUNC", "@%s must be assigned the result of an aggregating function", av.Name)
	}
	if len(call.Args) < nargs[0] || len(call.Args) > nargs[1] {
		want := strconv.Itoa(nargs[0])
		if len(call.Args) > nargs[1] && nargs[1] > nargs[0] {
			want = fmt.Sprintf("at most %d", nargs[1])
		}
		return nil, in.errorf(call.Pos, "D_PROTO_LEN", "%s( ) prototype mismatch: %d arg%s passed, %s expected", call.Fn, len(call.Args), plural(len(call.Args)), want)
	}
	for i, a := range call.Args {
		t, err := in.TypeOf(a, env)
		if err != nil {
			return nil, err
		}
		if !t.IsScalar() {
			if i == 0 {
				return nil, in.errorf(call.Pos, "D_AGG_SCALAR", "%s( ) argument #1 must be of scalar type", call.Fn)
			}
			return nil, in.errorf(a.Start(), "D_PROTO_ARG", "%s( ) argument #%d is incompatible with prototype:\n\tprototype: uint64_t\n\t argument: %s", call.Fn, i+1, t)
		}
	}
	params, err := in.aggParams(call)
	if err != nil {
		return nil, err
	}
	if err := in.tupleFits(AggKeys(e.LHS), e.Pos); err != nil {
		return nil, err
	}
	var keys []*types.Type
	for i, k := range AggKeys(e.LHS) {
		if kind := in.dynamicKind(k); kind != "" {
			return nil, in.errorf(k.Start(), "D_KEY_TYPE", "%s expression may not be used as aggregation index: key #%d", kind, i+1)
		}
		in.allowStack(k)
		t, err := in.TypeOf(k, env)
		if err != nil {
			return nil, err
		}
		if t.Kind == types.Void {
			return nil, in.errorf(k.Start(), "D_KEY_TYPE", "void expression may not be used as aggregation index: key #%d", i+1)
		}
		if t.Kind == types.Struct || t.Kind == types.Float {
			return nil, in.structKey(k, t, i)
		}
		keys = append(keys, t)
	}
	a := in.aggs[av.Name]
	if a == nil {
		a = &Agg{Name: av.Name, ID: len(in.Aggs), Func: AggFunc(call.Fn), Keys: keys, Pos: av.Pos, Params: params}
		in.aggs[av.Name] = a
		in.Aggs = append(in.Aggs, a)
	} else {
		if string(a.Func) != call.Fn {
			return nil, in.errorf(call.Pos, "D_AGG_REDEF", "@%s: aggregation redefined using a different function", av.Name)
		}
		if err := in.paramsMatch(av, call.Fn, a.Params, params); err != nil {
			return nil, err
		}
		if len(a.Keys) != len(keys) {
			return nil, in.errorf(av.Pos, "D_PROTO_LEN", "@%s: key count mismatch: %d vs %d", av.Name, len(keys), len(a.Keys))
		}
		for i, k := range keys {
			if k.IsString() != a.Keys[i].IsString() || (k.Kind == types.Stack) != (a.Keys[i].Kind == types.Stack) || k.User != a.Keys[i].User || k.Fn != a.Keys[i].Fn {
				return nil, in.errorf(av.Pos, "D_PROTO_ARG", "@%s: key #%d is incompatible: %s vs %s", av.Name, i+1, k, a.Keys[i])
			}
			// An integer key keeps the type its first use gave it, as in
			// DTrace: a wider one is converted to it.
			if k.Size > a.Keys[i].Size && k.Kind != types.Int {
				a.Keys[i] = k
			}
		}
	}
	if !containsCall(a.Calls, call) {
		a.Calls = append(a.Calls, call)
	}
	return types.VoidT, nil
}

// aggMultiDim rejects "@a[i][j]": an aggregation takes one list of keys.
func (in *Info) aggMultiDim(x ast.Expr) error {
	ix, ok := Unparen(x).(*ast.Index)
	if !ok {
		return nil
	}
	if inner, ok := Unparen(ix.X).(*ast.Index); ok {
		if av, ok := AggTarget(inner); ok {
			return in.errorf(av.Pos, "D_AGG_MDIM", "improper attempt to reference @%s as a multi-dimensional array", av.Name)
		}
		return in.aggMultiDim(inner)
	}
	return nil
}

// dynamicKind names what an aggregation or a translated pointer is, as
// dtrace does when one is used where a value of a known type must be.
func (in *Info) dynamicKind(x ast.Expr) string {
	if _, ok := Unparen(x).(*ast.AggVar); ok {
		return "aggregation"
	}
	if id, ok := Unparen(x).(*ast.Ident); ok {
		if xl := in.xlateOf(id); xl != nil {
			if xl.Type != nil && xl.Type.Ptr > 0 {
				return "pointer to translated data"
			}
			return "translated data"
		}
	}
	return ""
}

func containsCall(list []*ast.Call, c *ast.Call) bool {
	for _, x := range list {
		if x == c {
			return true
		}
	}
	return false
}

func (in *Info) callType(e *ast.Call, env *Env) (*types.Type, error) {
	if AggActions[e.Fn] {
		return types.VoidT, in.aggAction(e, env)
	}
	if e.Fn == "printf" && len(e.Args) > 1 {
		// A stack is printf's argument for %k, as in dtrace.
		for _, a := range e.Args[1:] {
			if c, ok := a.(*ast.Call); ok && (c.Fn == "stack" || c.Fn == "ustack") {
				in.allowStack(c)
			}
		}
	}
	argTypes := make([]*types.Type, len(e.Args))
	for i, a := range e.Args {
		if t, err := in.valueArg(e, a); t != nil || err != nil {
			if err != nil {
				return nil, err
			}
			argTypes[i] = t
			continue
		}
		t, err := in.TypeOf(a, env)
		if err != nil {
			return nil, err
		}
		argTypes[i] = t
	}
	protoLen := func(want int) error {
		return in.errorf(e.Pos, "D_PROTO_LEN", "%s( ) prototype mismatch: %d arg%s passed, %d expected", e.Fn, len(e.Args), plural(len(e.Args)), want)
	}
	switch e.Fn {
	case "stack", "ustack":
		return in.stackType(e, argTypes)
	case "sym", "func", "mod", "usym", "ufunc", "umod", "uaddr":
		return in.symType(e, argTypes)
	case "printf":
		if len(e.Args) == 0 {
			return nil, in.errorf(e.Pos, "D_PROTO_LEN", "printf( ) prototype mismatch: 0 args passed, at least 1 expected")
		}
		if err := in.formatIsString(e, argTypes[0]); err != nil {
			return nil, err
		}
		if _, err := in.Format(e, argTypes[1:]); err != nil {
			return nil, err
		}
		return types.VoidT, nil
	case "trace":
		if len(e.Args) != 1 {
			return nil, protoLen(1)
		}
		if argTypes[0].Kind == types.Void {
			return nil, in.errorf(e.Args[0].Start(), "D_TRACE_VOID", "trace( ) may not be applied to a void expression")
		}
		if m, ok := Unparen(e.Args[0]).(*ast.Member); ok {
			// A member array, char arrays too, is traced as its bytes,
			// as dtrace dumps them: tracemem(&m[0], sizeof (m)).
			if _, mt, err := in.MemberOffset(m, env); err == nil && mt.Kind == types.Array && mt.Size > 0 && mt.Size <= 1024 {
				zero := &ast.IntLit{Pos: m.Pos, Text: "0"}
				size := &ast.IntLit{Pos: m.Pos, Val: uint64(mt.Size), Text: strconv.Itoa(mt.Size)}
				e.Fn = "tracemem"
				e.Args = []ast.Expr{&ast.Unary{Pos: m.Pos, Op: "&", X: &ast.Index{Pos: m.Pos, X: m, Keys: []ast.Expr{zero}}}, size}
				return in.TypeOf(e, env)
			}
		}
		return types.VoidT, nil
	case "system":
		in.Destructive = true
		if len(e.Args) == 0 {
			return nil, in.errorf(e.Pos, "D_PROTO_LEN", "system( ) prototype mismatch: 0 args passed, at least 1 expected")
		}
		if err := in.formatIsString(e, argTypes[0]); err != nil {
			return nil, err
		}
		if _, err := in.Format(e, argTypes[1:]); err != nil {
			return nil, err
		}
		return types.VoidT, nil
	case "stop", "panic", "breakpoint":
		in.Destructive = true
		if len(e.Args) != 0 {
			return nil, protoLen(0)
		}
		return types.VoidT, nil
	case "copyoutstr":
		in.Destructive = true
		if len(e.Args) != 3 {
			return nil, protoLen(3)
		}
		if !argTypes[0].IsString() || !argTypes[1].IsScalar() || !argTypes[2].IsInt() {
			return nil, in.errorf(e.Pos, "D_PROTO_ARG", "copyoutstr( ) prototype mismatch: want (string, uintptr_t, size_t)")
		}
		return types.VoidT, nil
	case "raise", "chill", "speculate", "commit", "discard":
		if e.Fn == "raise" || e.Fn == "chill" {
			in.Destructive = true
		}
		if len(e.Args) != 1 {
			return nil, protoLen(1)
		}
		if !argTypes[0].IsInt() {
			return nil, in.errorf(e.Args[0].Start(), "D_PROTO_ARG", "%s( ) argument #1 is incompatible with prototype:\n\tprototype: int\n\t argument: %s", e.Fn, argTypes[0])
		}
		return types.VoidT, nil
	case "exit":
		if len(e.Args) != 1 {
			return nil, protoLen(1)
		}
		if !argTypes[0].IsInt() {
			return nil, in.errorf(e.Args[0].Start(), "D_PROTO_ARG", "exit( ) argument #1 is incompatible with prototype:\n\tprototype: int\n\t argument: %s", argTypes[0])
		}
		return types.VoidT, nil
	case "copyin":
		if len(e.Args) != 2 {
			return nil, protoLen(2)
		}
		if err := in.addrArg(e, 0, argTypes); err != nil {
			return nil, err
		}
		if err := in.scratchSize(e, 1, argTypes); err != nil {
			return nil, err
		}
		return types.VoidPtr, nil
	case "d_path":
		// The kernel's bpf_d_path serves only fentry and LSM programs:
		// dstar walks the dentries and mounts itself (PathCall).
		if len(e.Args) != 1 {
			return nil, protoLen(1)
		}
		if t := argTypes[0]; t.Kind != types.Pointer || t.Elem == nil || t.Elem.Name != "struct path" {
			return nil, in.errorf(e.Args[0].Start(), "D_PROTO_ARG", "d_path( ) argument #1 is incompatible with prototype:\n\tprototype: struct path *\n\t argument: %s", t)
		}
		return types.StringT(in.Opts.StrSize), nil
	case "strtok":
		// strtok(NULL, delim) goes on with the last string.
		if len(e.Args) != 2 {
			return nil, protoLen(2)
		}
		if !in.StringArg(argTypes[0], e.Args[0]) {
			return nil, in.errorf(e.Args[0].Start(), "D_PROTO_ARG", "strtok( ) argument #1 is incompatible with prototype:\n\tprototype: char *\n\t argument: %s", argTypes[0])
		}
		if !in.StringArg(argTypes[1], e.Args[1]) {
			return nil, in.errorf(e.Args[1].Start(), "D_PROTO_ARG", "strtok( ) argument #2 is incompatible with prototype:\n\tprototype: char *\n\t argument: %s", argTypes[1])
		}
		return types.StringT(in.Opts.StrSize), nil
	case "alloca":
		if len(e.Args) != 1 {
			return nil, protoLen(1)
		}
		if err := in.scratchSize(e, 0, argTypes); err != nil {
			return nil, err
		}
		return types.VoidPtr, nil
	case "bcopy", "copyinto", "copyout":
		// bcopy(src, dest, size), copyinto(addr, size, dest) and
		// copyout(buf, addr, size). A size that is not right is a
		// fault when they run, as in DTrace.
		if e.Fn == "copyout" {
			in.Destructive = true
		}
		if len(e.Args) != 3 {
			return nil, protoLen(3)
		}
		protos := map[string][3]string{
			"bcopy":    {"void *", "void *", "size_t"},
			"copyinto": {"uintptr_t", "size_t", "void *"},
			"copyout":  {"void *", "uintptr_t", "size_t"},
		}[e.Fn]
		for i, t := range argTypes {
			ok := t.IsScalar() || t.IsString() && i == 0 // a source
			switch protos[i] {
			case "size_t":
				ok = t.IsInt()
			case "uintptr_t":
				ok = t.IsScalar() && !t.IsString()
			}
			if e.Fn == "copyinto" && i == 2 {
				ok = t.Kind == types.Pointer // the destination
			}
			if !ok {
				return nil, in.errorf(e.Args[i].Start(), "D_PROTO_ARG", "%s( ) argument #%d is incompatible with prototype:\n\tprototype: %s\n\t argument: %s", e.Fn, i+1, protos[i], t)
			}
		}
		if dest := map[string]int{"bcopy": 1, "copyinto": 2}[e.Fn]; dest > 0 && !mayBeAlloca(e.Args[dest]) {
			return nil, in.errorf(e.Args[dest].Start(), "D_PROTO_ARG", "%s( ) argument #%d is incompatible with prototype:\n\tprototype: alloca pointer\n\t argument: non-alloca pointer", e.Fn, dest+1)
		}
		return types.VoidT, nil
	case "freopen":
		// freopen(format, ...): the file's name is formatted as printf
		// does; "" restores the first output, so "." may not be given.
		in.Destructive = true
		if len(e.Args) == 0 {
			return nil, in.errorf(e.Pos, "D_PROTO_LEN", "freopen( ) prototype mismatch: 0 args passed, at least 1 expected")
		}
		if err := in.formatIsString(e, argTypes[0]); err != nil {
			return nil, err
		}
		if lit := Unparen(e.Args[0]).(*ast.StrLit); lit.Val == "." {
			return nil, in.errorf(e.Pos, "D_FREOPEN_INVALID", "freopen( ) argument #1 cannot be \".\"")
		}
		if _, err := in.Format(e, argTypes[1:]); err != nil {
			return nil, err
		}
		return types.VoidT, nil
	case "setopt", "ftruncate":
		want := map[string][2]int{"setopt": {1, 2}, "ftruncate": {0, 0}}[e.Fn]
		if err := in.argCount(e, want[0], want[1]); err != nil {
			return nil, err
		}
		for i, t := range argTypes {
			if !t.IsString() {
				return nil, in.errorf(e.Args[i].Start(), "D_PROTO_ARG", "%s( ) argument #%d is incompatible with prototype:\n\tprototype: char *\n\t argument: %s", e.Fn, i+1, t)
			}
		}
		return types.VoidT, nil
	case "print":
		if len(e.Args) != 1 {
			return nil, protoLen(1)
		}
		if argTypes[0].Kind != types.Pointer {
			return nil, in.errorf(e.Args[0].Start(), "D_PROTO_ARG", "print( ) argument #1 is incompatible with prototype:\n\tprototype: void *\n\t argument: %s", argTypes[0])
		}
		if el := argTypes[0].Elem; el == nil || el.Size <= 0 || el.Kind == types.Void {
			name := "void"
			if el != nil {
				name = el.Name
			}
			return nil, in.errorf(e.Args[0].Start(), "D_PRINT_SIZE", "print( ) argument #1 reference has type '%s' with size 0; cannot print( ) it.", name)
		}
		return types.VoidT, nil
	case "tracemem":
		// tracemem(addr, size[, n]): n, when given, is how many of the
		// size bytes to print.
		if len(e.Args) > 3 {
			return nil, in.errorf(e.Pos, "D_PROTO_LEN", "tracemem( ) prototype mismatch: %d args passed, at most 3 expected", len(e.Args))
		}
		if err := in.argCount(e, 2, 3); err != nil {
			return nil, err
		}
		if !argTypes[1].IsInt() {
			return nil, in.errorf(e.Args[1].Start(), "D_PROTO_ARG", "tracemem( ) argument #2 is incompatible with prototype:\n\tprototype: size_t\n\t argument: %s", argTypes[1])
		}
		if len(e.Args) == 3 && !argTypes[2].IsInt() {
			return nil, in.errorf(e.Args[2].Start(), "D_PROTO_ARG", "tracemem( ) argument #3 is incompatible with prototype:\n\tprototype: int\n\t argument: %s", argTypes[2])
		}
		// An array or a string in memory (curthread->comm) is its
		// address, as DTrace takes an array for a pointer.
		if k := argTypes[0].Kind; !argTypes[0].IsScalar() && k != types.Array && k != types.String {
			return nil, in.errorf(e.Args[0].Start(), "D_TRACEMEM_ADDR", "tracemem( ) argument #1 is incompatible with prototype:\n\tprototype: pointer or integer\n\t argument: %s", argTypes[0])
		}
		if n, ok := in.ConstInt(e.Args[1]); !ok || n <= 0 {
			return nil, in.errorf(e.Args[1].Start(), "D_TRACEMEM_SIZE", "tracemem( ) argument #2 must be a non-zero positive integral constant expression")
		} else if n > MaxTracemem {
			// dstar's limit: the record holds the bytes.
			return nil, in.errorf(e.Args[1].Start(), "D_TRACEMEM_SIZE", "tracemem( ) argument #2 must be at most %d", MaxTracemem)
		}
		return types.VoidT, nil
	case PathFn:
		if len(e.Args) != 2 {
			return nil, protoLen(2)
		}
		for i, t := range argTypes {
			if !t.IsScalar() {
				return nil, in.errorf(e.Args[i].Start(), "D_PROTO_ARG", "%s( ) argument #%d is incompatible with prototype:\n\tprototype: uintptr_t\n\t argument: %s", e.Fn, i+1, t)
			}
		}
		return types.StringT(in.Opts.StrSize), nil
	case ArgsFn:
		if len(e.Args) != 2 {
			return nil, protoLen(2)
		}
		for i, t := range argTypes {
			if !t.IsScalar() {
				return nil, in.errorf(e.Args[i].Start(), "D_PROTO_ARG", "%s( ) argument #%d is incompatible with prototype:\n\tprototype: uintptr_t\n\t argument: %s", e.Fn, i+1, t)
			}
		}
		return types.StringT(PRArgSz), nil
	case "copyinstr":
		if err := in.argCount(e, 1, 2); err != nil {
			return nil, err
		}
		for i, t := range argTypes {
			if !t.IsScalar() {
				return nil, in.errorf(e.Args[i].Start(), "D_PROTO_ARG", "copyinstr( ) argument #%d is incompatible with prototype:\n\tprototype: uintptr_t\n\t argument: %s", i+1, t)
			}
		}
		return types.StringT(in.Opts.StrSize), nil
	}
	if sr, ok := Subroutines[e.Fn]; ok {
		return in.subrType(e, sr, argTypes)
	}
	if _, ok := aggFuncs[e.Fn]; ok {
		return nil, in.errorf(e.Pos, "D_CG_EXPR", "aggregating function %s( ) may not be called from a D expression (D program context required)", e.Fn)
	}
	return nil, in.errorf(e.Pos, "D_FUNC_UNDEF", "failed to resolve %s: Unknown function name", e.Fn)
}

// formatIsString rejects a format that is not a string literal, naming
// the type it has instead, as dtrace does.
func (in *Info) formatIsString(e *ast.Call, t *types.Type) error {
	if _, ok := Unparen(e.Args[0]).(*ast.StrLit); ok {
		return nil
	}
	if !t.IsString() {
		return in.errorf(e.Args[0].Start(), "D_PROTO_ARG", "%s( ) argument #1 is incompatible with prototype:\n\tprototype: string\n\t argument: %s", e.Fn, t)
	}
	return in.errorf(e.Args[0].Start(), "D_PRINTF_ARG_FMT", "%s( ) argument #1 is incompatible with prototype:\n\tprototype: string constant\n\t argument: %s", e.Fn, t)
}

func isAggFunc(name string) bool {
	_, ok := aggFuncs[name]
	return ok
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (in *Info) indexType(e *ast.Index, env *Env) (*types.Type, error) {
	if v, err := in.ArrayIndex(e, env, false); v != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return v.Type.Elem, nil
	}
	if et := in.PointerIndex(e, env); et != nil {
		if len(e.Keys) != 1 {
			return nil, in.errorf(e.Pos, "D_PROTO_LEN", "a pointer takes one index")
		}
		kt, err := in.TypeOf(e.Keys[0], env)
		if err != nil {
			return nil, err
		}
		if !kt.IsInt() {
			return nil, in.errorf(e.Keys[0].Start(), "D_OP_INT", "index of a pointer must be an integer")
		}
		return et, nil
	}
	if r, ok := RefOf(e); ok {
		if in.StringIndex(e, env) {
			return in.stringIndexType(e, env)
		}
		return in.refType(r, env)
	}
	if id, ok := e.X.(*ast.Ident); ok && id.Name == "args" {
		return in.argsIndex(e, env)
	}
	if id, ok := e.X.(*ast.Ident); ok && id.Name == "uregs" {
		return in.uregsIndex(e, env)
	}
	if f, elem := in.ArrayField(e, env); f != nil {
		if len(e.Keys) != 1 {
			return nil, in.errorf(e.Pos, "D_PROTO_LEN", "args->%s takes one index", f.Name)
		}
		t, err := in.TypeOf(e.Keys[0], env)
		if err != nil {
			return nil, err
		}
		if !t.IsInt() {
			return nil, in.errorf(e.Keys[0].Start(), "D_OP_INT", "index of args->%s must be an integer", f.Name)
		}
		if i, ok := in.ConstInt(e.Keys[0]); ok && (i < 0 || int(i) >= f.Len) {
			return nil, in.errorf(e.Keys[0].Start(), "D_ARGS_IDX", "index %d is out of range for args->%s[%d]", i, f.Name, f.Len)
		}
		return elem, nil
	}
	if a, ok := e.X.(*ast.AggVar); ok {
		return nil, in.errorf(a.Pos, "D_AGG_SCALAR", "aggregation @%s may only be used as the target of an aggregating function", a.Name)
	}
	if _, at, err := in.MemberArray(e, env); at != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return at.Elem, nil
	}
	if in.StringIndex(e, env) {
		return in.stringIndexType(e, env)
	}
	if err := localArray(e); err != nil {
		return nil, in.errorf(e.Pos, "D_ARR_LOCAL", "%v", err)
	}
	return nil, in.errorf(e.Pos, "D_UNKNOWN", "associative arrays are not yet supported")
}

// StringIndex reports whether e indexes a string: DTrace reads E1[E2],
// where E1 is not an array, as *(E1 + E2), and a string is an array of
// char, so s[i] is its character i. It is asked where e is neither an
// array, a pointer, nor one of the built-in arrays.
func (in *Info) StringIndex(e *ast.Index, env *Env) bool {
	if len(e.Keys) != 1 {
		return false
	}
	if r, ok := RefOf(e.X); ok {
		// x[i], or a[k][i] where a's elements are strings.
		v := in.Lookup(r)
		return v != nil && (v.Keys == nil) == (r.Keys == nil) && v.Type.IsString()
	}
	if _, ok := Unparen(e.X).(*ast.AggVar); ok {
		return false
	}
	t, err := in.TypeOf(e.X, env)
	return err == nil && t.IsString()
}

// stringIndexType types s[i]: a char, for an integer i.
func (in *Info) stringIndexType(e *ast.Index, env *Env) (*types.Type, error) {
	if _, err := in.TypeOf(e.X, env); err != nil {
		return nil, err
	}
	kt, err := in.TypeOf(e.Keys[0], env)
	if err != nil {
		return nil, err
	}
	if !kt.IsInt() {
		return nil, in.errorf(e.Keys[0].Start(), "D_OP_INT", "index of a string must be an integer")
	}
	return types.CharT, nil
}

// localArray refuses this->x[k], as DTrace does: a clause-local is never
// an associative array.
func localArray(x ast.Expr) error {
	ix, ok := Unparen(x).(*ast.Index)
	if !ok {
		return nil
	}
	if m, ok := ix.X.(*ast.Member); ok && m.Arrow {
		if id, ok := m.X.(*ast.Ident); ok && id.Name == "this" {
			return fmt.Errorf("local variables may not be used as associative arrays: %s", m.Name)
		}
	}
	return nil
}

// ArgField returns the tracepoint field named name of probe p.
func ArgField(p *providers.Probe, name string) *providers.Arg {
	if p == nil {
		return nil
	}
	for i := range p.Args {
		if p.Args[i].Name == name {
			return &p.Args[i]
		}
	}
	return nil
}

// FieldType is the D type of a tracepoint field.
func FieldType(a *providers.Arg) *types.Type {
	switch a.Kind {
	case providers.ArgArray, providers.ArgDataLoc:
		if isCharType(a.Type) {
			size := a.Size + 1
			if a.Kind == providers.ArgDataLoc {
				size = 0 // the compiler's strsize
			}
			return types.StringT(size)
		}
		return types.Uint64T
	case providers.ArgPointer:
		return &types.Type{Kind: types.Pointer, Size: 8, Name: a.Type, Elem: types.VoidT}
	}
	return types.FromC(a.Type, a.Size, a.Signed)
}

func isCharType(t string) bool {
	return len(t) >= 4 && (t[:4] == "char" || len(t) >= 10 && t[:10] == "const char" || len(t) >= 13 && t[:13] == "unsigned char")
}

func (in *Info) memberType(e *ast.Member, env *Env) (*types.Type, error) {
	if c, ok := Unparen(e.X).(*ast.Cast); ok && e.Arrow && c.Type.Ptr == 1 {
		// A pointer to a struct only named, as C's forward declaration.
		if _, err := in.typeName(c.Type); err != nil && in.incomplete(&ast.TypeName{Pos: c.Type.Pos, Name: c.Type.Name}, "") != nil {
			return nil, in.errorf(e.Pos, "D_OP_INCOMPLETE", "operator -> cannot be applied to a forward declaration: no %s definition is available", c.Type.Name)
		}
	}
	if r, ok := RefOf(e); ok {
		return in.refType(r, env)
	}
	if id, ok := e.X.(*ast.Ident); !ok || id.Name != "args" {
		_, t, err := in.KernelMember(e, env)
		return t, err
	}
	id, ok := e.X.(*ast.Ident)
	if !ok || id.Name != "args" || !e.Arrow {
		return nil, in.errorf(e.Pos, "D_UNKNOWN", "member access is not yet supported here")
	}
	if env.Probe == nil {
		return types.Int64T, nil
	}
	f := ArgField(env.Probe, e.Name)
	if f == nil {
		return nil, in.errorf(e.Pos, "D_TYPE_MEMBER", "args-> has no member named %s on probe %s", e.Name, env.Probe)
	}
	t := FieldType(f)
	if t.Kind == types.String && t.Size == 0 {
		t = types.StringT(in.Opts.StrSize)
	}
	return t, nil
}

func selfPid() int  { return os.Getpid() }
func selfPpid() int { return os.Getppid() }
func selfUid() int  { return os.Getuid() }
func selfGid() int  { return os.Getgid() }
func selfEuid() int { return os.Geteuid() }
func selfEgid() int { return os.Getegid() }
func selfPgid() int {
	g, err := unix.Getpgid(0)
	if err != nil {
		return 0
	}
	return g
}

// selfSid is 0 when the session's leader is outside dstar's pid namespace,
// or when the session is the kernel's own (a process that init started
// without setsid): getsid(2) says the same, and so does curpsinfo->pr_sid.
func selfSid() int {
	s, err := unix.Getsid(0)
	if err != nil {
		return 0
	}
	return s
}

// aggParams checks and returns the constant parameters of lquantize and
// llquantize, with DTrace's rules and messages (which number the
// parameters from the one after the value).
func (in *Info) aggParams(call *ast.Call) ([]int64, error) {
	param := func(n int, tag string) (int64, error) {
		if n >= len(call.Args) {
			return 0, nil
		}
		v, ok := in.ConstInt(call.Args[n])
		if !ok {
			return 0, in.errorf(call.Args[n].Start(), tag, "%s( ) argument #%d must be an integer constant", call.Fn, n)
		}
		return v, nil
	}
	switch call.Fn {
	case "lquantize":
		base, err := param(1, "D_LQUANT_BASETYPE")
		if err != nil {
			return nil, err
		}
		if base < math.MinInt32 || base > math.MaxInt32 {
			return nil, in.errorf(call.Args[1].Start(), "D_LQUANT_BASEVAL", "lquantize( ) argument #1 must be a 32-bit quantity")
		}
		limit, err := param(2, "D_LQUANT_LIMTYPE")
		if err != nil {
			return nil, err
		}
		if limit < math.MinInt32 || limit > math.MaxInt32 {
			return nil, in.errorf(call.Args[2].Start(), "D_LQUANT_LIMVAL", "lquantize( ) argument #2 must be a 32-bit quantity")
		}
		if limit <= base {
			return nil, in.errorf(call.Pos, "D_LQUANT_MISMATCH", "lquantize( ) base (argument #1) must be less than limit (argument #2)")
		}
		step := int64(1)
		if len(call.Args) > 3 {
			v, ok := in.ConstInt(call.Args[3])
			if !ok || v <= 0 {
				return nil, in.errorf(call.Args[3].Start(), "D_LQUANT_STEPTYPE", "lquantize( ) argument #3 must be a non-zero positive integer constant")
			}
			if v > math.MaxUint16 {
				return nil, in.errorf(call.Args[3].Start(), "D_LQUANT_STEPVAL", "lquantize( ) argument #3 must be a 16-bit quantity")
			}
			step = v
		}
		levels := (limit - base) / step
		if levels == 0 {
			return nil, in.errorf(call.Pos, "D_LQUANT_STEPLARGE", "lquantize( ) step (argument #3) too large: must have at least one quantization level")
		}
		if levels > math.MaxUint16 {
			return nil, in.errorf(call.Pos, "D_LQUANT_STEPSMALL", "lquantize( ) step (argument #3) too small: number of quantization levels must be a 16-bit quantity")
		}
		return []int64{base, limit, step}, nil
	case "llquantize":
		factor, err := param(1, "D_LLQUANT_FACTORTYPE")
		if err != nil {
			return nil, err
		}
		if factor > math.MaxUint16 || factor < 2 {
			return nil, in.errorf(call.Args[1].Start(), "D_LLQUANT_FACTORVAL", "llquantize( ) argument #1 must be an unsigned 16-bit quantity greater than or equal to 2")
		}
		low, err := param(2, "D_LLQUANT_LMAGTYPE")
		if err != nil {
			return nil, err
		}
		if low < 0 || low > math.MaxUint16 {
			return nil, in.errorf(call.Args[2].Start(), "D_LLQUANT_LMAGVAL", "llquantize( ) argument #2 must be an unsigned 16-bit quantity")
		}
		high, err := param(3, "D_LLQUANT_HMAGTYPE")
		if err != nil {
			return nil, err
		}
		switch {
		case high < 0 || high > math.MaxUint16:
			return nil, in.errorf(call.Args[3].Start(), "D_LLQUANT_HMAGVAL", "llquantize( ) argument #3 must be an unsigned 16-bit quantity")
		case high < low:
			return nil, in.errorf(call.Args[3].Start(), "D_LLQUANT_HMAGVAL", "llquantize( ) argument #3 (high magnitude) must be at least argument #2 (low magnitude)")
		case powOverflows(factor, high+1):
			return nil, in.errorf(call.Args[3].Start(), "D_LLQUANT_HMAGVAL", "llquantize( ) argument #3 (high magnitude) will cause overflow of 64 bits")
		}
		steps, err := param(4, "D_LLQUANT_STEPTYPE")
		if err != nil {
			return nil, err
		}
		if steps <= 0 && len(call.Args) > 4 {
			return nil, in.errorf(call.Args[4].Start(), "D_LLQUANT_STEPTYPE", "llquantize( ) argument #4 must be a non-zero positive integer constant")
		}
		if steps <= 0 || steps > math.MaxUint16 {
			return nil, in.errorf(call.Args[4].Start(), "D_LLQUANT_STEPVAL", "llquantize( ) argument #4 must be an unsigned 16-bit quantity")
		}
		if steps < factor && factor%steps != 0 {
			return nil, in.errorf(call.Args[1].Start(), "D_LLQUANT_STEPVAL", "llquantize() argument #4 (steps) must evenly divide argument #1 (factor) when steps<factor")
		}
		if steps > factor {
			if steps%factor != 0 {
				return nil, in.errorf(call.Args[1].Start(), "D_LLQUANT_STEPVAL", "llquantize() argument #4 (steps) must be a multiple of argument #1 (factor) when steps>factor")
			}
			if low == 0 && (factor*factor)%steps != 0 {
				return nil, in.errorf(call.Args[1].Start(), "D_LLQUANT_STEPVAL", "llquantize() argument #4 (steps) must evenly divide the square of argument #1 (factor) when steps>factor and lmag==0")
			}
			// With lmag > 0 the first magnitude's steps span
			// factor^(lmag+1); dtrace's message says lmag==0 here too.
			if low > 0 && !powOverflows(factor, low+1) && ipow(factor, low+1)%steps != 0 {
				return nil, in.errorf(call.Args[1].Start(), "D_LLQUANT_STEPVAL", "llquantize() argument #4 (steps) must evenly divide pow(argument #1 (factor), lmag (argument #2) + 1) when steps>factor and lmag>0")
			}
		}
		return []int64{factor, low, high, steps}, nil
	}
	return nil, nil
}

// paramsMatch reports the first of an lquantize's or llquantize's
// parameters that differs from the aggregation's earlier use, as dtrace
// does. lquantize's limit is compared as base plus its whole steps.
func (in *Info) paramsMatch(av *ast.AggVar, fn string, old, cur []int64) error {
	if fmt.Sprint(old) == fmt.Sprint(cur) {
		return nil
	}
	mismatch := func(tag, what string, n int, want, got int64) error {
		return in.errorf(av.Pos, tag, "%s( ) %s (argument #%d) doesn't match previous declaration: expected %d, found %d", fn, what, n, want, got)
	}
	switch fn {
	case "lquantize":
		span := func(p []int64) int64 { return (p[1] - p[0]) / p[2] * p[2] }
		switch {
		case old[0] != cur[0]:
			return mismatch("D_LQUANT_MATCHBASE", "base", 1, old[0], cur[0])
		case span(old) != span(cur):
			return mismatch("D_LQUANT_MATCHLIM", "limit", 2, old[0]+span(old), cur[0]+span(cur))
		case old[2] != cur[2]:
			return mismatch("D_LQUANT_MATCHSTEP", "step", 3, old[2], cur[2])
		}
		return nil
	case "llquantize":
		tags := []string{"D_LLQUANT_MATCHFACTOR", "D_LLQUANT_MATCHLMAG", "D_LLQUANT_MATCHHMAG", "D_LLQUANT_MATCHSTEPS"}
		names := []string{"factor", "lmag", "hmag", "steps"}
		for i := range old {
			if old[i] != cur[i] {
				return mismatch(tags[i], names[i], i+1, old[i], cur[i])
			}
		}
		return nil
	}
	return in.errorf(av.Pos, "D_AGG_REDEF", "@%s: %s( ) parameters differ from an earlier use", av.Name, fn)
}

func ipow(f, n int64) int64 {
	v := int64(1)
	for i := int64(0); i < n; i++ {
		v *= f
	}
	return v
}

func powOverflows(f, n int64) bool {
	v := uint64(1)
	for i := int64(0); i < n; i++ {
		if v > (1<<63)/uint64(f) {
			return true
		}
		v *= uint64(f)
	}
	return false
}

// ConstInt evaluates an integer constant expression: literals, macro
// arguments, and unary and binary arithmetic on them.
func (in *Info) ConstInt(e ast.Expr) (int64, bool) {
	if in.consts == nil || !composite(e) {
		return in.constInt(e)
	}
	// Checked: remembered, as TypeOf's types, for the code generator
	// folds at every operator.
	if c, ok := in.consts[e]; ok {
		return c.v, c.ok
	}
	v, ok := in.constInt(e)
	in.consts[e] = constVal{v, ok}
	return v, ok
}

// constVal is ConstInt's answer.
type constVal struct {
	v  int64
	ok bool
}

func (in *Info) constInt(e ast.Expr) (int64, bool) {
	switch e := e.(type) {
	case *ast.IntLit:
		return int64(e.Val), true
	case *ast.Paren:
		return in.ConstInt(e.X)
	case *ast.MacroVar:
		v, _, isStr, err := in.Macro(e)
		return v, err == nil && !isStr
	case *ast.Ident:
		if il := in.inlines[e.Name]; il != nil && (il.Type.IsInt() || il.Type.Kind == types.Pointer) {
			return in.ConstInt(il.Init)
		}
	case *ast.OffsetOf:
		off, err := in.offsetOf(e)
		return int64(off), err == nil
	case *ast.SizeofType:
		if t, err := in.typeName(e.Type); err == nil {
			return int64(in.SizeOf(t)), true
		}
	case *ast.Unary:
		if v := in.ArrayVar(e.X); v != nil && e.Op == "sizeof" {
			return int64(v.Type.Size), true
		}
		x, ok := in.ConstInt(e.X)
		switch e.Op {
		case "-":
			return -x, ok
		case "+":
			return x, ok
		case "~":
			return ^x, ok
		}
	case *ast.Binary:
		x, ok1 := in.ConstInt(e.X)
		y, ok2 := in.ConstInt(e.Y)
		if !ok1 || !ok2 {
			return 0, false
		}
		switch e.Op {
		case "+":
			return x + y, true
		case "-":
			return x - y, true
		case "*":
			return x * y, true
		case "/":
			if y != 0 {
				return x / y, true
			}
		case "<<":
			return x << uint(y), true
		}
	}
	return 0, false
}

// ArrayField recognises args->field[i] on a tracepoint field that is an
// inline array of integers, and returns the field and its element type.
func (in *Info) ArrayField(e *ast.Index, env *Env) (*providers.Arg, *types.Type) {
	m, ok := e.X.(*ast.Member)
	if !ok || !m.Arrow {
		return nil, nil
	}
	if id, ok := m.X.(*ast.Ident); !ok || id.Name != "args" {
		return nil, nil
	}
	f := ArgField(env.Probe, m.Name)
	if f == nil || f.Kind != providers.ArgArray || f.Len <= 0 || f.Size%f.Len != 0 {
		return nil, nil
	}
	size := f.Size / f.Len
	if size != 1 && size != 2 && size != 4 && size != 8 {
		return nil, nil
	}
	return f, types.FromC(f.Type, size, f.Signed)
}

// MemberOffset resolves x->name and x.name on structs and unions: the
// member's offset and its type, whatever it is.
func (in *Info) MemberOffset(e *ast.Member, env *Env) (int, *types.Type, error) {
	xt, err := in.TypeOf(e.X, env)
	if err != nil {
		return 0, nil, err
	}
	st := xt
	if e.Arrow {
		if xt.Kind != types.Pointer || xt.Elem == nil {
			return 0, nil, in.errorf(e.Pos, "D_OP_PTR", "operator -> must be applied to a pointer")
		}
		if xt.Elem.Kind != types.Struct {
			return 0, nil, in.errorf(e.Pos, "D_OP_SOU", "operator -> cannot be applied to pointer to type \"%s\"; must be applied to a struct or union pointer", xt.Elem)
		}
		st = xt.Elem
	} else if xt.Kind != types.Struct {
		return 0, nil, in.errorf(e.Pos, "D_OP_SOU", "operator . cannot be applied to type \"%s\"; must be applied to a struct or union", xt)
	}
	off, mt, err := ktypes.Member(st, e.Name)
	if err != nil {
		return 0, nil, in.errorf(e.Pos, "D_TYPE_MEMBER", "%v", err)
	}
	return off, mt, nil
}

// KernelMember types x->name and x.name as values: a char array reads
// as a string; other arrays cannot be read whole.
func (in *Info) KernelMember(e *ast.Member, env *Env) (int, *types.Type, error) {
	off, mt, err := in.MemberOffset(e, env)
	if err != nil {
		return 0, nil, err
	}
	if mt.IsCharArray() {
		return off, types.StringT(mt.Len + 1), nil
	}
	if mt.Kind == types.Array || mt.Kind == types.Void || mt.Kind == types.Float && mt.Size > 8 {
		return 0, nil, in.errorf(e.Pos, "D_UNKNOWN", "%s of type %s cannot be read yet", e.Name, mt.Name)
	}
	return off, mt, nil
}

// argsIndex types args[N]: the probe's Nth argument, typed as the probe
// declares it (a syscall's C prototype), or int64_t.
func (in *Info) argsIndex(e *ast.Index, env *Env) (*types.Type, error) {
	if len(e.Keys) != 1 {
		return nil, in.errorf(e.Pos, "D_ARGS_IDX", "args[ ] takes one index")
	}
	n, ok := in.ConstInt(e.Keys[0])
	if !ok {
		kt, err := in.TypeOf(e.Keys[0], env)
		if err != nil {
			return nil, err
		}
		return nil, in.errorf(e.Keys[0].Start(), "D_PROTO_ARG", "args[ ] argument #1 is incompatible with prototype:\n\tprototype: integer constant\n\t argument: %s", kt)
	}
	if n < 0 || n >= 10 {
		return nil, in.errorf(e.Keys[0].Start(), "D_ARGS_IDX", "index %d is out of range for args[ ]", n)
	}
	if m := ArgsIndexMember(e, env.Probe, int(n)); m != nil {
		return in.TypeOf(m, env)
	}
	if a := PositionalArg(env.Probe, int(n)); a != nil {
		if a.BTF != nil {
			return ktypes.FromBTF(a.BTF), nil
		}
		if a.Kind == providers.ArgPointer {
			return &types.Type{Kind: types.Pointer, Size: 8, Name: a.Type, Elem: types.VoidT}, nil
		}
		return types.FromC(a.Type, a.Size, a.Signed), nil
	}
	if env.Probe != nil && (fixedArgs[env.Probe.Provider] || typedArgs(env.Probe) || env.Probe.Provider == "sdt" && len(env.Probe.Args) > 0) {
		return nil, in.errorf(e.Keys[0].Start(), "D_ARGS_IDX", "index %d is out of range for %s args[ ]", n, env.Probe)
	}
	return types.Int64T, nil
}

// ArgsIndexMember returns args->F for args[n] on a probe whose arguments
// are a tracepoint's named fields (sdt), F being its field n, as in
// DTrace, where an SDT probe's args[] are the tracepoint's fields in
// order; nil for any other probe.
func ArgsIndexMember(e *ast.Index, p *providers.Probe, n int) *ast.Member {
	if p == nil || p.Provider != "sdt" || n < 0 || n >= len(p.Args) || p.Args[n].Name == "" {
		return nil
	}
	return &ast.Member{Pos: e.Pos, X: e.X, Name: p.Args[n].Name, Arrow: true}
}

// typedArgs reports whether p's positional arguments all come typed from
// BTF (rawtp and fbt probes), so that an index past them is an error.
func typedArgs(p *providers.Probe) bool {
	if p.Args == nil || p.Provider != "rawtp" && p.Provider != "fbt" {
		return false
	}
	for i := range p.Args {
		if p.Args[i].BTF == nil {
			return false
		}
	}
	return true
}

// fixedArgs are the providers whose probes declare all their args[].
var fixedArgs = map[string]bool{"syscall": true, "proc": true, "sched": true, "io": true, "dtrace": true}

// PositionalArg returns probe p's Nth positional argument, if it declares
// its arguments by position (as syscall probes do).
func PositionalArg(p *providers.Probe, n int) *providers.Arg {
	if p == nil || n >= len(p.Args) || p.Args[n].Name != "" {
		return nil
	}
	return &p.Args[n]
}

// offsetOf resolves offsetof(struct X, member).
func (in *Info) offsetOf(e *ast.OffsetOf) (int, error) {
	t, err := in.typeName(e.Type)
	if err != nil && in.incomplete(e.Type, "") != nil {
		// A tag no one defined is an incomplete type to DTrace, no
		// struct.
		return 0, in.errorf(e.Pos, "D_OFFSETOF_TYPE", "offsetof operand must be a struct or union type")
	}
	if err != nil {
		return 0, err
	}
	if t.Kind != types.Struct {
		return 0, in.errorf(e.Pos, "D_OFFSETOF_TYPE", "offsetof operand must be a struct or union type")
	}
	off, mt, err := ktypes.Member(t, e.Member)
	if err != nil {
		return 0, in.errorf(e.Pos, "D_UNKNOWN", "failed to determine offset of %s: Member name not found", e.Member)
	}
	if mt.Bits > 0 {
		return 0, in.errorf(e.Pos, "D_OFFSETOF_BITFIELD", "cannot take offset of a bit-field: %s", e.Member)
	}
	return off, nil
}

// isArgsMember reports whether m is args->field or a self->/this->
// variable rather than a member of a kernel struct.
func isArgsMember(m *ast.Member) bool {
	if _, ok := RefOf(m); ok {
		return true
	}
	id, ok := m.X.(*ast.Ident)
	return ok && id.Name == "args"
}

// MemoryLvalue types an assignment's target in memory: p->m, s.m and *p
// of integer or pointer type. Code generation checks at run time that the
// memory is the clause's own, from alloca( ), as DTrace allows no other.
func (in *Info) MemoryLvalue(x ast.Expr, env *Env) (*types.Type, bool, error) {
	switch x := Unparen(x).(type) {
	case *ast.Member:
		if isArgsMember(x) {
			return nil, false, nil
		}
		_, mt, err := in.KernelMember(x, env)
		if _, _, inVar := in.StructRoot(x); inVar && err == nil && mt.Kind == types.Struct {
			// A struct member of a struct variable takes a whole value.
			return mt, true, nil
		}
		if err == nil && !mt.IsScalar() {
			err = in.errorf(x.Pos, "D_OP_LVAL", "operator = requires a writable lvalue operand")
		}
		return mt, true, err
	case *ast.Index:
		if et := in.PointerIndex(x, env); et != nil {
			_, err := in.indexType(x, env)
			return et, true, err
		}
		_, at, err := in.MemberArray(x, env)
		if at == nil && err == nil {
			return nil, false, nil
		}
		if err != nil {
			return nil, true, err
		}
		return at.Elem, true, nil
	case *ast.Unary:
		if x.Op != "*" {
			return nil, false, nil
		}
		pt, err := in.TypeOf(x.X, env)
		if err == nil && (pt.Kind != types.Pointer || pt.Elem == nil || !pt.Elem.IsScalar() && !pt.Elem.IsString()) {
			err = in.errorf(x.Pos, "D_OP_LVAL", "operator = requires a writable lvalue operand")
		}
		if err != nil {
			return nil, true, err
		}
		return pt.Elem, true, nil
	}
	return nil, false, nil
}

// MemberArray types x->m[i] and x.m[i] where m is an array member of a
// struct or union (char arrays included): it returns m's offset and its
// array type, or a nil type when e is not such an index.
func (in *Info) MemberArray(e *ast.Index, env *Env) (int, *types.Type, error) {
	m, ok := e.X.(*ast.Member)
	if !ok || isArgsMember(m) {
		return 0, nil, nil
	}
	off, mt, err := in.MemberOffset(m, env)
	if err != nil {
		return 0, nil, err
	}
	// An array of structs too, for x->m[i].f and &x->m[i].
	if mt.Kind != types.Array || mt.Elem == nil || !mt.Elem.IsScalar() && mt.Elem.Kind != types.Struct {
		return 0, nil, nil
	}
	if len(e.Keys) != 1 {
		return 0, nil, in.errorf(e.Pos, "D_PROTO_LEN", "%s takes one index", m.Name)
	}
	kt, err := in.TypeOf(e.Keys[0], env)
	if err != nil {
		return 0, nil, err
	}
	if !kt.IsInt() {
		return 0, nil, in.errorf(e.Keys[0].Start(), "D_OP_INT", "index of %s must be an integer", m.Name)
	}
	// A flexible array member (m[]) has no bound to check.
	if i, ok := in.ConstInt(e.Keys[0]); ok && (i < 0 || mt.Len > 0 && int(i) >= mt.Len) {
		return 0, nil, in.errorf(e.Keys[0].Start(), "D_ARR_BOUNDS", "index outside array bounds: %d, max is %d", uint64(i), mt.Len)
	}
	return off, mt, nil
}

// PointerIndex returns the element type of p[i] when p is a pointer to a
// scalar (a variable of pointer type, or any pointer expression, a
// pointer member included, that is not an associative array's name), and
// nil otherwise.
func (in *Info) PointerIndex(e *ast.Index, env *Env) *types.Type {
	var pt *types.Type
	if r, ok := RefOf(e.X); ok {
		v := in.Lookup(r)
		if v == nil || v.Keys != nil {
			return nil
		}
		pt = v.Type
	} else {
		t, err := in.TypeOf(e.X, env)
		if err != nil {
			return nil
		}
		// x->m[i] of an array member is MemberArray's; of a pointer
		// member, it is this.
		pt = t
	}
	if pt.Kind != types.Pointer || pt.Elem == nil || !pt.Elem.IsScalar() || pt.Elem.Size <= 0 {
		return nil
	}
	return pt.Elem
}

// ScratchSize is the scratchsize option as DTrace keeps it: the bytes
// alloca( ) and copyin( ) may take in a clause, plus the 8 at offset 0
// that no allocation gets (an alloca( ) pointer is an offset into this
// space, and 0 is NULL), rounded up to 8.
func (in *Info) ScratchSize() int {
	if in.Opts.ScratchSize > 0 {
		return (in.Opts.ScratchSize + 8 + 7) &^ 7
	}
	return 256 + 8
}

// scratchSize checks the size argument i of copyin( ) or alloca( ): an
// integer, and when constant, no larger than the scratch space.
func (in *Info) scratchSize(e *ast.Call, i int, argTypes []*types.Type) error {
	if !argTypes[i].IsInt() {
		return in.errorf(e.Args[i].Start(), "D_PROTO_ARG", "%s( ) argument #%d is incompatible with prototype:\n\tprototype: size_t\n\t argument: %s", e.Fn, i+1, argTypes[i])
	}
	if n, ok := in.ConstInt(e.Args[i]); ok && uint64(n) > uint64(in.ScratchSize()-8) {
		return in.errorf(e.Pos, "D_ALLOCA_SIZE", "alloca(%d) size larger than scratchsize %d", uint64(n), in.ScratchSize()-8)
	}
	return nil
}

// isAlloca says whether e is, as far as the text shows, a pointer into
// alloca( ) space: alloca( ) or copyin( ), a variable assigned one,
// arithmetic on one, or a cast of one.
func (in *Info) isAlloca(e ast.Expr) bool {
	switch x := Unparen(e).(type) {
	case *ast.Call:
		return x.Fn == "alloca" || x.Fn == "copyin"
	case *ast.Cast:
		return in.isAlloca(x.X)
	case *ast.Binary:
		return (x.Op == "+" || x.Op == "-") && (in.isAlloca(x.X) || in.isAlloca(x.Y))
	case *ast.Unary:
		if ix, ok := Unparen(x.X).(*ast.Index); ok && x.Op == "&" {
			return in.isAlloca(ix.X)
		}
	case *ast.Assign:
		return x.Op == "=" && in.isAlloca(x.RHS)
	case *ast.Cond:
		return in.isAlloca(x.T) && in.isAlloca(x.F)
	}
	if r, ok := RefOf(e); ok && r.Keys == nil {
		return in.allocaVars[[2]string{fmt.Sprint(r.Scope), r.Name}]
	}
	return false
}

// mayBeAlloca says whether e may be a pointer alloca( ) gave: it calls
// alloca( ) or copyin( ), or reads a variable that may hold one. What is
// neither (a kernel address, a constant) DTrace refuses where only
// alloca( ) memory will do.
func mayBeAlloca(e ast.Expr) bool {
	may := false
	ast.Inspect(e, func(x ast.Expr) {
		if c, ok := x.(*ast.Call); ok && (c.Fn == "alloca" || c.Fn == "copyin") {
			may = true
		}
		if _, ok := RefOf(x); ok {
			may = true
		}
	})
	return may
}

// addrArg checks that argument i of e is an address (uintptr_t): an
// integer or a pointer, not a string.
func (in *Info) addrArg(e *ast.Call, i int, argTypes []*types.Type) error {
	if t := argTypes[i]; !t.IsScalar() || t.IsString() {
		return in.errorf(e.Args[i].Start(), "D_PROTO_ARG", "%s( ) argument #%d is incompatible with prototype:\n\tprototype: uintptr_t\n\t argument: %s", e.Fn, i+1, t)
	}
	return nil
}

// uregsIndex types uregs[i], a user register of the thread that fired the
// probe.
func (in *Info) uregsIndex(e *ast.Index, env *Env) (*types.Type, error) {
	if len(e.Keys) != 1 {
		return nil, in.errorf(e.Pos, "D_PROTO_LEN", "uregs[ ] takes one index")
	}
	t, err := in.TypeOf(e.Keys[0], env)
	if err != nil {
		return nil, err
	}
	if !t.IsInt() {
		return nil, in.errorf(e.Keys[0].Start(), "D_OP_INT", "index of uregs[ ] must be an integer")
	}
	i, ok := in.ConstInt(e.Keys[0])
	if !ok {
		// As in dtrace: the register is chosen when compiling.
		return nil, in.errorf(e.Keys[0].Start(), "D_PROTO_ARG", "uregs[ ] argument #1 is incompatible with prototype:\n\tprototype: integer constant\n\t argument: %s", t)
	}
	if i < 0 || int(i) >= providers.NumUserRegs() {
		return nil, in.errorf(e.Keys[0].Start(), "D_ARGS_IDX", "index %d is out of range for uregs[ ]", i)
	}
	return types.Uint64T, nil
}

// sameFloat reports whether a and b are the same floating-point type,
// which is all a float may be assigned from or cast to: converting takes
// floating-point arithmetic, which BPF has not.
func sameFloat(a, b *types.Type) bool {
	return a.Kind == types.Float && b.Kind == types.Float && a.Size == b.Size
}

// floatOp refuses operator op on a floating-point operand: D on BPF has
// no floating-point arithmetic, and comparing a float's bits as an
// integer's would give wrong answers.
func floatOp(in *Info, pos source.Pos, op string) error {
	return in.errorf(pos, "D_OP_ARITH", "operator %s requires operands of arithmetic type: D cannot compute with floating-point values", op)
}
