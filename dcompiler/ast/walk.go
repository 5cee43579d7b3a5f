package ast

// Inspect calls f for every expression in e, parents before children.
func Inspect(e Expr, f func(Expr)) {
	if e == nil {
		return
	}
	f(e)
	switch e := e.(type) {
	case *Unary:
		Inspect(e.X, f)
	case *Postfix:
		Inspect(e.X, f)
	case *Binary:
		Inspect(e.X, f)
		Inspect(e.Y, f)
	case *Assign:
		Inspect(e.LHS, f)
		Inspect(e.RHS, f)
	case *Cond:
		Inspect(e.C, f)
		Inspect(e.T, f)
		Inspect(e.F, f)
	case *Call:
		for _, a := range e.Args {
			Inspect(a, f)
		}
	case *Index:
		Inspect(e.X, f)
		for _, k := range e.Keys {
			Inspect(k, f)
		}
	case *Member:
		Inspect(e.X, f)
	case *Cast:
		Inspect(e.X, f)
	case *Paren:
		Inspect(e.X, f)
	case *Xlate:
		Inspect(e.X, f)
	}
}

// InspectStmts calls f for every expression in the statements.
func InspectStmts(list []Stmt, f func(Expr)) {
	for _, s := range list {
		switch s := s.(type) {
		case *ExprStmt:
			Inspect(s.X, f)
		case *IfStmt:
			Inspect(s.Cond, f)
			InspectStmts(s.Then, f)
			InspectStmts(s.Else, f)
		}
	}
}

// Rewrite returns a copy of e in which every expression has been replaced
// by what f returns for it, children before parents. The copy shares no
// node with e, so it can be rewritten again, or differently, by another
// caller.
func Rewrite(e Expr, f func(Expr) Expr) Expr {
	if e == nil {
		return nil
	}
	list := func(xs []Expr) []Expr {
		if xs == nil {
			return nil
		}
		out := make([]Expr, len(xs))
		for i, x := range xs {
			out[i] = Rewrite(x, f)
		}
		return out
	}
	var c Expr
	switch e := e.(type) {
	case *Unary:
		n := *e
		n.X = Rewrite(e.X, f)
		c = &n
	case *Postfix:
		n := *e
		n.X = Rewrite(e.X, f)
		c = &n
	case *Binary:
		n := *e
		n.X, n.Y = Rewrite(e.X, f), Rewrite(e.Y, f)
		c = &n
	case *Assign:
		n := *e
		n.LHS, n.RHS = Rewrite(e.LHS, f), Rewrite(e.RHS, f)
		c = &n
	case *Cond:
		n := *e
		n.C, n.T, n.F = Rewrite(e.C, f), Rewrite(e.T, f), Rewrite(e.F, f)
		c = &n
	case *Call:
		n := *e
		n.Args = list(e.Args)
		c = &n
	case *Index:
		n := *e
		n.X, n.Keys = Rewrite(e.X, f), list(e.Keys)
		c = &n
	case *Member:
		n := *e
		n.X = Rewrite(e.X, f)
		c = &n
	case *Cast:
		n := *e
		n.X = Rewrite(e.X, f)
		c = &n
	case *Paren:
		n := *e
		n.X = Rewrite(e.X, f)
		c = &n
	case *Xlate:
		n := *e
		n.X = Rewrite(e.X, f)
		c = &n
	case *IntLit:
		n := *e
		c = &n
	case *StrLit:
		n := *e
		c = &n
	case *Ident:
		n := *e
		c = &n
	case *MacroVar:
		n := *e
		c = &n
	case *KSym:
		n := *e
		c = &n
	case *AggVar:
		n := *e
		c = &n
	case *SizeofType:
		n := *e
		c = &n
	case *OffsetOf:
		n := *e
		c = &n
	default:
		c = e
	}
	return f(c)
}

// RewriteStmts rewrites, in place, every expression of the statements
// with Rewrite.
func RewriteStmts(list []Stmt, f func(Expr) Expr) {
	for _, s := range list {
		switch s := s.(type) {
		case *ExprStmt:
			s.X = Rewrite(s.X, f)
		case *IfStmt:
			s.Cond = Rewrite(s.Cond, f)
			RewriteStmts(s.Then, f)
			RewriteStmts(s.Else, f)
		}
	}
}
