package check

import (
	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/types"
)

// An inline array ("inline fileinfo_t fds[int fd] = xlate <fileinfo_t>
// (...);", as DTrace's own library defines fds[]) is a macro: where the
// program indexes it, the value is expanded with each key, converted to
// its declared type, in place of the key's name. Its value is typed where
// it is used, since only then are the keys known.
type inlineArray struct {
	decl *ast.Decl
	keys []*types.Type
}

// maxInlineDepth bounds inline arrays whose values index inline arrays.
const maxInlineDepth = 16

func (in *Info) inlineArrayDecl(d *ast.Decl, t *types.Type) error {
	ia := &inlineArray{decl: d}
	for _, k := range d.Keys {
		kt, err := in.typeName(k)
		if err != nil {
			return err
		}
		ia.keys = append(ia.keys, kt)
	}
	if in.inlineArrays == nil {
		in.inlineArrays = map[string]*inlineArray{}
	}
	in.inlineArrays[d.Name] = ia
	return nil
}

// expandInlineArrays replaces every indexed inline array in e by its
// value for those keys. The first error is left in *errp.
func (in *Info) expandInlineArrays(e ast.Expr, errp *error, depth int) ast.Expr {
	if len(in.inlineArrays) == 0 || e == nil {
		return e
	}
	return ast.Rewrite(e, func(x ast.Expr) ast.Expr { return in.inlineArrayAt(x, errp, depth) })
}

// inlineArrayAt expands x, when it indexes an inline array; its operands
// are expanded already.
func (in *Info) inlineArrayAt(x ast.Expr, errp *error, depth int) ast.Expr {
	ix, ok := x.(*ast.Index)
	if !ok || *errp != nil {
		return x
	}
	id, ok := ix.X.(*ast.Ident)
	if !ok {
		return x
	}
	ia := in.inlineArrays[id.Name]
	if ia == nil {
		return x
	}
	d := ia.decl
	if len(ix.Keys) != len(d.Params) {
		*errp = in.errorf(ix.Pos, "D_ARR_BADREF", "%s[ ] takes %d %s: %d given", id.Name, len(d.Params),
			map[bool]string{true: "key", false: "keys"}[len(d.Params) == 1], len(ix.Keys))
		return x
	}
	if depth >= maxInlineDepth {
		*errp = in.errorf(ix.Pos, "D_UNKNOWN", "inline arrays nest more than %d deep", maxInlineDepth)
		return x
	}
	keys := map[string]ast.Expr{}
	for i, p := range d.Params {
		k := ix.Keys[i]
		if ia.keys[i].IsInt() {
			k = &ast.Cast{Pos: k.Start(), Type: &ast.TypeName{Pos: k.Start(), Name: d.Keys[i].Name, Ptr: d.Keys[i].Ptr}, X: k}
		}
		keys[p] = &ast.Paren{Pos: k.Start(), X: k}
	}
	body := ast.Rewrite(d.Init, func(y ast.Expr) ast.Expr {
		if id, ok := y.(*ast.Ident); ok && keys[id.Name] != nil {
			// A copy each time: checking rewrites nodes in place.
			return ast.Rewrite(keys[id.Name], func(z ast.Expr) ast.Expr { return z })
		}
		return at(y, ix.Pos)
	})
	return &ast.Paren{Pos: ix.Pos, X: in.expandInlineArrays(body, errp, depth+1)}
}
