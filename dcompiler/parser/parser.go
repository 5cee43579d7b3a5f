// Package parser builds a D syntax tree (package ast) from source text.
//
// It is a recursive-descent parser with C's operator precedence and
// associativity, plus D's ^^ (between || and &&). Errors use DTrace's words,
// "syntax error near X", at the offending token.
package parser

import (
	"strconv"
	"strings"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/lexer"
	"github.com/dstar-trace/dstar/dcompiler/source"
)

// Parse parses a whole D program.
func Parse(f *source.File) (*ast.Program, error) { return ParseKnown(f, nil, nil) }

// ParseKnown parses a whole D program whose typedef names may include
// those of typedefs (the names of files parsed before it, such as the
// library's psinfo_t); the typedefs f declares are added to it.
// kernelType, when not nil, says whether a name is one of the kernel's
// typedefs (u32, bool, dev_t), which D programs use as types too.
func ParseKnown(f *source.File, typedefs map[string]bool, kernelType func(string) bool) (*ast.Program, error) {
	return ParseFile(f, typedefs, kernelType, false)
}

// ParseFile is ParseKnown under -x pspec, which reads a top-level word
// that could begin a declaration or a probe description ("int*") as a
// description (as does "#pragma D option pspec" in the file).
func ParseFile(f *source.File, typedefs map[string]bool, kernelType func(string) bool, pspec bool) (*ast.Program, error) {
	p := &parser{f: f, lx: lexer.New(f), typedefs: typedefs, kernelType: kernelType, pspec: pspec}
	prog := &ast.Program{Files: []*source.File{p.f}}
	if err := p.program(prog); err != nil {
		// What came before the error, whose declarations DTrace would
		// have made (and reported an error of) by then.
		return &ast.Program{Files: prog.Files, Decls: prog.Decls, Pragmas: p.pragmas}, err
	}
	prog.Macros = p.macros
	return prog, nil
}

// ParseExpr parses a single D expression (used by tests and tools).
func ParseExpr(f *source.File) (ast.Expr, error) {
	p := &parser{f: f, lx: lexer.New(f)}
	if err := p.next(); err != nil {
		return nil, err
	}
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok.Kind != lexer.EOF {
		return nil, p.syntaxError()
	}
	return x, nil
}

type parser struct {
	f        *source.File
	lx       *lexer.Lexer
	tok      lexer.Token
	inPred   bool            // a '/' may close the predicate
	item     int             // where the clause or declaration being parsed starts
	tags     map[string]bool // struct, union and enum tags defined so far ("struct s")
	pragmas  []*ast.Pragma   // #pragma D lines, in order
	controls map[source.Pos]bool
	typedefs map[string]bool       // names typedef has declared
	pending  []*ast.Decl           // declarations the last one implied ("int x, y;", a typedef of a definition)
	anon     int                   // untagged definitions so far
	macros   []string              // macro variables named so far
	names    map[string]source.Pos // where each name was first met
	// kernelType says whether a name is a kernel typedef. It is asked only
	// where a type would stand, since answering loads the kernel's BTF.
	kernelType func(string) bool
	pspec      bool // -x pspec
	// nest counts the expressions and if statements being parsed inside
	// one another, height also the operators of the chains ("a + b + c")
	// being built: both bound the recursion of the parser and of the
	// passes after it (see MaxNest).
	nest, height int
}

// MaxNest bounds how deeply expressions and if statements nest
// (parentheses, unary operators, ?:, assignments, else if), and
// MaxHeight how deep an expression's tree is, counting each operator of a
// chain such as "a + b + c" as a level. The parser and the passes after
// it recurse on the tree: without a bound, a generated program of a
// million parentheses would exhaust the stack rather than fail cleanly.
const (
	MaxNest   = 10000
	MaxHeight = 100000
)

// maxNest and maxHeight are the bounds in force: fuzzing lowers them so
// that small inputs reach them.
var maxNest, maxHeight = MaxNest, MaxHeight

// enter goes one level deeper at pos, failing past the bounds; leave
// comes back up.
func (p *parser) enter(pos source.Pos) error {
	p.nest++
	p.height++
	return p.tooDeep(pos)
}

func (p *parser) leave() { p.nest--; p.height-- }

func (p *parser) tooDeep(pos source.Pos) error {
	if p.nest > maxNest {
		return source.Errorf(p.f, pos, "D_SYNTAX", "expression nested too deeply: more than %d levels", maxNest)
	}
	if p.height > maxHeight {
		return source.Errorf(p.f, pos, "D_SYNTAX", "expression too deep: more than %d levels of operators", maxHeight)
	}
	return nil
}

// startsDecl reports whether a top-level word begins a declaration rather
// than a probe description. As in DTrace, a word that could be either
// ("int*", which may start "int*x;" or the description "int*") is a
// type unless pspec is set; a ':' or a character no type name has makes
// it a description.
func (p *parser) startsDecl(word string) bool {
	if i := strings.IndexByte(word, '*'); i > 0 && !strings.ContainsAny(word, ":-.?!`") && !p.pspecSet() {
		word = word[:i]
	}
	switch word {
	case "self", "this", "inline", "typedef", "static", "extern", "translator", "register", "auto":
		return true
	}
	return typeWords[word] || p.typedefs[word]
}

// decl parses a declaration, the current token being its first word.
// pspecSet says -x pspec, or a "#pragma D option pspec" so far, is on.
func (p *parser) pspecSet() bool {
	on := p.pspec
	for _, pr := range p.pragmas {
		if f := strings.Fields(pr.Text); len(f) == 3 && f[0] == "D" && f[1] == "option" {
			if name, val, _ := strings.Cut(f[2], "="); name == "pspec" {
				on = val == "" || val == "1" || strings.EqualFold(val, "on") || strings.EqualFold(val, "yes") || strings.EqualFold(val, "true")
			}
		}
	}
	return on
}

func (p *parser) decl() (*ast.Decl, error) {
	d := &ast.Decl{File: p.f, Pos: p.tok.Pos}
	if p.tok.Kind == lexer.Ident && p.tok.Text == "translator" {
		return p.translator(d)
	}
	class := false // a storage class was given: self, this, static or extern
	for p.tok.Kind == lexer.Ident {
		switch p.tok.Text {
		case "self", "this", "static", "extern":
			if class {
				return nil, source.Errorf(p.f, p.tok.Pos, "D_DECL_CLASS", "only one storage class allowed in a declaration")
			}
			class = true
			if p.tok.Text == "self" || p.tok.Text == "this" {
				d.Storage = p.tok.Text
			}
			d.Extern = p.tok.Text == "extern"
		case "register", "auto":
			// C's storage classes that D has no use for.
			return nil, source.Errorf(p.f, p.tok.Pos, "D_DECL_BADCLASS", "specified storage class not appropriate in D")
		case "inline":
			d.Inline = true
		case "typedef":
			d.Typedef = true
		default:
			goto typ
		}
		if err := p.next(); err != nil {
			return nil, err
		}
	}
typ:
	var tn *ast.TypeName
	if (class || d.Typedef) && p.tok.Kind == lexer.Ident && !p.isType(p.tok) &&
		(p.nameOnly() || (d.Extern || d.Typedef) && !p.kernelTypeAt(declShape)) {
		// "self x;", "extern x;": a storage class and no type declares
		// an int, as in C; so does "typedef x" (and what follows the
		// name in "typedef unknown_t x;" is then an error).
		tn = &ast.TypeName{Pos: p.tok.Pos, Name: "int"}
	} else {
		if !p.isType(p.tok) && !p.kernelTypeAt(declShape) {
			return nil, p.syntaxError()
		}
		var err error
		if tn, err = p.typeName(); err != nil {
			return nil, err
		}
	}
	d.Type = tn
	if p.tok.Is("{") && tn.Ptr == 0 {
		return p.typeDef(d)
	}
	if p.tok.Is(";") && !isTagName(tn.Name) {
		// "extern int;": a type and nothing to declare of it. A tag
		// alone ("struct s;") declares the tag.
		return nil, source.Errorf(p.f, p.tok.Pos, "D_DECL_USELESS", "useless declaration")
	}
	if p.tok.Kind == lexer.Sym {
		return nil, source.Errorf(p.f, p.tok.Pos, "D_DECL_SCOPE", "D scoping operator may not be used in a declaration name (%s)", p.tok.Text)
	}
	if p.tok.Is("(") && !d.Inline {
		// "int *(*fp)(void);": a pointer to a function.
		if err := p.next(); err != nil {
			return nil, err
		}
		for p.tok.Is("*") {
			if err := p.next(); err != nil {
				return nil, err
			}
		}
		if p.tok.Kind != lexer.Ident {
			return nil, p.syntaxError()
		}
		d.Name, d.Func = p.tok.Text, true
		if err := p.next(); err != nil {
			return nil, err
		}
		if err := p.expect(")"); err != nil {
			return nil, err
		}
		if !p.tok.Is("(") {
			return nil, p.syntaxError()
		}
		if err := p.params(); err != nil {
			return nil, err
		}
		if !p.tok.Is(";") {
			return nil, p.syntaxError()
		}
		return d, nil
	}
	if p.tok.Kind != lexer.Ident {
		return nil, p.syntaxError()
	}
	d.Name = p.tok.Text
	if err := p.next(); err != nil {
		return nil, err
	}
	if p.tok.Is("(") && !d.Inline {
		// A function's prototype: D declares it and can do nothing
		// with it.
		d.Func = true
		if err := p.params(); err != nil {
			return nil, err
		}
		if !p.tok.Is(";") {
			return nil, p.syntaxError()
		}
		return d, nil
	}
	if err := p.subscript(d); err != nil {
		return nil, err
	}
	// An extern array may have any dimensions, or none: it only
	// describes a kernel symbol.
	for d.Extern && p.tok.Is("[") {
		var more ast.Decl
		if err := p.subscript(&more); err != nil {
			return nil, err
		}
	}
	if d.Inline {
		if err := p.expect("="); err != nil {
			return nil, err
		}
		init, err := p.assign()
		if err != nil {
			return nil, err
		}
		d.Init = init
	}
	if d.Typedef {
		p.addTypedef(d.Name)
	}
	// "int x, *y;": more variables (or typedefs) of the base type, each
	// with its own stars and subscript ("int a[int], b[5];").
	for p.tok.Is(",") && !d.Inline {
		ptr, err := p.declaratorStars()
		if err != nil {
			return nil, err
		}
		if p.tok.Kind != lexer.Ident {
			return nil, p.syntaxError()
		}
		more := *d
		more.Pos, more.Name, more.Dim, more.Keys = p.tok.Pos, p.tok.Text, nil, nil
		more.Type = &ast.TypeName{Pos: d.Type.Pos, Name: d.Type.Name, Ptr: ptr}
		if more.Typedef {
			p.addTypedef(more.Name)
		}
		if err := p.next(); err != nil {
			return nil, err
		}
		if err := p.subscript(&more); err != nil {
			return nil, err
		}
		for d.Extern && p.tok.Is("[") {
			var dim ast.Decl
			if err := p.subscript(&dim); err != nil {
				return nil, err
			}
		}
		p.pending = append(p.pending, &more)
	}
	if !p.tok.Is(";") {
		return nil, p.syntaxError()
	}
	return d, nil
}

// subscript parses what may follow a declared name in brackets: the key
// types of an associative array ("[string, int]"), or the dimension of a
// fixed-size array ("[5]"), a constant expression.
func (p *parser) subscript(d *ast.Decl) error {
	if !p.tok.Is("[") {
		return nil
	}
	if err := p.next(); err != nil {
		return err
	}
	if p.tok.Is("...") {
		return source.Errorf(p.f, p.tok.Pos, "D_DECL_PROTO_VARARGS", "array prototype may not use a variable-length argument list")
	}
	if !p.tok.Is("]") && !p.isType(p.tok) && !p.kernelTypeAt(keyShape) && !d.Inline {
		dim, err := p.cond()
		if err != nil {
			return err
		}
		d.Dim = dim
		return p.expect("]")
	}
	err := p.list("]", func() error {
		if !p.isType(p.tok) && !p.kernelTypeAt(keyShape) {
			return p.syntaxError()
		}
		k, err := p.typeName()
		if err != nil {
			return err
		}
		d.Keys = append(d.Keys, k)
		// An inline array names its keys.
		if d.Inline {
			if p.tok.Kind != lexer.Ident {
				return p.syntaxError()
			}
			d.Params = append(d.Params, p.tok.Text)
			return p.next()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if d.Keys == nil {
		d.Keys = []*ast.TypeName{}
	}
	return nil
}

// params parses a function prototype's parameter list, "(int, char *)",
// "(void)" or "(int, ...)", the current token being "(", checking it as
// DTrace does; the parameters declare nothing.
func (p *parser) params() error {
	if err := p.next(); err != nil { // '('
		return err
	}
	n, void := 0, false
	for !p.tok.Is(")") {
		n++
		if p.tok.Is("...") {
			if err := p.next(); err != nil {
				return err
			}
			break
		}
		if p.tok.Kind == lexer.Ident {
			switch p.tok.Text {
			case "static", "extern", "self", "this", "inline", "typedef", "register", "auto":
				return source.Errorf(p.f, p.tok.Pos, "D_DECL_PARMCLASS", "inappropriate storage class for function or associative array parameter")
			}
		}
		if !p.isType(p.tok) && !p.kernelTypeAt(declShape) {
			return p.syntaxError()
		}
		tn, err := p.typeName()
		if err != nil {
			return err
		}
		name := ""
		if p.tok.Kind == lexer.Ident {
			name = p.tok.Text
			if tn.Name == "void" && tn.Ptr == 0 {
				return source.Errorf(p.f, p.tok.Pos, "D_DECL_PROTO_NAME", "void parameter may not have a name: %s", name)
			}
			if err := p.next(); err != nil {
				return err
			}
		}
		void = void || tn.Name == "void" && tn.Ptr == 0
		if p.tok.Is("[") {
			var pd ast.Decl
			if err := p.subscript(&pd); err != nil {
				return err
			}
			if pd.Keys != nil {
				return source.Errorf(p.f, p.tok.Pos, "D_DECL_PROTO_TYPE", "function prototype may not use parameter of type dynamic variable: %s, parameter #%d", name, n)
			}
		}
		if !p.tok.Is(",") {
			break
		}
		if err := p.next(); err != nil {
			return err
		}
	}
	if void && n > 1 {
		return source.Errorf(p.f, p.tok.Pos, "D_DECL_PROTO_VOID", "void must be sole parameter")
	}
	return p.expect(")")
}

// declaratorStars reads past a comma between declarators and counts the
// stars before the next name.
func (p *parser) declaratorStars() (int, error) {
	ptr := 0
	if err := p.next(); err != nil { // ','
		return 0, err
	}
	for p.tok.Is("*") {
		ptr++
		if err := p.next(); err != nil {
			return 0, err
		}
	}
	return ptr, nil
}

// addTypedef makes name a type name for the rest of the parse.
func (p *parser) addTypedef(name string) {
	if p.typedefs == nil {
		p.typedefs = map[string]bool{}
	}
	p.typedefs[name] = true
}

// translator parses "translator OUT < IN PARAM > { member = expr; ... };",
// the current token being "translator".
func (p *parser) translator(d *ast.Decl) (*ast.Decl, error) {
	x := &ast.Translator{Pos: p.tok.Pos}
	if err := p.next(); err != nil {
		return nil, err
	}
	out, err := p.xlateType()
	if err != nil {
		return nil, err
	}
	x.Out = out
	if p.tok.Is("{") && p.tags[out.Name] && out.Ptr == 0 {
		// "translator struct s {": a second definition of struct s.
		return nil, source.Errorf(p.f, p.tok.Pos, "D_DECL_TYPERED", "type redeclared: %s", out.Name)
	}
	if p.tok.Is("(") {
		// An abstract declarator: the output type is a function's, and
		// the input type in angle brackets must follow it.
		for depth := 0; ; {
			if p.tok.Is("(") {
				depth++
			} else if p.tok.Is(")") {
				depth--
			} else if p.tok.Kind == lexer.EOF {
				return nil, p.syntaxError()
			}
			if err := p.next(); err != nil {
				return nil, err
			}
			if depth == 0 {
				break
			}
		}
		if !p.tok.Is("<") {
			return nil, p.syntaxError()
		}
		return nil, source.Errorf(p.f, p.tok.Pos, "D_XLATE_SOU", "translator output type must be a struct or union")
	}
	if err := p.expect("<"); err != nil {
		return nil, err
	}
	in, err := p.xlateType()
	if err != nil {
		return nil, err
	}
	x.In = in
	if p.tok.Kind != lexer.Ident {
		return nil, p.syntaxError()
	}
	x.Param = p.tok.Text
	if err := p.next(); err != nil {
		return nil, err
	}
	if err := p.expect(">"); err != nil {
		return nil, err
	}
	if !p.tok.Is("{") {
		return nil, p.syntaxError()
	}
	if err := p.next(); err != nil {
		return nil, err
	}
	for !p.tok.Is("}") {
		if p.tok.Kind != lexer.Ident {
			return nil, p.syntaxError()
		}
		m := &ast.XlateMember{Pos: p.tok.Pos, Name: p.tok.Text}
		if err := p.next(); err != nil {
			return nil, err
		}
		if err := p.expect("="); err != nil {
			return nil, err
		}
		v, err := p.assign()
		if err != nil {
			return nil, err
		}
		m.X = v
		if err := p.expect(";"); err != nil {
			return nil, err
		}
		x.Members = append(x.Members, m)
	}
	if err := p.next(); err != nil { // '}'
		return nil, err
	}
	if !p.tok.Is(";") {
		return nil, p.syntaxError()
	}
	x.End = p.tok.Pos
	d.Xlator = x
	return d, nil
}

// xlateType parses the type of a translator or of xlate < >: a type name,
// or an identifier the checker will resolve (a typedef of another file).
func (p *parser) xlateType() (*ast.TypeName, error) {
	if p.isType(p.tok) {
		return p.typeName()
	}
	if p.tok.Kind != lexer.Ident {
		return nil, p.syntaxError()
	}
	p.addTypedef(p.tok.Text) // it can only be a type here
	return p.typeName()
}

// xlate parses "xlate < TYPE > ( expr )", the current token being "xlate".
func (p *parser) xlate() (ast.Expr, error) {
	x := &ast.Xlate{Pos: p.tok.Pos}
	if err := p.next(); err != nil {
		return nil, err
	}
	if err := p.expect("<"); err != nil {
		return nil, err
	}
	tn, err := p.xlateType()
	if err != nil {
		return nil, err
	}
	x.Type = tn
	if err := p.expect(">"); err != nil {
		return nil, err
	}
	if !p.tok.Is("(") {
		return nil, p.syntaxError()
	}
	if err := p.next(); err != nil {
		return nil, err
	}
	v, err := p.expr()
	if err != nil {
		return nil, err
	}
	x.X = v
	if !p.tok.Is(")") {
		return nil, p.syntaxError()
	}
	return x, p.next()
}

// typeDef parses the body of "struct NAME { ... };", "union NAME { ... };"
// or "enum NAME { A, B = 2 };".
func (p *parser) typeDef(d *ast.Decl) (*ast.Decl, error) {
	kind, name, _ := strings.Cut(d.Type.Name, " ")
	if kind != "struct" && kind != "union" && kind != "enum" {
		return nil, p.syntaxError()
	}
	// "typedef struct [tag] { ... } name_t;" is the definition, then a
	// typedef of it. A definition without a tag takes the typedef's
	// name as its tag, which is what messages then call it.
	def, err := p.typeBody(kind, name, d.Pos)
	if err != nil {
		return nil, err
	}
	d.Def = def
	if name != "" {
		if p.tags == nil {
			p.tags = map[string]bool{}
		}
		p.tags[kind+" "+name] = true
	}
	if p.isType(p.tok) {
		// "struct a { ... } struct b { ...": a missing ';' makes two
		// types of one declaration.
		return nil, source.Errorf(p.f, p.tok.Pos, "D_DECL_COMBO", "invalid type combination")
	}
	if d.Typedef {
		if p.tok.Kind != lexer.Ident {
			return nil, p.syntaxError()
		}
		if name == "" {
			name = p.tok.Text
			def.Name = name
		}
		d.Typedef = false
		p.pending = append(p.pending, &ast.Decl{File: d.File, Pos: p.tok.Pos, Typedef: true, Name: p.tok.Text,
			Type: &ast.TypeName{Pos: d.Pos, Name: kind + " " + name}})
		p.addTypedef(p.tok.Text)
		if err := p.next(); err != nil {
			return nil, err
		}
	} else if p.tok.Kind == lexer.Ident || p.tok.Is("*") {
		// "struct [tag] { ... } x[5], *y;": the definition, then variables
		// of it. One without a tag gets one no name can spell.
		if name == "" {
			p.anon++
			name = "<anon" + strconv.Itoa(p.anon) + ">"
			def.Name = name
		}
		for {
			ptr := 0
			for ; p.tok.Is("*"); ptr++ {
				if err := p.next(); err != nil {
					return nil, err
				}
			}
			if p.tok.Kind != lexer.Ident {
				return nil, p.syntaxError()
			}
			v := &ast.Decl{File: d.File, Pos: p.tok.Pos, Storage: d.Storage, Name: p.tok.Text,
				Type: &ast.TypeName{Pos: d.Pos, Name: kind + " " + name, Ptr: ptr}}
			if err := p.next(); err != nil {
				return nil, err
			}
			if err := p.subscript(v); err != nil {
				return nil, err
			}
			p.pending = append(p.pending, v)
			if !p.tok.Is(",") {
				break
			}
			if err := p.next(); err != nil {
				return nil, err
			}
		}
	} else if name == "" {
		return nil, p.syntaxError()
	}
	if !p.tok.Is(";") {
		return nil, p.syntaxError()
	}
	return d, nil
}

// typeBody parses "{ members }" or "{ enumerators }", stopping after the
// closing brace.
func (p *parser) typeBody(kind, name string, pos source.Pos) (*ast.TypeDef, error) {
	def := &ast.TypeDef{Pos: pos, Kind: kind, Name: name}
	if err := p.next(); err != nil { // '{'
		return nil, err
	}
	if p.tok.Is("}") {
		// D's grammar, as C's, wants one member or enumerator at least.
		return nil, p.syntaxError()
	}
	for !p.tok.Is("}") {
		if kind == "enum" {
			if p.tok.Kind != lexer.Ident {
				return nil, p.syntaxError()
			}
			item := &ast.EnumItem{Pos: p.tok.Pos, Name: p.tok.Text}
			if err := p.next(); err != nil {
				return nil, err
			}
			if p.tok.Is("=") {
				if err := p.next(); err != nil {
					return nil, err
				}
				v, err := p.cond()
				if err != nil {
					return nil, err
				}
				item.Value = v
			}
			def.Items = append(def.Items, item)
			item.Next = p.tok.Pos
			if p.tok.Is(",") {
				if err := p.next(); err != nil {
					return nil, err
				}
			} else if !p.tok.Is("}") {
				return nil, p.syntaxError()
			}
			continue
		}
		if !p.isType(p.tok) && !p.kernelTypeAt(declShape) {
			return nil, p.syntaxError()
		}
		mt, err := p.typeName()
		if err != nil {
			return nil, err
		}
		var inner *ast.TypeDef
		if (mt.Name == "struct" || mt.Name == "union") && p.tok.Is("{") {
			// An anonymous "union { ... } x;".
			if inner, err = p.typeBody(mt.Name, "", mt.Pos); err != nil {
				return nil, err
			}
		} else if mt.Name == "enum" && p.tok.Is("{") {
			// An anonymous "enum { A, B } e;": its enumerators are
			// the program's; its type gets a name no one can spell.
			p.anon++
			mt = &ast.TypeName{Pos: mt.Pos, Name: "enum <anon" + strconv.Itoa(p.anon) + ">"}
			if inner, err = p.typeBody("enum", mt.Name[len("enum "):], mt.Pos); err != nil {
				return nil, err
			}
		} else if kind, tag, _ := strings.Cut(mt.Name, " "); p.tok.Is("{") && mt.Ptr == 0 && tag != "" &&
			(kind == "struct" || kind == "union" || kind == "enum") {
			// "enum colors { ... } e;": a tagged definition in place,
			// whose tag, as in C, is the whole program's.
			if inner, err = p.typeBody(kind, tag, mt.Pos); err != nil {
				return nil, err
			}
		}
		if p.tok.Is("(") {
			// "int (*fp)();", "int (*afp[2])();": a pointer to a
			// function (or an array of them), which D holds as a
			// void *.
			m, err := p.funcPtrMember(mt)
			if err != nil {
				return nil, err
			}
			def.Members = append(def.Members, m)
			if err := p.expect(";"); err != nil {
				return nil, err
			}
			continue
		}
		if p.tok.Kind != lexer.Ident && !p.tok.Is(":") {
			return nil, p.syntaxError()
		}
		// "int x, *y, z[4];": each name after a comma has the base type
		// with its own stars and array.
		for {
			m := &ast.Member2{Pos: p.tok.Pos, Type: mt, Def: inner}
			if p.tok.Kind == lexer.Ident {
				m.Name = p.tok.Text
				if err := p.next(); err != nil {
					return nil, err
				}
			}
			if p.tok.Is("(") && m.Name != "" {
				// "int f();": a function is no member a struct can
				// hold, as void is not.
				return nil, source.Errorf(p.f, m.Pos, "D_DECL_VOIDOBJ", "cannot have void member: %s", m.Name)
			}
			if p.tok.Is(":") {
				// A bit-field: "int a : 3;", or unnamed padding "int : 2;".
				if err := p.next(); err != nil {
					return nil, err
				}
				w, err := p.cond()
				if err != nil {
					return nil, err
				}
				m.Bits = w
			} else if m.Name == "" {
				return nil, p.syntaxError()
			}
			if p.tok.Is("[") {
				if err := p.next(); err != nil {
					return nil, err
				}
				if p.tok.Kind != lexer.Int || p.tok.Val == 0 || p.tok.Val > 1<<20 {
					return nil, p.syntaxError()
				}
				m.Len = int(p.tok.Val)
				if err := p.next(); err != nil {
					return nil, err
				}
				if err := p.expect("]"); err != nil {
					return nil, err
				}
			}
			def.Members = append(def.Members, m)
			if !p.tok.Is(",") {
				break
			}
			ptr, err := p.declaratorStars()
			if err != nil {
				return nil, err
			}
			if p.tok.Kind != lexer.Ident {
				return nil, p.syntaxError()
			}
			mt = &ast.TypeName{Pos: mt.Pos, Name: mt.Name, Ptr: ptr}
		}
		if err := p.expect(";"); err != nil {
			return nil, err
		}
	}
	if err := p.next(); err != nil { // '}'
		return nil, err
	}
	return def, nil
}

// funcPtrMember parses a member "(*name)(params)" or "(*name[N])(params)"
// of a struct or union, the current token being its "(".
func (p *parser) funcPtrMember(mt *ast.TypeName) (*ast.Member2, error) {
	if err := p.next(); err != nil {
		return nil, err
	}
	if !p.tok.Is("*") {
		return nil, p.syntaxError()
	}
	for p.tok.Is("*") {
		if err := p.next(); err != nil {
			return nil, err
		}
	}
	if p.tok.Kind != lexer.Ident {
		return nil, p.syntaxError()
	}
	m := &ast.Member2{Pos: p.tok.Pos, Name: p.tok.Text, Type: &ast.TypeName{Pos: mt.Pos, Name: "void", Ptr: 1}}
	if err := p.next(); err != nil {
		return nil, err
	}
	if p.tok.Is("[") {
		if err := p.next(); err != nil {
			return nil, err
		}
		if p.tok.Kind != lexer.Int || p.tok.Val == 0 || p.tok.Val > 1<<20 {
			return nil, p.syntaxError()
		}
		m.Len = int(p.tok.Val)
		if err := p.next(); err != nil {
			return nil, err
		}
		if err := p.expect("]"); err != nil {
			return nil, err
		}
	}
	if err := p.expect(")"); err != nil {
		return nil, err
	}
	if !p.tok.Is("(") {
		return nil, p.syntaxError()
	}
	return m, p.params()
}

// isTagName reports whether a type's name is a struct, union or enum tag.
func isTagName(name string) bool {
	kind, _, _ := strings.Cut(name, " ")
	return kind == "struct" || kind == "union" || kind == "enum"
}

// isType reports whether t starts a type name.
func (p *parser) isType(t lexer.Token) bool {
	return t.Kind == lexer.Ident && (typeWords[t.Text] || p.typedefs[t.Text])
}

// kernelTypeAt reports whether the current token is a kernel typedef's
// name in a place shaped for a type: where a declaration's type stands
// (followed by a name or a star), or in parentheses, as a cast or sizeof
// has it ("(u32)x", "(dev_t *)p"). A parenthesised name with no star is a
// cast only when an operand or a + - * & follows: "(x) == 1" is not asked
// about. A name found is a type for the rest of the parse. The scan
// position is left as it was.
// nameOnly reports whether the current identifier is followed by what
// ends a declarator (";", "," or "["), so that it names a variable.
func (p *parser) nameOnly() bool {
	t := p.tok
	save := p.lx.Offset()
	defer func() { p.lx.Reset(save); p.tok = t }()
	if p.next() != nil {
		return false
	}
	return p.tok.Is(";") || p.tok.Is(",") || p.tok.Is("[")
}

func (p *parser) kernelTypeAt(shape typeShape) bool {
	t := p.tok
	if t.Kind != lexer.Ident || p.kernelType == nil || p.isType(t) {
		return false
	}
	save := p.lx.Offset()
	defer func() { p.lx.Reset(save); p.tok = t }()
	if p.next() != nil {
		return false
	}
	switch shape {
	case declShape:
		if p.tok.Kind != lexer.Ident && !p.tok.Is("*") {
			return false
		}
	case keyShape:
		if !p.tok.Is("]") && !p.tok.Is(",") && !p.tok.Is("*") {
			return false
		}
	default:
		stars := 0
		for ; p.tok.Is("*"); stars++ {
			if p.next() != nil {
				return false
			}
		}
		if !p.tok.Is(")") {
			return false
		}
		if shape == castShape && stars == 0 {
			if p.next() != nil {
				return false
			}
			switch p.tok.Kind {
			case lexer.Ident, lexer.Int, lexer.String, lexer.Macro:
			default:
				if !p.tok.Is("(") && !p.tok.Is("-") && !p.tok.Is("+") && !p.tok.Is("*") && !p.tok.Is("&") && !p.tok.Is("~") && !p.tok.Is("!") {
					return false
				}
			}
		}
	}
	if !p.kernelType(t.Text) {
		return false
	}
	p.addTypedef(t.Text)
	return true
}

// kernelTypeDecl reports whether the top-level word t begins a
// declaration of a kernel typedef's type ("u32 x;"): a probe description
// is never followed by a name or a star. The scan position is left after
// t, as NextOuter left it.
func (p *parser) kernelTypeDecl(t lexer.Token) bool {
	after := p.lx.Offset()
	defer p.lx.Reset(after)
	p.lx.Reset(int(t.Pos))
	if p.next() != nil || p.tok.Text != t.Text {
		return false
	}
	return p.kernelTypeAt(declShape)
}

// typeShape is where kernelTypeAt looks for a type.
type typeShape int

const (
	declShape   typeShape = iota // TYPE name, TYPE *name
	castShape                    // (TYPE) x, (TYPE *) x
	sizeofShape                  // sizeof (TYPE), sizeof (TYPE *)
	keyShape                     // [TYPE], [TYPE, ...]: an array's key types
)

// endsPredicate reports whether the current '/' closes a predicate: it does
// when what follows cannot continue an expression (as DTrace's lexer decides).
func (p *parser) endsPredicate() bool {
	switch p.lx.PeekByte() {
	case '{', 0, ';':
		return true
	}
	return false
}

// firstSeen reports whether t, a name, is one DTrace's lexer would look
// past: neither a type's, nor a keyword, nor met earlier in the program.
func (p *parser) firstSeen(t lexer.Token) bool {
	if typeWords[t.Text] || p.typedefs[t.Text] || declKeywords[t.Text] || exprKeywords[t.Text] {
		return false
	}
	first, ok := p.names[t.Text]
	return !ok || first >= t.Pos
}

// exprKeywords are D's keywords that begin an expression or a statement.
var exprKeywords = map[string]bool{
	"sizeof": true, "stringof": true, "offsetof": true, "xlate": true, "self": true, "this": true,
	"if": true, "else": true,
}

// next advances to the next C-mode token, past control lines.
func (p *parser) next() error {
	for {
		t, err := p.lx.Next()
		if err != nil {
			return err
		}
		if t.Kind == lexer.Ident {
			if first, ok := p.names[t.Text]; !ok || t.Pos < first {
				if p.names == nil {
					p.names = map[string]source.Pos{}
				}
				p.names[t.Text] = t.Pos
			}
		}
		if t.Kind != lexer.Pragma {
			p.tok = t
			return nil
		}
		if err := p.control(t); err != nil {
			return err
		}
	}
}

// nextOuter is the lexer's NextOuter, past control lines.
func (p *parser) nextOuter() (lexer.Token, error) {
	for {
		t, err := p.lx.NextOuter()
		if err != nil || t.Kind != lexer.Pragma {
			return t, err
		}
		if err := p.control(t); err != nil {
			return t, err
		}
	}
}

func (p *parser) syntaxError() error {
	// DTrace's lexer counts parentheses and brackets, and names an
	// unbalanced one rather than the token it stopped at.
	if p.tok.Is(")") || p.tok.Is("]") {
		parens, bracks := p.nesting(int(p.tok.Pos))
		if p.tok.Is(")") && parens <= 0 || p.tok.Is("]") && bracks <= 0 {
			return source.Errorf(p.f, p.tok.Pos, "D_SYNTAX", "extra %s in input stream", p.tok.Text)
		}
	}
	if p.inPred && p.tok.Is("/") && p.endsPredicate() {
		parens, bracks := p.nesting(int(p.tok.Pos))
		switch {
		case parens > 0:
			return source.Errorf(p.f, p.afterSpace(p.tok.End), "D_SYNTAX", "closing ) expected in predicate before /")
		case bracks > 0:
			return source.Errorf(p.f, p.afterSpace(p.tok.End), "D_SYNTAX", "closing ] expected in predicate before /")
		}
	}
	if p.tok.Kind == lexer.EOF {
		return source.Errorf(p.f, p.tok.Pos, "D_SYNTAX", "syntax error near end of input")
	}
	text := p.tok.Text
	if p.tok.Kind == lexer.String {
		text = "\"" + p.tok.Text + "\""
	}
	if p.tok.Kind == lexer.Agg {
		text = "@" + text
	}
	if p.tok.Kind == lexer.Macro {
		text = "$" + text
	}
	if p.tok.Kind == lexer.Ident && p.firstSeen(p.tok) {
		// DTrace's lexer looks past a name it has not met before, to
		// tell a type from a variable, and puts back what it read: in
		// its message the name runs on to the end of its line.
		rest := p.f.Text[p.tok.Pos:]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[:nl]
		}
		text = rest
	}
	return source.Errorf(p.f, p.tok.Pos, "D_SYNTAX", "syntax error near \"%s\"", text)
}

// nesting counts the parentheses and brackets open before off, from the
// start of the clause or declaration.
func (p *parser) nesting(off int) (parens, bracks int) {
	lx := lexer.New(p.f)
	lx.Reset(p.item)
	for lx.Offset() < off {
		at := lx.Offset()
		t, err := lx.Next()
		if err != nil {
			lx.Reset(at + 1)
			continue
		}
		if t.Kind == lexer.EOF || int(t.Pos) >= off {
			break
		}
		switch {
		case t.Is("("):
			parens++
		case t.Is(")"):
			parens--
		case t.Is("["):
			bracks++
		case t.Is("]"):
			bracks--
		}
	}
	return parens, bracks
}

// lookahead is where DTrace's lexer is when its parser reduces what was
// just parsed: at the current token, or past the space after a '/' that
// closes a predicate.
func (p *parser) lookahead() source.Pos {
	if p.inPred && p.tok.Is("/") && p.endsPredicate() {
		return p.afterSpace(p.tok.End)
	}
	return p.tok.Pos
}

// afterSpace returns the offset of the first byte at or after off that is
// not white space: where DTrace's lexer is once it has looked past a '/'.
func (p *parser) afterSpace(off source.Pos) source.Pos {
	for int(off) < len(p.f.Text) && strings.IndexByte(" \t\n\r\f\v", p.f.Text[off]) >= 0 {
		off++
	}
	return off
}

// expect consumes operator op or fails with a syntax error.
func (p *parser) expect(op string) error {
	if !p.tok.Is(op) {
		return p.syntaxError()
	}
	return p.next()
}

func (p *parser) program(prog *ast.Program) error {
	for {
		t, err := p.nextOuter()
		if err != nil {
			return err
		}
		p.item = int(t.Pos)
		switch {
		case t.Kind == lexer.EOF:
			prog.Pragmas = p.pragmas
			return nil
		case t.Is(";"):
		case t.Kind == lexer.ProbeDesc && t.Text == "provider":
			p.lx.Reset(int(t.Pos))
			if err := p.next(); err != nil {
				return err
			}
			d, err := p.providerDef()
			if err != nil {
				return err
			}
			prog.Providers = append(prog.Providers, d)
		case t.Kind == lexer.ProbeDesc && (p.startsDecl(t.Text) || p.kernelTypeDecl(t)):
			p.lx.Reset(int(t.Pos))
			if err := p.next(); err != nil {
				return err
			}
			d, err := p.decl()
			if err != nil {
				return err
			}
			prog.Decls = append(prog.Decls, d)
			prog.Decls = append(prog.Decls, p.pending...)
			p.pending = nil
		case t.Kind == lexer.ProbeDesc:
			c, err := p.clause(t)
			if err != nil {
				return err
			}
			prog.Clauses = append(prog.Clauses, c)
		default:
			p.tok = t
			return p.syntaxError()
		}
	}
}

// providerDef parses "provider NAME { probe NAME(ARGS) [: (ARGS)]; ... }",
// the current token being "provider". "provider" is a keyword in D, so
// this is never a probe description. It ends at the '}'.
func (p *parser) providerDef() (*ast.ProviderDef, error) {
	d := &ast.ProviderDef{File: p.f, Pos: p.tok.Pos}
	if err := p.next(); err != nil {
		return nil, err
	}
	if p.tok.Kind != lexer.Ident {
		return nil, p.syntaxError()
	}
	d.Name = p.tok.Text
	if err := p.next(); err != nil {
		return nil, err
	}
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	for !p.tok.Is("}") {
		if p.tok.Kind != lexer.Ident || p.tok.Text != "probe" {
			return nil, p.syntaxError()
		}
		pd := &ast.ProbeDef{Pos: p.tok.Pos}
		if err := p.next(); err != nil {
			return nil, err
		}
		if p.tok.Kind != lexer.Ident {
			return nil, p.syntaxError()
		}
		pd.Name = p.tok.Text
		if err := p.next(); err != nil {
			return nil, err
		}
		args, err := p.probeArgs()
		if err != nil {
			return nil, err
		}
		pd.Args = args
		if p.tok.Is(":") {
			if err := p.next(); err != nil {
				return nil, err
			}
			if pd.XArgs, err = p.probeArgs(); err != nil {
				return nil, err
			}
		}
		if err := p.expect(";"); err != nil {
			return nil, err
		}
		d.Probes = append(d.Probes, pd)
	}
	return d, nil
}

// probeArgs parses a probe definition's "(TYPE [NAME], ...)", "()" or
// "(void)", and the token after it.
func (p *parser) probeArgs() ([]*ast.ProbeArg, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}
	var args []*ast.ProbeArg
	if p.tok.Kind == lexer.Ident && p.tok.Text == "void" && p.lx.PeekByte() == ')' {
		if err := p.next(); err != nil {
			return nil, err
		}
	}
	for !p.tok.Is(")") {
		if len(args) > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		if !p.isType(p.tok) && !p.kernelTypeAt(declShape) && !p.kernelTypeAt(sizeofShape) {
			return nil, p.syntaxError()
		}
		tn, err := p.typeName()
		if err != nil {
			return nil, err
		}
		a := &ast.ProbeArg{Type: tn}
		if p.tok.Kind == lexer.Ident {
			a.Name = p.tok.Text
			if err := p.next(); err != nil {
				return nil, err
			}
		}
		args = append(args, a)
	}
	return args, p.next()
}

// clause parses the rest of a clause whose first description is first.
func (p *parser) clause(first lexer.Token) (*ast.Clause, error) {
	c := &ast.Clause{File: p.f, Pos: first.Pos}
	c.Descs = append(c.Descs, &ast.ProbeDesc{Pos: first.Pos, Text: first.Text})
	var t lexer.Token
	var err error
	for {
		if t, err = p.nextOuter(); err != nil {
			return nil, err
		}
		if !t.Is(",") {
			break
		}
		if t, err = p.nextOuter(); err != nil {
			return nil, err
		}
		if t.Kind != lexer.ProbeDesc {
			p.tok = t
			return nil, p.syntaxError()
		}
		c.Descs = append(c.Descs, &ast.ProbeDesc{Pos: t.Pos, Text: t.Text})
	}
	if t.Is("/") {
		if err := p.next(); err != nil {
			return nil, err
		}
		p.inPred = true
		pred, err := p.expr()
		p.inPred = false
		if err != nil {
			return nil, err
		}
		if !p.tok.Is("/") {
			return nil, p.syntaxError()
		}
		c.Pred = pred
		end := p.afterSpace(p.tok.End)
		if t, err = p.nextOuter(); err != nil {
			return nil, err
		}
		if !t.Is("{") {
			return nil, source.Errorf(p.f, end, "D_SYNTAX", "expected actions { } following probe description and predicate")
		}
	}
	if t.Kind == lexer.EOF || t.Is(";") || !t.Is("{") && p.f.Name != "" {
		// A clause without an action list takes the default action,
		// but only in a description (-n): a file's clause needs one.
		if p.f.Name != "" {
			// DTrace's line is the (last) description's, even at the
			// end of the input; before ';', the ';'.
			at := c.Descs[len(c.Descs)-1].Pos
			if t.Is(";") {
				at = t.Pos
			}
			return nil, source.Errorf(p.f, at, "D_SYNTAX", "expected predicate and/or actions following probe description")
		}
		return c, nil
	}
	if !t.Is("{") {
		p.tok = t
		return nil, p.syntaxError()
	}
	if err := p.next(); err != nil {
		return nil, err
	}
	body, err := p.stmts()
	if err != nil {
		return nil, err
	}
	c.Body = body
	c.End = p.tok.Pos
	return c, nil
}

// stmts parses statements up to and including the closing '}'.
func (p *parser) stmts() ([]ast.Stmt, error) {
	var list []ast.Stmt
	for {
		switch {
		case p.tok.Is("}"):
			return list, nil
		case p.tok.Is(";"):
			if err := p.next(); err != nil {
				return nil, err
			}
			continue
		case p.tok.Kind == lexer.EOF:
			return nil, p.syntaxError()
		}
		s, err := p.stmt()
		if err != nil {
			return nil, err
		}
		list = append(list, s)
		// Statements are separated by ';'; the last may omit it.
		if p.tok.Is(";") {
			if err := p.next(); err != nil {
				return nil, err
			}
		} else if !p.tok.Is("}") {
			if _, isIf := s.(*ast.IfStmt); !isIf {
				return nil, p.syntaxError()
			}
		}
	}
}

func (p *parser) stmt() (ast.Stmt, error) {
	if p.tok.Kind == lexer.Ident && p.tok.Text == "if" {
		return p.ifStmt()
	}
	if p.isType(p.tok) {
		// D has no declarations in clauses: "int i = 0;" fails at "int".
		return nil, p.syntaxError()
	}
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	return &ast.ExprStmt{X: x}, nil
}

func (p *parser) ifStmt() (ast.Stmt, error) {
	s := &ast.IfStmt{Pos: p.tok.Pos}
	if err := p.enter(s.Pos); err != nil {
		return nil, err
	}
	defer p.leave()
	if err := p.next(); err != nil {
		return nil, err
	}
	if err := p.expect("("); err != nil {
		return nil, err
	}
	cond, err := p.expr()
	if err != nil {
		return nil, err
	}
	s.Cond = cond
	if err := p.expect(")"); err != nil {
		return nil, err
	}
	if s.Then, err = p.block(); err != nil {
		return nil, err
	}
	if p.tok.Kind == lexer.Ident && p.tok.Text == "else" {
		if err := p.next(); err != nil {
			return nil, err
		}
		if p.tok.Kind == lexer.Ident && p.tok.Text == "if" {
			e, err := p.ifStmt()
			if err != nil {
				return nil, err
			}
			s.Else = []ast.Stmt{e}
		} else if s.Else, err = p.block(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// block parses "{ stmts }" or a single statement.
func (p *parser) block() ([]ast.Stmt, error) {
	if p.tok.Is("{") {
		if err := p.next(); err != nil {
			return nil, err
		}
		list, err := p.stmts()
		if err != nil {
			return nil, err
		}
		return list, p.next()
	}
	s, err := p.stmt()
	if err != nil {
		return nil, err
	}
	if p.tok.Is(";") {
		return []ast.Stmt{s}, p.next()
	}
	return []ast.Stmt{s}, nil
}

// expr parses a comma expression.
func (p *parser) expr() (ast.Expr, error) {
	x, err := p.assign()
	if err != nil {
		return nil, err
	}
	for p.tok.Is(",") {
		pos := p.tok.Pos
		if err := p.next(); err != nil {
			return nil, err
		}
		y, err := p.assign()
		if err != nil {
			return nil, err
		}
		x = &ast.Binary{Pos: pos, Op: ",", X: x, Y: y}
	}
	return x, nil
}

var assignOps = map[string]bool{
	"=": true, "+=": true, "-=": true, "*=": true, "/=": true, "%=": true,
	"&=": true, "|=": true, "^=": true, "<<=": true, ">>=": true,
}

// assign parses an assignment (right-associative) or a conditional.
func (p *parser) assign() (ast.Expr, error) {
	x, err := p.cond()
	if err != nil {
		return nil, err
	}
	if p.tok.Kind == lexer.Op && assignOps[p.tok.Text] {
		op, pos := p.tok.Text, p.tok.Pos
		if err := p.enter(pos); err != nil {
			return nil, err
		}
		defer p.leave()
		if err := p.next(); err != nil {
			return nil, err
		}
		y, err := p.assign()
		if err != nil {
			return nil, err
		}
		return &ast.Assign{Pos: pos, Op: op, LHS: x, RHS: y}, nil
	}
	return x, nil
}

func (p *parser) cond() (ast.Expr, error) {
	c, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	if !p.tok.Is("?") {
		return c, nil
	}
	pos := p.tok.Pos
	if err := p.enter(pos); err != nil {
		return nil, err
	}
	defer p.leave()
	if err := p.next(); err != nil {
		return nil, err
	}
	t, err := p.assign()
	if err != nil {
		return nil, err
	}
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	f, err := p.cond()
	if err != nil {
		return nil, err
	}
	return &ast.Cond{Pos: pos, C: c, T: t, F: f}, nil
}

// levels lists binary operators from lowest to highest precedence.
var levels = [][]string{
	{"||"}, {"^^"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="},
	{"<", "<=", ">", ">="}, {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"},
}

func (p *parser) binary(level int) (ast.Expr, error) {
	if level == len(levels) {
		return p.unary()
	}
	x, err := p.binary(level + 1)
	if err != nil {
		return nil, err
	}
	chain := 0
	defer func() { p.height -= chain }()
	for p.tok.Kind == lexer.Op && contains(levels[level], p.tok.Text) {
		if p.inPred && p.tok.Text == "/" && p.endsPredicate() {
			break
		}
		op, pos := p.tok.Text, p.tok.Pos
		chain++
		p.height++
		if err := p.tooDeep(pos); err != nil {
			return nil, err
		}
		if err := p.next(); err != nil {
			return nil, err
		}
		y, err := p.binary(level + 1)
		if err != nil {
			return nil, err
		}
		x = &ast.Binary{Pos: pos, Op: op, X: x, Y: y, Next: p.lookahead()}
	}
	return x, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (p *parser) unary() (ast.Expr, error) {
	t := p.tok
	if err := p.enter(t.Pos); err != nil {
		return nil, err
	}
	defer p.leave()
	if t.Kind == lexer.Op {
		switch t.Text {
		case "-", "+", "!", "~", "*", "&", "++", "--":
			if err := p.next(); err != nil {
				return nil, err
			}
			x, err := p.unary()
			if err != nil {
				return nil, err
			}
			return &ast.Unary{Pos: t.Pos, Op: t.Text, X: x}, nil
		case "(":
			// A parenthesised type name makes a cast.
			save := p.lx.Offset()
			if err := p.next(); err != nil {
				return nil, err
			}
			if p.isType(p.tok) || p.kernelTypeAt(castShape) {
				tn, err := p.typeName()
				if err != nil {
					return nil, err
				}
				if err := p.expect(")"); err != nil {
					return nil, err
				}
				x, err := p.unary()
				if err != nil {
					return nil, err
				}
				return &ast.Cast{Pos: t.Pos, Type: tn, X: x, Next: p.lookahead()}, nil
			}
			p.lx.Reset(save)
			p.tok = t
		}
	}
	if t.Kind == lexer.Ident && (t.Text == "sizeof" || t.Text == "stringof") {
		return p.sizeof()
	}
	if t.Kind == lexer.Ident && t.Text == "offsetof" {
		return p.offsetof()
	}
	if t.Kind == lexer.Ident && t.Text == "xlate" {
		x, err := p.xlate()
		if err != nil {
			return nil, err
		}
		return p.postfixOf(x)
	}
	return p.postfix()
}

func (p *parser) sizeof() (ast.Expr, error) {
	t := p.tok
	if err := p.next(); err != nil {
		return nil, err
	}
	if p.tok.Is("(") && t.Text == "sizeof" {
		save, paren := p.lx.Offset(), p.tok
		if err := p.next(); err != nil {
			return nil, err
		}
		if p.isType(p.tok) || p.kernelTypeAt(sizeofShape) {
			tn, err := p.typeName()
			if err != nil {
				return nil, err
			}
			if err := p.expect(")"); err != nil {
				return nil, err
			}
			return &ast.SizeofType{Pos: t.Pos, Type: tn}, nil
		}
		p.lx.Reset(save)
		p.tok = paren
	}
	x, err := p.unary()
	if err != nil {
		return nil, err
	}
	return &ast.Unary{Pos: t.Pos, Op: t.Text, X: x}, nil
}

// offsetof parses "offsetof(TYPE, MEMBER)".
func (p *parser) offsetof() (ast.Expr, error) {
	e := &ast.OffsetOf{Pos: p.tok.Pos}
	if err := p.next(); err != nil {
		return nil, err
	}
	if err := p.expect("("); err != nil {
		return nil, err
	}
	if !p.isType(p.tok) {
		return nil, p.syntaxError()
	}
	tn, err := p.typeName()
	if err != nil {
		return nil, err
	}
	e.Type = tn
	if err := p.expect(","); err != nil {
		return nil, err
	}
	if p.tok.Kind != lexer.Ident {
		return nil, p.syntaxError()
	}
	e.Member = p.tok.Text
	if err := p.next(); err != nil {
		return nil, err
	}
	return e, p.expect(")")
}

// declKeywords are D's keywords that stand only at the start of a
// declaration, never in an expression.
var declKeywords = map[string]bool{
	"typedef": true, "inline": true, "extern": true, "static": true, "register": true,
	"auto": true, "translator": true, "provider": true,
}

// typeWords are the words that can start a type name.
var typeWords = map[string]bool{
	"char": true, "short": true, "int": true, "long": true, "signed": true,
	"unsigned": true, "void": true, "struct": true, "union": true, "enum": true,
	"string": true, "float": true, "double": true, "const": true, "volatile": true,
	"int8_t": true, "int16_t": true, "int32_t": true, "int64_t": true,
	"uint8_t": true, "uint16_t": true, "uint32_t": true, "uint64_t": true,
	"intptr_t": true, "uintptr_t": true, "size_t": true, "ssize_t": true,
	"pid_t": true, "uid_t": true, "gid_t": true, "id_t": true, "uchar_t": true,
	"ushort_t": true, "uint_t": true, "ulong_t": true, "u_longlong_t": true,
	"longlong_t": true, "ipaddr_t": true, "in_addr_t": true, "in6_addr_t": true,
}

// typeName parses base-type words and pointer stars.
func (p *parser) typeName() (*ast.TypeName, error) {
	tn := &ast.TypeName{Pos: p.tok.Pos}
	var words []string
	if p.tok.Kind == lexer.Ident && p.typedefs[p.tok.Text] {
		// A typedef name stands alone.
		words = append(words, p.tok.Text)
		if err := p.next(); err != nil {
			return nil, err
		}
	}
	for len(words) == 0 || !p.typedefs[words[0]] {
		if p.tok.Kind != lexer.Ident || !typeWords[p.tok.Text] {
			break
		}
		w := p.tok.Text
		if err := p.next(); err != nil {
			return nil, err
		}
		if w == "const" || w == "volatile" {
			continue
		}
		words = append(words, w)
		if w == "struct" || w == "union" || w == "enum" {
			if p.tok.Is("{") {
				break // an anonymous definition: the caller parses it
			}
			// A tag may be scoped to a module ("struct D`s", "struct
			// vmlinux`task_struct"), which the checker resolves.
			if p.tok.Kind != lexer.Ident && p.tok.Kind != lexer.Sym {
				return nil, p.syntaxError()
			}
			words = append(words, p.tok.Text)
			if err := p.next(); err != nil {
				return nil, err
			}
		}
	}
	if err := p.typeCombo(words, p.tok.Pos); err != nil {
		return nil, err
	}
	for p.tok.Is("*") {
		tn.Ptr++
		if err := p.next(); err != nil {
			return nil, err
		}
	}
	tn.Name = strings.Join(words, " ")
	return tn, nil
}

// typeCombo applies DTrace's rules to the words of a type: one base type
// (char, int, void, float, double, string, a tag or a typedef), and
// short, long, long long, signed and unsigned only where they fit it.
func (p *parser) typeCombo(words []string, pos source.Pos) error {
	var base string
	short, long, sign := 0, 0, 0
	for i := 0; i < len(words); i++ {
		switch w := words[i]; w {
		case "short":
			short++
		case "long":
			long++
		case "signed", "unsigned":
			sign++
		default:
			if base != "" {
				return source.Errorf(p.f, pos, "D_DECL_COMBO", "invalid type combination")
			}
			base = w
			if w == "struct" || w == "union" || w == "enum" {
				i++ // the tag
			}
		}
	}
	integer := base == "" || base == "char" || base == "int" || base == "void"
	floating := base == "float" || base == "double"
	switch {
	case long > 2 || short > 1 || sign > 1:
		return source.Errorf(p.f, pos, "D_DECL_COMBO", "invalid type combination")
	case base == "char" && short+long > 0:
		return source.Errorf(p.f, pos, "D_DECL_CHARATTR", "invalid type declaration: short and long may not be used with char type")
	case base == "void" && short+long+sign > 0:
		return source.Errorf(p.f, pos, "D_DECL_VOIDATTR", "invalid type declaration: attributes may not be used with void type")
	case !integer && sign > 0:
		return source.Errorf(p.f, pos, "D_DECL_SIGNINT", "invalid type declaration: signed and unsigned may only be used with integer type")
	case !integer && !floating && long > 0:
		return source.Errorf(p.f, pos, "D_DECL_LONGINT", "invalid type declaration: long and long long may only be used with integer or floating-point type")
	case short > 0 && long > 0, short > 0 && floating, base == "float" && long > 0, base == "double" && long > 1:
		// Words that fit their base but not each other: no such type.
		name := strings.Repeat("short ", short) + strings.Repeat("long ", long) + base
		return source.Errorf(p.f, pos, "D_UNKNOWN", "failed to resolve type %s: Unknown type name", name)
	}
	return nil
}

func (p *parser) postfix() (ast.Expr, error) {
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	return p.postfixOf(x)
}

// postfixOf parses the postfix operators that follow x.
func (p *parser) postfixOf(x ast.Expr) (ast.Expr, error) {
	for {
		t := p.tok
		switch {
		case t.Is("["):
			if err := p.next(); err != nil {
				return nil, err
			}
			keys, err := p.exprs("]")
			if err != nil {
				return nil, err
			}
			x = &ast.Index{Pos: t.Pos, X: x, Keys: keys}
		case t.Is("(") && isIdent(x):
			args, err := p.args()
			if err != nil {
				return nil, err
			}
			x = &ast.Call{Pos: x.Start(), Fn: x.(*ast.Ident).Name, Args: args}
		case t.Is("("):
			// C's grammar takes any postfix expression as a function
			// designator; D's functions all have names.
			if _, err := p.args(); err != nil {
				return nil, err
			}
			return nil, source.Errorf(p.f, x.Start(), "D_FUNC_IDENT", "function designator is not of function type")
		case t.Is(".") || t.Is("->"):
			if err := p.next(); err != nil {
				return nil, err
			}
			if p.tok.Kind != lexer.Ident {
				return nil, p.syntaxError()
			}
			x = &ast.Member{Pos: t.Pos, X: x, Name: p.tok.Text, Arrow: t.Text == "->"}
			if err := p.next(); err != nil {
				return nil, err
			}
		case t.Is("++") || t.Is("--"):
			if err := p.next(); err != nil {
				return nil, err
			}
			x = &ast.Postfix{Pos: t.Pos, Op: t.Text, X: x}
		default:
			return x, nil
		}
	}
}

func isIdent(x ast.Expr) bool { _, ok := x.(*ast.Ident); return ok }

// args parses "(a, b, ...)".
func (p *parser) args() ([]ast.Expr, error) {
	if err := p.next(); err != nil {
		return nil, err
	}
	return p.exprs(")")
}

// exprs parses "a, b, ...close" after the opening bracket.
func (p *parser) exprs(close string) ([]ast.Expr, error) {
	var xs []ast.Expr
	err := p.list(close, func() error {
		x, err := p.assign()
		xs = append(xs, x)
		return err
	})
	return xs, err
}

// list parses comma-separated items up to close, which it consumes.
func (p *parser) list(close string, item func() error) error {
	for !p.tok.Is(close) {
		if err := item(); err != nil {
			return err
		}
		if p.tok.Is(",") {
			if err := p.next(); err != nil {
				return err
			}
		} else if !p.tok.Is(close) {
			return p.syntaxError()
		}
	}
	return p.next()
}

func (p *parser) primary() (ast.Expr, error) {
	t := p.tok
	var x ast.Expr
	switch t.Kind {
	case lexer.Int:
		x = &ast.IntLit{Pos: t.Pos, Val: t.Val, Suffix: t.Suffix, Text: t.Text}
	case lexer.String:
		x = &ast.StrLit{Pos: t.Pos, Val: t.Text}
	case lexer.Ident:
		if declKeywords[t.Text] {
			// One of D's keywords that only begin a declaration
			// ("typedef" in a clause).
			return nil, p.syntaxError()
		}
		x = &ast.Ident{Pos: t.Pos, Name: t.Text}
	case lexer.Sym:
		mod, name, _ := strings.Cut(t.Text, "`")
		x = &ast.KSym{Pos: t.Pos, Module: mod, Name: name}
	case lexer.Macro:
		x = &ast.MacroVar{Pos: t.Pos, Name: t.Text}
		p.macros = append(p.macros, t.Text)
	case lexer.Agg:
		x = &ast.AggVar{Pos: t.Pos, Name: t.Text}
	case lexer.Op:
		if t.Text != "(" {
			return nil, p.syntaxError()
		}
		if err := p.next(); err != nil {
			return nil, err
		}
		inner, err := p.expr()
		if err != nil {
			return nil, err
		}
		if !p.tok.Is(")") {
			return nil, p.syntaxError()
		}
		x = &ast.Paren{Pos: t.Pos, X: inner}
	default:
		return nil, p.syntaxError()
	}
	return x, p.next()
}
