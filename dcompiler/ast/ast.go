// Package ast defines the syntax tree of a D program.
//
// A Program is a list of clauses (and pragmas); a Clause is one or more probe
// descriptions, an optional predicate and a list of statements. Expressions
// are C's, plus D's aggregations (@name[keys]), macro variables ($1) and the
// self-> and this-> variable scopes. Every node records where it starts.
package ast

import "github.com/dstar-trace/dstar/dcompiler/source"

// Program is one or more parsed D source files: dtrace(1) compiles all its
// -n and -s programs together so that they share variables and
// aggregations.
type Program struct {
	Files   []*source.File
	Clauses []*Clause
	Pragmas []*Pragma
	Decls   []*Decl
	Macros  []string // macro variables the expressions name ("1", "$2", "target")
	// Providers are "provider NAME { probe ...; };" definitions, which
	// dtrace -h turns into a C header of probe macros.
	Providers []*ProviderDef
}

// ProviderDef is "provider NAME { probe NAME(ARGS) [: (ARGS)]; ... };".
type ProviderDef struct {
	File   *source.File
	Pos    source.Pos
	Name   string
	Probes []*ProbeDef
}

// ProbeDef is one probe of a provider definition: its name as written
// ("query__start", which DTrace names query-start), the native arguments
// the program passes, and the translated ones (after ':') when given.
type ProbeDef struct {
	Pos   source.Pos
	Name  string
	Args  []*ProbeArg
	XArgs []*ProbeArg
}

// ProbeArg is one argument of a probe definition: a type and an optional
// name.
type ProbeArg struct {
	Type *TypeName
	Name string
}

// Decl is a declaration outside clauses: a variable with its type
// ("self int x;", "int a[string, int];"), an inline constant ("inline int
// N = 4;"), or a typedef.
type Decl struct {
	File    *source.File
	Pos     source.Pos
	Storage string // "", "self" or "this"
	Extern  bool   // "extern TYPE name;": the type of a kernel symbol
	Func    bool   // a function's prototype ("int f(int);"), which D cannot call
	Inline  bool
	Typedef bool
	Type    *TypeName
	Name    string
	Keys    []*TypeName // an associative array's key types
	Dim     Expr        // a fixed-size array's dimension ("int a[5];"), or nil
	// Params name the keys of an inline array ("inline fileinfo_t
	// fds[int fd] = ...;"), whose value uses them.
	Params []string
	Init   Expr // an inline's value
	// Def is a struct, union or enum definition ("struct foo { ... };"),
	// when the declaration is one.
	Def *TypeDef
	// Xlator is a translator definition, when the declaration is one.
	Xlator *Translator
}

// Translator is "translator OUT < IN PARAM > { member = expr; ... };": how
// to build an OUT from an IN, one member at a time. xlate <OUT *> (x) and
// probe arguments of translated types use it.
type Translator struct {
	Pos     source.Pos
	Out     *TypeName
	In      *TypeName
	Param   string
	Members []*XlateMember
	// End is its closing ';', where DTrace, having read the whole
	// definition, reports what is wrong with it.
	End source.Pos
}

// XlateMember is one "member = expr;" of a translator.
type XlateMember struct {
	Pos  source.Pos
	Name string
	X    Expr
}

// TypeDef is the body of a struct, union or enum definition.
type TypeDef struct {
	Pos     source.Pos
	Kind    string // "struct", "union" or "enum"
	Name    string
	Members []*Member2 // struct and union members
	Items   []*EnumItem
}

// Member2 is a struct or union member: "TYPE NAME[LEN];".
type Member2 struct {
	Pos  source.Pos
	Type *TypeName
	Def  *TypeDef // an anonymous struct or union defined in place, or nil
	Name string
	Len  int // array length, 0 for none
	// Bits is a bit-field's width ("int a : 3;"), or nil; a bit-field
	// may have no name.
	Bits Expr
}

// EnumItem is an enumerator, with its value when one is given.
type EnumItem struct {
	Pos   source.Pos
	Next  source.Pos // the token after it, which DTrace has read when it defines it
	Name  string
	Value Expr
}

// Pragma is a "#pragma D option name=value" line.
type Pragma struct {
	File *source.File
	Pos  source.Pos
	Text string // what follows "#pragma"
}

// ProbeDesc is one probe description as written.
type ProbeDesc struct {
	Pos  source.Pos
	Text string
}

// Clause is "descs /pred/ { body }".
type Clause struct {
	File  *source.File
	Pos   source.Pos
	Descs []*ProbeDesc
	Pred  Expr // nil when absent
	Body  []Stmt
	// End is the closing '}' of the action list (NoPos without one).
	End source.Pos
}

// Stmt is a statement in an action list.
type Stmt interface{ stmtNode() }

// ExprStmt is an expression evaluated for its effect (calls, assignments).
type ExprStmt struct{ X Expr }

// IfStmt is "if (cond) then else els".
type IfStmt struct {
	Pos  source.Pos
	Cond Expr
	Then []Stmt
	Else []Stmt
}

func (*ExprStmt) stmtNode() {}
func (*IfStmt) stmtNode()   {}

// Expr is an expression.
type Expr interface{ Start() source.Pos }

// IntLit is an integer or character constant.
type IntLit struct {
	Pos    source.Pos
	Val    uint64
	Suffix string // "", "u", "l", "ul", "ll", "ull", or "char"
	Text   string
}

// StrLit is a string literal (decoded).
type StrLit struct {
	Pos source.Pos
	Val string
}

// Ident is a name: a variable, builtin, or function name.
type Ident struct {
	Pos  source.Pos
	Name string
}

// KSym is a kernel symbol, `name or module`name: a kernel variable (or
// function), whose address &`name is.
type KSym struct {
	Pos    source.Pos
	Module string // "" for any module
	Name   string
}

// String spells the symbol as written.
func (e *KSym) String() string { return e.Module + "`" + e.Name }

// MacroVar is $1, $target, $$1 (Name without the leading '$').
type MacroVar struct {
	Pos  source.Pos
	Name string
}

// AggVar is @name (Name without '@'; "" for the anonymous @).
type AggVar struct {
	Pos  source.Pos
	Name string
}

// Unary is a prefix operator: - + ! ~ * & ++ -- sizeof.
type Unary struct {
	Pos source.Pos
	Op  string
	X   Expr
}

// Postfix is x++ or x--.
type Postfix struct {
	Pos source.Pos // of the operator
	Op  string
	X   Expr
}

// Binary is x op y, including && || ^^ and the comma operator.
type Binary struct {
	Pos  source.Pos // of the operator
	Op   string
	X    Expr
	Y    Expr
	Next source.Pos // of what follows it: the line DTrace reports it at
}

// Assign is lhs op rhs where op is = or a compound assignment.
type Assign struct {
	Pos source.Pos // of the operator
	Op  string
	LHS Expr
	RHS Expr
}

// Cond is c ? t : f.
type Cond struct {
	Pos     source.Pos
	C, T, F Expr
}

// Call is fn(args).
type Call struct {
	Pos  source.Pos
	Fn   string
	Args []Expr
}

// Index is x[keys]: an associative array, an aggregation, args[n], or a
// C array or pointer subscript.
type Index struct {
	Pos  source.Pos // of '['
	X    Expr
	Keys []Expr
}

// Member is x.name or x->name (also self->name and this->name).
type Member struct {
	Pos   source.Pos // of the operator
	X     Expr
	Name  string
	Arrow bool
}

// TypeName is a C type as written in a cast or sizeof.
type TypeName struct {
	Pos  source.Pos
	Name string // base type words, e.g. "unsigned long", "struct foo", "string"
	Ptr  int    // number of '*'
}

// Cast is (type)x.
type Cast struct {
	Pos  source.Pos
	Type *TypeName
	X    Expr
	Next source.Pos // of what follows it: the line DTrace reports it at
}

// SizeofType is sizeof(type).
type SizeofType struct {
	Pos  source.Pos
	Type *TypeName
}

// OffsetOf is offsetof(type, member).
type OffsetOf struct {
	Pos    source.Pos
	Type   *TypeName
	Member string
}

// Xlate is xlate <TYPE> (x): x translated to TYPE by a translator.
type Xlate struct {
	Pos  source.Pos
	Type *TypeName
	X    Expr
}

// Paren is (x), kept so errors and printing can see it.
type Paren struct {
	Pos source.Pos
	X   Expr
}

func (e *IntLit) Start() source.Pos     { return e.Pos }
func (e *StrLit) Start() source.Pos     { return e.Pos }
func (e *KSym) Start() source.Pos       { return e.Pos }
func (e *Ident) Start() source.Pos      { return e.Pos }
func (e *MacroVar) Start() source.Pos   { return e.Pos }
func (e *AggVar) Start() source.Pos     { return e.Pos }
func (e *Unary) Start() source.Pos      { return e.Pos }
func (e *Postfix) Start() source.Pos    { return e.X.Start() }
func (e *Binary) Start() source.Pos     { return e.X.Start() }
func (e *Assign) Start() source.Pos     { return e.LHS.Start() }
func (e *Cond) Start() source.Pos       { return e.C.Start() }
func (e *Call) Start() source.Pos       { return e.Pos }
func (e *Index) Start() source.Pos      { return e.X.Start() }
func (e *Member) Start() source.Pos     { return e.X.Start() }
func (e *Cast) Start() source.Pos       { return e.Pos }
func (e *SizeofType) Start() source.Pos { return e.Pos }
func (e *Paren) Start() source.Pos      { return e.Pos }
func (e *Xlate) Start() source.Pos      { return e.Pos }
func (e *OffsetOf) Start() source.Pos   { return e.Pos }
