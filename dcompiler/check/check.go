// Package check is the D compiler's semantic pass. It matches each clause's
// probe descriptions against the providers, gathers the program's variables
// and aggregations with their types, types every expression, and rejects
// what DTrace rejects, with DTrace's messages.
package check

import (
	"errors"
	"strconv"
	"strings"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/lexer"
	"github.com/dstar-trace/dstar/dcompiler/printf"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/providers"
)

// Matcher finds the probes of a description (a providers.Registry).
type Matcher interface {
	Match(d providers.Desc) ([]*providers.Probe, error)
}

// Options are the inputs of checking that do not come from the source.
type Options struct {
	Probes       Matcher
	Macros       []string // $0, $1, ...: $0 is the script name
	Target       int      // $target, 0 when there is none
	StrSize      int      // bytes in a string buffer: the strsize option and the NUL
	AllowZero    bool     // -Z: descriptions may match no probes
	Destructive  bool     // -w
	DefaultArgs  bool     // -x defaultargs: missing $N are 0 / ""
	ArgRef       bool     // -x argref: arguments need not all be referenced
	StackFrames  int      // -x stackframes: stack( )'s default depth (20 when 0)
	UStackFrames int      // -x ustackframes: ustack( )'s default depth (100 when 0)
	Version      string   // -x version: the D version asked for ("" for the latest)
	MaxFrames    int      // -x maxframes: the deepest stack (when not 0), less deep ones asked for cut to it
	TupleRegs    int      // -x tregs: keys are at most one more (8 when 0)
	ScratchSize  int      // -x scratchsize: the bytes alloca( ) may take in a clause (256 when 0)
	// OptionProblem, when set, validates a #pragma D option's name and
	// value (nil when valid), reported at the pragma.
	OptionProblem func(name, value string) error
}

// Info is what checking learns about a program.
type Info struct {
	Prog    *ast.Program
	Opts    Options
	Clauses []*Clause
	// Probes lists every matched probe once, in order of first match.
	Probes []*providers.Probe
	// ClausesOf lists, per probe ID, the clauses that fire on it, in
	// program order; a clause appears once for each of its descriptions
	// that matches the probe, since DTrace makes an enabling of each
	// description, and each enabling runs the clause.
	ClausesOf map[int][]*Clause
	Globals   []*Var // global scalars and associative arrays
	Threads   []*Var // self-> variables
	Locals    []*Var // this-> variables
	Aggs      []*Agg
	Options   map[string]string // from #pragma D option
	// StmtsOf numbers, per probe ID, each entry of ClausesOf as DTrace
	// numbers its statements (dt_clause_N): one per description of each
	// clause, in program order.
	StmtsOf map[int][]int
	// Destructive says the program uses destructive actions (system,
	// raise, stop, chill, copyoutstr): dtrace(1) enables it only with -w.
	Destructive bool

	file *source.File // of the clause being checked, for errors

	globals  map[string]*Var
	typedefs map[string]*types.Type
	defining map[string]bool // the struct and union tags being laid out
	inlines  map[string]*Inline
	// inlineArrays are inlines with keys ("inline fileinfo_t fds[int fd]
	// = ...;"), expanded where they are indexed.
	inlineArrays map[string]*inlineArray
	threads      map[string]*Var
	locals       map[string]*Var
	allocaVars   map[[2]string]bool // variables assigned alloca( ) pointers, by scope and name
	aggs         map[string]*Agg
	xlators      map[string][]*translator // by the name of the struct they build
	argExprs     map[string]ast.Expr      // translated probe arguments, parsed
	stackOK      map[*ast.Call]bool       // stack( ) calls where a stack may be
	ksyms        map[string]*KSymbol      // kernel symbols named, as written

	// xlateLater, while set, makes a translator whose operand cannot be
	// typed yet (it names a variable a clause declares by assignment:
	// fds[self->fd].fi_name) wait for the variables to be declared;
	// xlateWaited says one did.
	xlateLater, xlateWaited bool

	// created holds the global scalars that exist at the point of the
	// program being checked, once ordered is set: as in DTrace, one is
	// made by its declaration or its first assignment in program order,
	// and reading it before then is an error.
	created map[string]bool
	ordered bool

	// typed and consts remember TypeOf's and ConstInt's answers once the
	// program is checked (nil before: checking declares as it types).
	typed  map[typedKey]*types.Type
	consts map[ast.Expr]constVal
}

// Clause is a clause with its matched probes.
type Clause struct {
	*ast.Clause
	Index  int
	Probes []*providers.Probe
	// Matched counts the probes each description matched, summed over
	// the descriptions, as dtrace's "matched N probes" does.
	Matched int
	// stmts lists, per probe ID, the statement numbers of the clause's
	// descriptions that matched it.
	stmts map[int][]int
}

// Var is a variable: a global, an associative array (Keys not nil), a
// thread-local or a clause-local.
type Var struct {
	Name  string
	Scope Scope
	Type  *types.Type
	Keys  []*types.Type // key types of an associative array
	Pos   source.Pos
}

// AggFunc is an aggregating function.
type AggFunc string

// Agg is an aggregation: its function and the types of its keys.
type Agg struct {
	Name  string // "" for @
	ID    int    // order of first use, from 0
	Func  AggFunc
	Keys  []*types.Type
	Pos   source.Pos
	Calls []*ast.Call // every call that feeds it
	// Params are the constant parameters of lquantize (base, limit, step)
	// and llquantize (factor, low, high, steps).
	Params []int64
}

// aggFuncs lists the aggregating functions and how many arguments they
// take (at least, at most).
var aggFuncs = map[string][2]int{
	"count": {0, 0}, "sum": {1, 1}, "avg": {1, 1}, "min": {1, 1}, "max": {1, 1},
	"stddev": {1, 1}, "quantize": {1, 2}, "lquantize": {3, 5}, "llquantize": {5, 6},
}

// Check checks prog.
func Check(prog *ast.Program, opts Options) (*Info, error) {
	if opts.StrSize == 0 {
		opts.StrSize = 256 + 1
	}
	in := &Info{
		Prog: prog, Opts: opts,
		ClausesOf: map[int][]*Clause{},
		StmtsOf:   map[int][]int{},
		Options:   map[string]string{},
		globals:   map[string]*Var{},
		typedefs:  map[string]*types.Type{},
		inlines:   map[string]*Inline{},
		threads:   map[string]*Var{},
		locals:    map[string]*Var{},
		aggs:      map[string]*Agg{},
	}
	// Address families and link types, as DTrace's net.d library
	// defines them.
	for name, v := range map[string]uint64{"AF_INET": 2, "AF_INET6": 10, "ARPHRD_ETHER": 1, "ARPHRD_INFINIBAND": 32} {
		in.inlines[name] = &Inline{Name: name, Type: types.IntT, Init: &ast.IntLit{Pos: source.NoPos, Val: v, Text: strconv.FormatUint(v, 10)}}
	}
	// As DTrace's "inline long NULL = 0;".
	in.inlines["NULL"] = &Inline{Name: "NULL", Type: types.LongT, Init: &ast.IntLit{Pos: source.NoPos, Text: "0"}}
	// The register names uregs[] takes, as DTrace's regs.d defines them.
	for name, v := range providers.UserRegNames() {
		in.inlines[name] = &Inline{Name: name, Type: types.IntT, Init: &ast.IntLit{Pos: source.NoPos, Val: uint64(v), Text: strconv.Itoa(v)}}
	}
	for _, pr := range prog.Pragmas {
		in.file = pr.File
		if err := in.pragma(pr); err != nil {
			return nil, err
		}
	}
	if err := in.argsReferenced(); err != nil {
		return nil, err
	}
	if err := in.decls(); err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	stmt := 0
	for i, c := range prog.Clauses {
		cl := &Clause{Clause: c, Index: i, stmts: map[int][]int{}}
		in.file = c.File
		for _, d := range c.Descs {
			probes, err := in.match(d)
			if err != nil {
				return nil, err
			}
			cl.Matched += len(probes)
			for _, p := range probes {
				if cl.stmts[p.ID] = append(cl.stmts[p.ID], stmt); len(cl.stmts[p.ID]) == 1 {
					cl.Probes = append(cl.Probes, p)
				}
			}
			stmt++
		}
		in.Clauses = append(in.Clauses, cl)
		for _, p := range cl.Probes {
			if !seen[p.ID] {
				seen[p.ID] = true
				in.Probes = append(in.Probes, p)
			}
			for _, n := range cl.stmts[p.ID] {
				in.ClausesOf[p.ID] = append(in.ClausesOf[p.ID], cl)
				in.StmtsOf[p.ID] = append(in.StmtsOf[p.ID], n)
			}
		}
	}
	var later []*Clause
	in.xlateLater = true
	for _, cl := range in.Clauses {
		in.file = cl.File
		in.xlateWaited = false
		if err := in.translateClause(cl); err != nil {
			return nil, err
		}
		if in.xlateWaited {
			later = append(later, cl)
		}
	}
	in.created = map[string]bool{}
	for name := range in.globals {
		in.created[name] = true
	}
	in.predeclare()
	in.xlateLater = false
	if len(later) > 0 {
		for _, cl := range later {
			in.file = cl.File
			if err := in.translateClause(cl); err != nil {
				return nil, err
			}
		}
		in.predeclare()
	}
	in.ordered = true
	for _, cl := range in.Clauses {
		in.file = cl.File
		if err := in.clause(cl); err != nil {
			return nil, err
		}
	}
	in.ordered = false
	if err := in.unusedPragmas(); err != nil {
		return nil, err
	}
	in.typed, in.consts = map[typedKey]*types.Type{}, map[ast.Expr]constVal{}
	return in, nil
}

// unusedPragmas reports a #pragma D attributes or binding that names an
// identifier the program never defines: DTrace keeps such a pragma for
// the identifier's definition, and when none comes, calls it unused.
func (in *Info) unusedPragmas() error {
	for _, p := range in.Prog.Pragmas {
		f := strings.Fields(p.Text)
		if len(f) < 4 || f[0] != "D" || f[1] != "attributes" && f[1] != "binding" || f[3] == "provider" {
			continue
		}
		name := f[3]
		if in.defined(name) || in.threads[name] != nil || in.locals[name] != nil || in.aggs[name] != nil {
			continue
		}
		in.file = p.File
		return in.errorf(p.Pos, "D_PRAGMA_UNUSED", "unused #pragma %s", f[1])
	}
	return nil
}

func (in *Info) errorf(p source.Pos, tag, format string, args ...any) error {
	return source.Errorf(in.file, p, tag, format, args...)
}

// errorAt is errorf at p whose message is numbered by the line of next,
// as DTrace numbers an operator's errors (when next is known).
func (in *Info) errorAt(p, next source.Pos, tag, format string, args ...any) error {
	e := source.Errorf(in.file, p, tag, format, args...)
	e.LineAt = next
	return e
}

// PragmaOption parses the text after "#pragma" as "D option name[=value]".
func PragmaOption(text string) (name, value string, ok bool) {
	f := strings.Fields(text)
	if len(f) != 3 || f[0] != "D" || f[1] != "option" {
		return "", "", false
	}
	name, value, _ = strings.Cut(f[2], "=")
	return name, value, true
}

// pragma handles "#pragma D option name[=value]"; other pragmas DTrace
// ignores are ignored.
func (in *Info) pragma(p *ast.Pragma) error {
	f := strings.Fields(p.Text)
	if len(f) == 0 || f[0] != "D" {
		return nil
	}
	if len(f) < 2 {
		return in.errorf(p.Pos, "D_PRAGMA_MALFORM", "malformed #pragma D directive")
	}
	switch f[1] {
	case "option":
		if len(f) != 3 {
			return in.errorf(p.Pos, "D_PRAGMA_MALFORM", "malformed #pragma option <option>=<val>")
		}
		name, val, hasVal := strings.Cut(f[2], "=")
		if in.Opts.OptionProblem != nil {
			if err := in.Opts.OptionProblem(name, val); err != nil {
				if hasVal {
					return in.errorf(p.Pos, "D_PRAGMA_OPTSET", "failed to set option '%s' to '%s': %v", name, val, err)
				}
				return in.errorf(p.Pos, "D_PRAGMA_OPTSET", "failed to set option '%s': %v", name, err)
			}
		}
		in.Options[name] = val
	case "attributes", "binding", "depends_on":
	default:
		return in.errorf(p.Pos, "D_PRAGMA_INVAL", "invalid control directive: #pragma D %s", f[1])
	}
	return nil
}

// argsReferenced applies DTrace's rule that the last macro argument given
// must be referenced somewhere (unless -x argref): a forgotten argument is
// usually a mistake.
func (in *Info) argsReferenced() error {
	last := len(in.Opts.Macros) - 1
	if last < 1 || in.Opts.ArgRef {
		return nil
	}
	want := strconv.Itoa(last)
	refs := append([]string(nil), in.Prog.Macros...)
	for _, c := range in.Prog.Clauses {
		for _, d := range c.Descs {
			refs = append(refs, descMacros(d.Text)...)
		}
	}
	for _, r := range refs {
		if strings.TrimPrefix(r, "$") == want {
			return nil
		}
	}
	f := in.Prog.Files[len(in.Prog.Files)-1]
	in.file = f
	return in.errorf(source.Pos(len(strings.TrimRight(f.Text, "\n"))), "D_MACRO_UNUSED",
		"extraneous argument '%s' ($%d is not referenced)", in.Opts.Macros[last], last)
}

// descMacros returns the macro variables in a probe description's text,
// named as the lexer names them (without the first '$').
func descMacros(text string) []string {
	var names []string
	for i := 0; i < len(text); i++ {
		if text[i] != '$' {
			continue
		}
		j := i + 1
		if j < len(text) && text[j] == '$' {
			j++
		}
		for j < len(text) && lexer.IsIdent(text[j]) {
			j++
		}
		names = append(names, text[i+1:j])
		i = j - 1
	}
	return names
}

// expandDesc replaces the macro variables in a probe description with
// their values, as DTrace's lexer does inside descriptions.
func (in *Info) expandDesc(d *ast.ProbeDesc) (string, error) {
	if !strings.Contains(d.Text, "$") {
		return d.Text, nil
	}
	var b strings.Builder
	text := d.Text
	for _, name := range descMacros(text) {
		i := strings.Index(text, "$"+name)
		b.WriteString(text[:i])
		text = text[i+1+len(name):]
		if n, err := strconv.Atoi(strings.TrimPrefix(name, "$")); err == nil && n < len(in.Opts.Macros) {
			b.WriteString(in.Opts.Macros[n]) // the argument's text, as typed
			continue
		}
		v, s, isStr, err := in.Macro(&ast.MacroVar{Pos: d.Pos, Name: name})
		if err != nil {
			return "", err
		}
		if isStr {
			b.WriteString(s)
		} else {
			b.WriteString(strconv.FormatInt(v, 10))
		}
	}
	b.WriteString(text)
	return b.String(), nil
}

// match expands macros in a description and finds its probes.
func (in *Info) match(d *ast.ProbeDesc) ([]*providers.Probe, error) {
	text, err := in.expandDesc(d)
	if err != nil {
		return nil, err
	}
	desc, err := providers.ParseDesc(text)
	if err != nil {
		return nil, in.errorf(d.Pos, "D_PDESC_INVAL", "%v", err)
	}
	var probes []*providers.Probe
	why := ""
	if in.Opts.Probes != nil {
		probes, err = in.Opts.Probes.Match(desc)
		var np *providers.NoProbeError
		var te *providers.TagError
		if errors.As(err, &np) {
			probes, why = nil, " ("+np.Reason+")"
		} else if errors.As(err, &te) {
			return nil, in.errorf(d.Pos, te.Tag, "%v", err)
		} else if err != nil {
			return nil, in.errorf(d.Pos, "D_PDESC_INVAL", "%v", err)
		}
	}
	if len(probes) == 0 && !in.Opts.AllowZero {
		return nil, &NoMatchError{Desc: desc.String(), Err: in.errorf(d.Pos, "D_PDESC_ZERO", "probe description %s does not match any probes%s", desc, why)}
	}
	return probes, nil
}

// NoMatchError is a description that matched nothing; dtrace(1) reports it
// as an invalid probe specifier.
type NoMatchError struct {
	Desc string
	Err  error
}

func (e *NoMatchError) Error() string { return e.Err.Error() }
func (e *NoMatchError) Unwrap() error { return e.Err }

// clause checks a clause's predicate and statements against its first probe
// (every probe of a clause shares the clause's variables and aggregations).
func (in *Info) clause(cl *Clause) error {
	var pr *providers.Probe
	if len(cl.Probes) > 0 {
		pr = cl.Probes[0]
	}
	if err := in.speculationRules(cl); err != nil {
		return inRegion(err, "action list")
	}
	envs := []*Env{}
	for _, p := range cl.Probes {
		envs = append(envs, &Env{Probe: p})
	}
	if pr == nil {
		// A clause matching nothing under -Z is still checked for errors.
		envs = append(envs, &Env{})
	}
	for _, env := range envs {
		// The body first, as DTrace cooks it: a variable the clause's
		// body creates may be read in its predicate. When the body reads
		// a variable that only the predicate creates, the predicate
		// goes first and the body is checked again.
		bodyErr := in.stmts(cl.Body, env)
		if bodyErr != nil && (cl.Pred == nil || !undefinedVar(bodyErr)) {
			return inRegion(bodyErr, "action list")
		}
		if cl.Pred != nil {
			t, err := in.TypeOf(cl.Pred, env)
			// An array's name is its address elsewhere, but an array
			// is no predicate in DTrace.
			if id, ok := Unparen(cl.Pred).(*ast.Ident); ok && in.globals[id.Name] != nil && in.globals[id.Name].Type.Kind == types.Array {
				t = in.globals[id.Name].Type
			}
			if err == nil && !t.IsScalar() {
				// At the clause's end, where DTrace types its predicate.
				at := cl.End
				if at == 0 {
					at = cl.Pred.Start()
				}
				err = in.errorf(at, "D_PRED_SCALAR", "predicate result must be of scalar type")
			}
			if err != nil {
				return inRegion(err, "predicate")
			}
		}
		if bodyErr != nil {
			if err := in.stmts(cl.Body, env); err != nil {
				return inRegion(err, "action list")
			}
		}
	}
	return nil
}

// undefinedVar says err is DTrace's error for a variable not yet known.
func undefinedVar(err error) bool {
	var e *source.Error
	return errors.As(err, &e) && (e.Tag == "D_IDENT_UNDEF" || e.Tag == "D_VAR_UNDEF")
}

// Clause flags: what a clause's actions so far have done, in the order
// dtrace's code generator meets them (dt_cg_clsflags).
type clsFlags struct{ spec, comm, drec, agg bool }

// speculationRules enforces DTrace's rules on the order of actions in a
// clause: speculate() comes first, once, and is followed by neither an
// aggregation, nor exit(), nor a destructive action; commit() comes before
// any data-recording action and is followed by none.
func (in *Info) speculationRules(cl *Clause) error {
	var f clsFlags
	return in.actionOrder(cl.Body, &f)
}

func (in *Info) actionOrder(list []ast.Stmt, f *clsFlags) error {
	for _, s := range list {
		switch s := s.(type) {
		case *ast.IfStmt:
			// Only one branch runs: each starts from the flags before
			// the if, and what either did holds after it.
			g, h := *f, *f
			if err := in.actionOrder(s.Then, &g); err != nil {
				return err
			}
			if err := in.actionOrder(s.Else, &h); err != nil {
				return err
			}
			*f = clsFlags{g.spec || h.spec, g.comm || h.comm, g.drec || h.drec, g.agg || h.agg}
		case *ast.ExprStmt:
			if err := in.actionStmt(s.X, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// actionStmt applies one statement to the clause's flags.
func (in *Info) actionStmt(x ast.Expr, f *clsFlags) error {
	if a, ok := x.(*ast.Assign); ok {
		if _, isAgg := AggTarget(a.LHS); isAgg {
			if f.comm {
				return in.errorf(a.Pos, "D_AGG_COMM", "aggregating actions may not follow commit( )")
			}
			if f.spec {
				return in.errorf(a.Pos, "D_AGG_SPEC", "aggregating actions may not follow speculate( )")
			}
			f.agg = true
			return nil
		}
	}
	// copyout() and copyoutstr() are destructive wherever they are called.
	var err error
	ast.Inspect(x, func(e ast.Expr) {
		if c, ok := e.(*ast.Call); ok && err == nil && (c.Fn == "copyout" || c.Fn == "copyoutstr") {
			err = in.dataAction(c, true, f)
		}
	})
	if err != nil {
		return err
	}
	call, ok := x.(*ast.Call)
	if !ok {
		return nil
	}
	switch call.Fn {
	case "speculate":
		if f.spec {
			return in.errorf(call.Pos, "D_SPEC_SPEC", "speculate( ) may not follow speculate( )")
		}
		if f.comm {
			return in.errorf(call.Pos, "D_SPEC_COMM", "speculate( ) may not follow commit( )")
		}
		if f.drec || f.agg {
			return in.errorf(call.Pos, "D_SPEC_DREC", "speculate( ) may not follow data-recording action(s)")
		}
		f.spec = true
	case "commit", "discard":
		// dtrace allows these after speculate(); dstar's speculative
		// buffer does not hold them, so it refuses the clause.
		if f.spec {
			return in.errorf(call.Pos, "D_ACT_SPEC", "%s( ) may not follow speculate( )", call.Fn)
		}
		if call.Fn == "commit" {
			if f.drec || f.agg {
				return in.errorf(call.Pos, "D_COMM_DREC", "commit( ) may not follow data-recording action(s)")
			}
			f.comm = true
		}
	case "exit":
		if f.spec {
			return in.errorf(call.Pos, "D_EXIT_SPEC", "exit( ) may not follow speculate( )")
		}
		return in.dataAction(call, false, f)
	case "stop", "raise", "system", "freopen", "breakpoint", "panic", "chill":
		return in.dataAction(call, true, f)
	case "printf", "trace", "tracemem", "printa", "clear", "trunc", "normalize", "denormalize",
		"stack", "ustack", "jstack", "sym", "func", "mod", "usym", "ufunc", "umod", "uaddr",
		"ftruncate", "setopt", "pcap", "print":
		return in.dataAction(call, false, f)
	}
	return nil
}

// dataAction applies a data-recording action, destructive or not.
func (in *Info) dataAction(call *ast.Call, destructive bool, f *clsFlags) error {
	if destructive && f.spec {
		return in.errorf(call.Pos, "D_ACT_SPEC", "destructive actions may not follow speculate( )")
	}
	if f.comm {
		return in.errorf(call.Pos, "D_DREC_COMM", "data-recording actions may not follow commit( )")
	}
	f.drec = true
	return nil
}

// inRegion notes where in a clause err was found.
func inRegion(err error, region string) error {
	if se, ok := err.(*source.Error); ok && se.Region == "" {
		se.Region = region
	}
	return err
}

func (in *Info) stmts(list []ast.Stmt, env *Env) error {
	for _, s := range list {
		switch s := s.(type) {
		case *ast.ExprStmt:
			if err := in.aggStmt(s.X, env); err != nil {
				return err
			}
			in.allowStack(s.X)
			if _, err := in.TypeOf(s.X, env); err != nil {
				return err
			}
		case *ast.IfStmt:
			if t, err := in.TypeOf(s.Cond, env); err != nil {
				return err
			} else if t.Kind == types.Float || t.Kind == types.Struct {
				return in.errorf(s.Cond.Start(), "D_OP_SCALAR", "if condition must be of scalar type")
			}
			if err := in.stmts(s.Then, env); err != nil {
				return err
			}
			if err := in.stmts(s.Else, env); err != nil {
				return err
			}
		}
	}
	return nil
}

// aggStmt rejects an aggregation standing alone as a statement, "@a;" or
// "@a[k];", which dtrace reports as having no effect. A bare "@a" that
// was never assigned is instead an unknown name (TypeOf says so).
func (in *Info) aggStmt(x ast.Expr, env *Env) error {
	x = Unparen(x)
	av, ok := AggTarget(x)
	if !ok {
		return nil
	}
	if _, bare := x.(*ast.AggVar); bare && in.aggs[av.Name] == nil {
		return nil
	}
	for _, k := range AggKeys(x) {
		if _, err := in.TypeOf(k, env); err != nil {
			return err
		}
	}
	return in.errorf(av.Pos, "D_AGG_NULL", "expression has null effect: @%s", av.Name)
}

// Env is where an expression is typed: the probe it fires on.
type Env struct {
	Probe *providers.Probe
	// Decl says the expression is a declaration's (an inline's value),
	// where an xlate may stand alone: its uses are translated.
	Decl bool
}

// Global returns the global variable name, or nil.
func (in *Info) Global(name string) *Var { return in.globals[name] }

// Agg returns the aggregation name, or nil.
func (in *Info) Agg(name string) *Agg { return in.aggs[name] }

// Builtin describes a built-in variable.
type Builtin struct {
	Type *types.Type
}

// Builtins are D's built-in variables in this slice.
var Builtins = map[string]*types.Type{
	"pid": types.PidT, "tid": types.PidT, "ppid": types.PidT,
	"uid": types.UidT, "gid": types.UidT,
	"execname":  types.StringT(16),
	"timestamp": types.Uint64T, "vtimestamp": types.Uint64T, "walltimestamp": types.Int64T,
	"cpu": types.UintT, "errno": types.IntT,
	"probeprov": types.StringT(0), "probemod": types.StringT(0),
	"probefunc": types.StringT(0), "probename": types.StringT(0),
	"epid": types.UintT, "id": types.UintT,
	"curthread": types.VoidPtr, // typed from the kernel's BTF when used
	"curcpu":    types.VoidPtr, // typed as sched.d's cpuinfo_t * when used
	// The process's working and root directories, strsize long.
	"cwd": types.StringT(-1), "root": types.StringT(-1),
	// The stack's built-ins (codegen/stackvars.go).
	"caller": {Kind: types.Int, Size: 8, Name: "uintptr_t"}, "ucaller": types.Uint64T,
	"stackdepth": {Kind: types.Int, Size: 4, Name: "uint32_t"}, "ustackdepth": {Kind: types.Int, Size: 4, Name: "uint32_t"},
}

// ArgIndex returns n for "argN" (N in 0..9), or -1.
func ArgIndex(name string) int {
	if len(name) == 4 && strings.HasPrefix(name, "arg") && name[3] >= '0' && name[3] <= '9' {
		return int(name[3] - '0')
	}
	return -1
}

// ProbeString is the value of probeprov/probemod/probefunc/probename.
func ProbeString(name string, p *providers.Probe) string {
	if p == nil {
		return ""
	}
	switch name {
	case "probeprov":
		return p.Provider
	case "probemod":
		return p.Module
	case "probefunc":
		return p.Function
	case "probename":
		return p.Name
	}
	return ""
}

// Macro resolves a macro variable to an integer or string constant.
func (in *Info) Macro(m *ast.MacroVar) (val int64, str string, isStr bool, err error) {
	name := m.Name
	if strings.HasPrefix(name, "$") {
		n, e := strconv.Atoi(name[1:])
		if e != nil {
			return 0, "", false, in.errorf(m.Pos, "D_MACRO_UNDEF", "macro argument $%s is not defined", name)
		}
		if n >= len(in.Opts.Macros) {
			if in.Opts.DefaultArgs {
				return 0, "", true, nil
			}
			return 0, "", false, in.errorf(m.Pos, "D_MACRO_UNDEF", "macro argument $%s is not defined", name)
		}
		return 0, in.Opts.Macros[n], true, nil
	}
	switch name {
	case "target":
		return int64(in.Opts.Target), "", false, nil
	case "pid":
		return int64(selfPid()), "", false, nil
	case "ppid":
		return int64(selfPpid()), "", false, nil
	case "uid":
		return int64(selfUid()), "", false, nil
	case "gid":
		return int64(selfGid()), "", false, nil
	case "euid":
		return int64(selfEuid()), "", false, nil
	case "egid":
		return int64(selfEgid()), "", false, nil
	case "pgid":
		return int64(selfPgid()), "", false, nil
	case "sid":
		return int64(selfSid()), "", false, nil
	}
	n, e := strconv.Atoi(name)
	if e != nil {
		return 0, "", false, in.errorf(m.Pos, "D_MACRO_UNDEF", "macro variable $%s is not defined", name)
	}
	if n >= len(in.Opts.Macros) {
		if in.Opts.DefaultArgs {
			return 0, "", false, nil
		}
		return 0, "", false, in.errorf(m.Pos, "D_MACRO_UNDEF", "macro argument $%d is not defined", n)
	}
	arg := in.Opts.Macros[n]
	if v, e := strconv.ParseInt(arg, 0, 64); e == nil {
		return v, "", false, nil
	}
	if n == 0 {
		return 0, arg, true, nil
	}
	if isIdentifier(arg) {
		return 0, arg, true, nil
	}
	if str, ok := stringArg(arg); ok {
		return 0, str, true, nil
	}
	return 0, "", false, in.errorf(m.Pos, "D_MACRO_UNUSED", "macro argument $%d must be an integer or identifier: %s", n, arg)
}

// stringArg reads a macro argument written as a D string literal, as the
// guide passes one to an interpreter file ('"a string argument"'), with
// its escapes expanded.
func stringArg(arg string) (string, bool) {
	if len(arg) < 2 || arg[0] != '"' {
		return "", false
	}
	lx := lexer.New(source.NewFile("", arg))
	t, err := lx.Next()
	if err != nil || t.Kind != lexer.String || lx.Offset() != len(arg) {
		return "", false
	}
	return t.Text, true
}

func isIdentifier(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// Format parses and checks a printf format against its argument types,
// with DTrace's messages and tags.
func (in *Info) Format(call *ast.Call, argTypes []*types.Type) (*printf.Format, error) {
	lit, ok := Unparen(call.Args[0]).(*ast.StrLit)
	if !ok {
		return nil, in.errorf(call.Args[0].Start(), "D_PRINTF_ARG_FMT", "%s( ) argument #1 is incompatible with prototype:\n\tprototype: string constant\n\t argument: %s", call.Fn, "expression")
	}
	f, err := printf.Parse(lit.Val)
	if err == nil {
		// With a process to trace (-c, -p), %A takes a plain address:
		// the consumer names it in the process that fired the probe.
		err = f.CheckWith(printf.CheckOptions{Func: call.Fn, ExactLen: true, Target: in.Opts.Target != 0}, argTypesFor(argTypes))
	}
	if err != nil {
		tag := "D_UNKNOWN"
		if pe, ok := err.(*printf.Error); ok {
			tag = pe.Tag
		}
		return nil, in.errorf(call.Pos, tag, "%s", err.Error())
	}
	for _, c := range f.Conversions() {
		switch c.Kind {
		case printf.ArgNone, printf.ArgInt, printf.ArgChar, printf.ArgString, printf.ArgPointer, printf.ArgSymbol, printf.ArgUserSymbol, printf.ArgTime, printf.ArgStack, printf.ArgFloat:
		default:
			return nil, in.errorf(call.Pos, "D_UNKNOWN", "%s( ) conversion #%d (%%%s) is not supported yet", call.Fn, c.Index, c.Name)
		}
	}
	return f, nil
}

// argTypesFor describes D types as the printf checker sees them.
func argTypesFor(ts []*types.Type) []printf.ArgType {
	out := make([]printf.ArgType, len(ts))
	for i, t := range ts {
		a := printf.ArgType{Name: t.Name, Size: t.Size, Signed: t.Signed}
		switch t.Kind {
		case types.String:
			a.Class, a.Size = printf.ClassString, 0
		case types.Pointer:
			a.Class = printf.ClassPointer
		case types.Int:
			a.Class = printf.ClassInt
		case types.Float:
			a.Class = printf.ClassFloat
		case types.Stack:
			a.Class = printf.ClassStack
		case types.Sym:
			a.Class = printf.ClassSymAddr
			if t.User {
				a.Class = printf.ClassUSymAddr
			}
		}
		out[i] = a
	}
	return out
}

// Unparen strips the parentheses around an expression.
func Unparen(e ast.Expr) ast.Expr {
	for {
		p, ok := e.(*ast.Paren)
		if !ok {
			return e
		}
		e = p.X
	}
}
