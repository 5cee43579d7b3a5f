package check

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/ktypes"
	"github.com/dstar-trace/dstar/dcompiler/parser"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/providers"
)

// Translators are expanded before clauses are typed, as macros over the
// syntax tree: x->m, where x is xlate <T *> (e) (directly, through an inline
// such as curpsinfo, or as a probe argument of a translated type such as
// proc:::create's args[0]), becomes the translator's expression for m with
// its parameter replaced by e, cast to m's type. Code generation therefore
// never sees a translator, and a translated member costs exactly the kernel
// reads its expression makes.

// translator is a translator definition, with its members by name.
type translator struct {
	decl    *ast.Translator
	members map[string]*ast.XlateMember
}

// ArgsFn is the D library's __dstar_args(addr, len): the current
// process's arguments as one string, for psinfo_t's pr_psargs.
const ArgsFn = "__dstar_args"

// PathFn is the D library's __dstar_path(dentry, vfsmount): a file's path
// from the root mount, for fileinfo_t's fi_pathname and d_path( ).
const PathFn = "__dstar_path"

// DirPath is what the built-in cwd or root stands for:
// d_path(&curthread->fs->pwd) or d_path(&curthread->fs->root).
func DirPath(id *ast.Ident) *ast.Call {
	member := map[string]string{"cwd": "pwd", "root": "root"}[id.Name]
	fs := &ast.Member{Pos: id.Pos, X: &ast.Ident{Pos: id.Pos, Name: "curthread"}, Name: "fs", Arrow: true}
	return &ast.Call{Pos: id.Pos, Fn: "d_path", Args: []ast.Expr{
		&ast.Unary{Pos: id.Pos, Op: "&", X: &ast.Member{Pos: id.Pos, X: fs, Name: member, Arrow: true}},
	}}
}

// PathCall is what d_path(p) computes: __dstar_path(p->dentry, p->mnt).
func PathCall(dpath *ast.Call) *ast.Call {
	p := dpath.Args[0]
	return &ast.Call{Pos: dpath.Pos, Fn: PathFn, Args: []ast.Expr{
		&ast.Member{Pos: dpath.Pos, X: p, Name: "dentry", Arrow: true},
		&ast.Member{Pos: dpath.Pos, X: p, Name: "mnt", Arrow: true},
	}}
}

// PRArgSz is the size of psinfo_t's pr_psargs, with its NUL.
const PRArgSz = 80

// maxXlateDepth bounds translators that use translators.
const maxXlateDepth = 8

// translatorDecl records a translator definition, with DTrace's checks,
// reported where the definition ends, as DTrace (which has read it all
// by then) reports them. The library's translators are typed only where
// they are used, so that a program which uses no translator never loads
// the kernel's BTF for them; a program's own are typed here, as DTrace
// types them.
func (in *Info) translatorDecl(d *ast.Decl) error {
	x := d.Xlator
	key := spell(x.Out)
	if out, err := in.typeName(x.Out); err == nil {
		key = out.Name // as they are kept: lwpsinfo_t is struct lwpsinfo
	}
	for _, tr := range in.xlators[key] {
		if spell(tr.decl.In) == spell(x.In) {
			return in.errorf(x.End, "D_XLATE_REDECL", "translator from %s to %s has already been declared", spell(x.In), spell(x.Out))
		}
	}
	out, err := in.typeName(x.Out)
	if err != nil {
		if in.incomplete(x.Out, "") != nil {
			return in.errorf(x.End, "D_XLATE_SOU", "incomplete struct/union/enum %s", x.Out.Name)
		}
		return err
	}
	if out.Kind != types.Struct {
		return in.errorf(x.End, "D_XLATE_SOU", "translator output type must be a struct or union")
	}
	tr := &translator{decl: x, members: map[string]*ast.XlateMember{}}
	for _, m := range x.Members {
		if _, _, err := ktypes.Member(out, m.Name); err != nil {
			return in.errorf(x.End, "D_XLATE_MEMB", "translator member %s is not a member of %s", m.Name, out.Name)
		}
		// A member defined twice keeps its first definition.
		if tr.members[m.Name] == nil {
			tr.members[m.Name] = m
		}
	}
	if d.File != nil && !d.File.Library {
		if err := in.typeTranslator(x, out); err != nil {
			return err
		}
	}
	if in.xlators == nil {
		in.xlators = map[string][]*translator{}
	}
	in.xlators[out.Name] = append(in.xlators[out.Name], tr)
	return nil
}

// typeTranslator types each member's expression, its parameter standing
// for a value of the input type, and checks it can be assigned to the
// member.
func (in *Info) typeTranslator(x *ast.Translator, out *types.Type) error {
	in0 := &ast.TypeName{Pos: x.In.Pos, Name: x.In.Name, Ptr: x.In.Ptr}
	zero := &ast.IntLit{Pos: x.In.Pos, Text: "0"}
	var param ast.Expr = &ast.Cast{Pos: x.In.Pos, Type: in0, X: zero}
	// (An input type only named, a struct of no definition, is as
	// DTrace's forward declaration: what reads it fails.)
	if it, err := in.typeName(x.In); err == nil && it.Kind == types.Struct {
		ptr := &ast.TypeName{Pos: x.In.Pos, Name: x.In.Name, Ptr: 1}
		param = &ast.Unary{Pos: x.In.Pos, Op: "*", X: &ast.Cast{Pos: x.In.Pos, Type: ptr, X: zero}}
	}
	for _, m := range x.Members {
		body := in.bindParam(x, m.X, param)
		bt, err := in.TypeOf(body, &Env{Decl: true})
		if err != nil {
			return err
		}
		_, mt, _ := ktypes.Member(out, m.Name)
		if mt != nil && !argCompat(mt, bt, in.isZero(body)) {
			return in.errorf(x.End, "D_XLATE_INCOMPAT", "translator member %s definition uses incompatible types: \"%s\" = \"%s\"", m.Name, mt, bt)
		}
	}
	return nil
}

// bindParam returns a copy of a member's expression with the translator's
// parameter replaced by operand. A cast of the parameter to its own type
// goes, as it changes nothing: "(struct in)p" where p is a struct in.
func (in *Info) bindParam(x *ast.Translator, e, operand ast.Expr) ast.Expr {
	isParam := func(e ast.Expr) bool {
		id, ok := Unparen(e).(*ast.Ident)
		return ok && id.Name == x.Param
	}
	e = ast.Rewrite(e, func(e ast.Expr) ast.Expr {
		if c, ok := e.(*ast.Cast); ok && isParam(c.X) && c.Type.Name == x.In.Name && c.Type.Ptr == x.In.Ptr {
			return c.X
		}
		return e
	})
	return ast.Rewrite(e, func(e ast.Expr) ast.Expr {
		if isParam(e) {
			return ast.Rewrite(operand, func(e ast.Expr) ast.Expr { return e })
		}
		return e
	})
}

// isZero reports whether e is the constant 0, which any pointer takes.
func (in *Info) isZero(e ast.Expr) bool {
	v, ok := in.ConstInt(e)
	return ok && v == 0
}

// argCompat is DTrace's rule for what a translator member (or a
// function's parameter) takes: integers for integers, strings or char
// arrays and pointers for strings, the same struct, and pointers for
// pointers (or the constant 0).
func argCompat(lt, rt *types.Type, zero bool) bool {
	strLike := func(t *types.Type) bool {
		return t.IsString() || t.IsCharArray() || t.Kind == types.Pointer && t.Elem != nil && t.Elem.Kind == types.Int && t.Elem.Size == 1
	}
	switch {
	case lt.IsInt() && rt.IsInt():
		return true
	case strLike(lt) && strLike(rt):
		return true
	case lt.Kind == types.Struct || rt.Kind == types.Struct:
		return SameStruct(lt, rt)
	case lt.Kind == types.Pointer || lt.Kind == types.Array:
		return rt.Kind == types.Pointer || rt.Kind == types.Array || zero && rt.IsInt()
	}
	return lt.Kind == rt.Kind
}

// xlateType types xlate <T> (x): T, which must be a struct or a pointer to
// one that some translator builds.
func (in *Info) xlateType(e *ast.Xlate, env *Env) (*types.Type, error) {
	t, err := in.typeName(e.Type)
	if err != nil {
		return nil, err
	}
	st := t
	if t.Kind == types.Pointer && t.Elem != nil {
		st = t.Elem
	}
	if st.Kind != types.Struct || len(in.xlators[st.Name]) == 0 {
		return nil, in.errorf(e.Pos, "D_XLATE_NONE", "no translator to %s is defined", spell(e.Type))
	}
	if !env.Decl {
		return nil, in.errorf(e.Pos, "D_CG_DYN", "a translated %s may only be used with -> or . to read one of its members", spell(e.Type))
	}
	return t, nil
}

// spell writes a type as the program wrote it ("psinfo_t *"), for
// messages.
func spell(tn *ast.TypeName) string {
	if tn.Ptr == 0 {
		return tn.Name
	}
	return tn.Name + " " + strings.Repeat("*", tn.Ptr)
}

// xlateOf returns the xlate expression x stands for: x itself, an inline
// defined as one, or nil.
func (in *Info) xlateOf(x ast.Expr) *ast.Xlate {
	switch x := Unparen(x).(type) {
	case *ast.Xlate:
		return x
	case *ast.Ident:
		if il := in.inlines[x.Name]; il != nil {
			if xl, ok := Unparen(il.Init).(*ast.Xlate); ok {
				return xl
			}
		}
	}
	return nil
}

// argExpr is the expression a translated probe argument stands for.
func (in *Info) argExpr(pr *providers.Probe, n int) (ast.Expr, error) {
	key := fmt.Sprintf("%d/%d", pr.ID, n)
	if x, ok := in.argExprs[key]; ok {
		return x, nil
	}
	a := PositionalArg(pr, n)
	if a == nil || a.Expr == "" {
		return nil, nil
	}
	x, err := parser.ParseExpr(source.NewFile(pr.String()+" args["+fmt.Sprint(n)+"]", a.Expr))
	if err != nil {
		return nil, fmt.Errorf("%s: args[%d]: %v", pr, n, err)
	}
	if in.argExprs == nil {
		in.argExprs = map[string]ast.Expr{}
	}
	in.argExprs[key] = x
	return x, nil
}

// argsIndexOf returns N when e is args[N] with a constant N.
func (in *Info) argsIndexOf(e ast.Expr) (int, bool) {
	ix, ok := e.(*ast.Index)
	if !ok || len(ix.Keys) != 1 {
		return 0, false
	}
	if id, ok := ix.X.(*ast.Ident); !ok || id.Name != "args" {
		return 0, false
	}
	n, ok := in.ConstInt(ix.Keys[0])
	if !ok || n < 0 || n >= providers.NumArgs {
		return 0, false
	}
	return int(n), true
}

// usesXlate reports whether e needs translating: it holds an xlate, an
// inline defined as one, or a translated argument of one of probes.
func (in *Info) usesXlate(e ast.Expr, probes []*providers.Probe) bool {
	found := false
	ast.Inspect(e, func(x ast.Expr) { found = found || in.translates(x, probes) })
	return found
}

// translates says whether node x itself (not its parts) needs translating.
// Parentheses are left to the walk, which visits what they hold: looking
// through them at every level would make deep nesting cost its square.
func (in *Info) translates(x ast.Expr, probes []*providers.Probe) bool {
	if _, ok := x.(*ast.Paren); ok {
		return false
	}
	if in.xlateOf(x) != nil {
		return true
	}
	if n, ok := in.argsIndexOf(x); ok {
		for _, pr := range probes {
			if a := PositionalArg(pr, n); a != nil && a.Expr != "" {
				return true
			}
		}
	}
	return false
}

// translateClause expands the translators a clause uses, in place.
func (in *Info) translateClause(cl *Clause) error {
	if len(in.inlineArrays) > 0 {
		var err error
		if cl.Pred != nil {
			cl.Pred = in.expandInlineArrays(cl.Pred, &err, 0)
		}
		ast.RewriteStmts(cl.Body, func(e ast.Expr) ast.Expr { return in.inlineArrayAt(e, &err, 0) })
		if err != nil {
			return err
		}
	}
	// Every node is looked at once: the walks visit each subexpression.
	need := cl.Pred != nil && in.usesXlate(cl.Pred, cl.Probes)
	ast.InspectStmts(cl.Body, func(e ast.Expr) { need = need || in.translates(e, cl.Probes) })
	if !need {
		return nil
	}
	var firstErr error
	f := in.translator(cl.Probes, &firstErr, 0)
	if cl.Pred != nil {
		cl.Pred = ast.Rewrite(cl.Pred, f)
	}
	ast.RewriteStmts(cl.Body, f)
	return firstErr
}

// translateExpr expands the translators in an expression outside clauses
// (an inline's value), where there are no probe arguments.
func (in *Info) translateExpr(e ast.Expr) (ast.Expr, error) {
	var err error
	if e = in.expandInlineArrays(e, &err, 0); err != nil {
		return nil, err
	}
	if !in.usesXlate(e, nil) {
		return e, nil
	}
	var firstErr error
	out := ast.Rewrite(e, in.translator(nil, &firstErr, 0))
	return out, firstErr
}

// translator returns the rewriting function that expands translated
// arguments and members for a clause matching probes. The first error
// is left in *errp.
func (in *Info) translator(probes []*providers.Probe, errp *error, depth int) func(ast.Expr) ast.Expr {
	var f func(ast.Expr) ast.Expr
	fail := func(err error) ast.Expr {
		if *errp == nil {
			*errp = err
		}
		return &ast.IntLit{Text: "0"}
	}
	f = func(e ast.Expr) ast.Expr {
		if *errp != nil {
			return e
		}
		if n, ok := in.argsIndexOf(e); ok && len(probes) > 0 {
			x, err := in.translatedArg(probes, n, e.Start())
			if err != nil {
				return fail(err)
			}
			if x != nil {
				return x
			}
			return e
		}
		m, ok := e.(*ast.Member)
		if !ok {
			return e
		}
		xl := in.xlateOf(m.X)
		if xl == nil {
			return e
		}
		if depth >= maxXlateDepth {
			return fail(in.errorf(m.Pos, "D_UNKNOWN", "translators nest more than %d deep", maxXlateDepth))
		}
		x, err := in.expandMember(m, xl)
		if err == errXlateLater {
			in.xlateWaited = true
			return e
		}
		if err != nil {
			return fail(err)
		}
		// The expansion may itself use inline arrays and translators.
		x = in.expandInlineArrays(x, errp, 0)
		return ast.Rewrite(x, in.translator(nil, errp, depth+1))
	}
	return f
}

// translatedArg returns what args[n] stands for on probes (all the same,
// or an error), positioned at pos; nil when it is not translated.
func (in *Info) translatedArg(probes []*providers.Probe, n int, pos source.Pos) (ast.Expr, error) {
	var first ast.Expr
	var firstText string
	for i, pr := range probes {
		x, err := in.argExpr(pr, n)
		if err != nil {
			return nil, in.errorf(pos, "D_ARGS_XLATOR", "%v", err)
		}
		text := ""
		if a := PositionalArg(pr, n); a != nil {
			text = a.Expr + "\x00" + a.Type
		}
		if i == 0 {
			first, firstText = x, text
		} else if text != firstText {
			return nil, in.errorf(pos, "D_ARGS_TYPE", "args[%d] differs between probes %s and %s of this clause; they need clauses of their own", n, probes[0], pr)
		}
	}
	if first == nil {
		return nil, nil
	}
	return place(first, pos), nil
}

// expandMember expands x->name (or x.name) where x is xl.
func (in *Info) expandMember(m *ast.Member, xl *ast.Xlate) (ast.Expr, error) {
	t, err := in.typeName(xl.Type)
	if err != nil {
		return nil, err
	}
	st := t
	if t.Kind == types.Pointer && t.Elem != nil {
		st = t.Elem
	}
	trs := in.xlators[st.Name]
	if len(trs) == 0 {
		return nil, in.errorf(m.Pos, "D_XLATE_NONE", "no translator to %s is defined", spell(xl.Type))
	}
	// The operand's type picks the translator, as in DTrace: one from
	// exactly its type, else one from a type it converts to as an
	// argument would. (An operand this context cannot type, such as a
	// clause-local, takes the only one there is.)
	tr := trs[0]
	if xt, err := in.TypeOf(xl.X, &Env{}); err != nil {
		if len(trs) > 1 {
			if in.xlateLater {
				// Typed once the clauses' variables are declared.
				return nil, errXlateLater
			}
			return nil, err
		}
	} else {
		tr = nil
		for _, exact := range []bool{true, false} {
			for _, c := range trs {
				it, err := in.typeName(c.decl.In)
				if tr == nil && err == nil && (exact && sameType(it, xt) || !exact && argCompat(it, xt, in.isZero(xl.X))) {
					tr = c
				}
			}
		}
		if tr == nil {
			return nil, in.errorf(m.Pos, "D_XLATE_NONE", "cannot translate from \"%s\" to \"%s\"", xt, spell(xl.Type))
		}
	}
	if m.Arrow && (t.Kind != types.Pointer || t.Elem == nil || t.Elem.Kind != types.Struct) {
		return nil, in.errorf(m.Pos, "D_OP_PTR", "operator -> must be applied to a pointer to a struct or union")
	} else if !m.Arrow && t.Kind != types.Struct {
		return nil, in.errorf(m.Pos, "D_OP_SOU", "operator . must be applied to a struct or union")
	}
	tm := tr.members[m.Name]
	if tm == nil {
		return nil, in.errorf(m.Pos, "D_XLATE_NOCONV", "translator does not define conversion for member: %s", m.Name)
	}
	// No parentheses around the operand or the result: the tree already
	// says what applies to what, and a bare member stays one, which
	// indexing a member array (curpsinfo->pr_fname[0]) needs.
	operand := place(xl.X, m.Pos)
	body := ast.Rewrite(in.bindParam(tr.decl, tm.X, operand), func(e ast.Expr) ast.Expr { return at(e, m.Pos) })
	_, mt, _ := ktypes.Member(st, m.Name)
	if mt != nil && mt.Kind == types.Int {
		body = &ast.Cast{Pos: m.Pos, Type: &ast.TypeName{Pos: m.Pos, Name: mt.Name}, X: body}
	}
	return body, nil
}

// errXlateLater is expandMember's answer when the translator depends on
// its operand's type, which cannot be known yet.
var errXlateLater = errors.New("translator operand not yet typed")

// sameType compares types as translators match their input: by name,
// ignoring qualifiers and spacing.
func sameType(a, b *types.Type) bool {
	norm := func(s string) string {
		s = strings.ReplaceAll(s, "const ", "")
		return strings.ReplaceAll(s, " ", "")
	}
	return norm(a.Name) == norm(b.Name)
}

// place returns a copy of e with every node at pos.
func place(e ast.Expr, pos source.Pos) ast.Expr {
	return ast.Rewrite(e, func(x ast.Expr) ast.Expr { return at(x, pos) })
}

// at places a node (not its children) at pos: an expansion's errors and
// faults are reported where the program wrote the member it reads.
func at(e ast.Expr, pos source.Pos) ast.Expr {
	switch e := e.(type) {
	case *ast.IntLit:
		e.Pos = pos
	case *ast.StrLit:
		e.Pos = pos
	case *ast.Ident:
		e.Pos = pos
	case *ast.MacroVar:
		e.Pos = pos
	case *ast.Unary:
		e.Pos = pos
	case *ast.Postfix:
		e.Pos = pos
	case *ast.Binary:
		e.Pos = pos
	case *ast.Assign:
		e.Pos = pos
	case *ast.Cond:
		e.Pos = pos
	case *ast.Call:
		e.Pos = pos
	case *ast.Index:
		e.Pos = pos
	case *ast.Member:
		e.Pos = pos
	case *ast.Cast:
		e.Pos = pos
		e.Type = &ast.TypeName{Pos: pos, Name: e.Type.Name, Ptr: e.Type.Ptr}
	case *ast.SizeofType:
		e.Pos = pos
	case *ast.Paren:
		e.Pos = pos
	case *ast.Xlate:
		e.Pos = pos
	}
	return e
}
