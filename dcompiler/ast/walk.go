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
