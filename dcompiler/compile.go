// Package dcompiler compiles D programs to BPF.
//
// The stages are packages of their own, run in pipeline order:
// lexer → parser (ast) → check (probes, symbols, types) → codegen (BPF
// instructions and map specs). Compile joins them.
package dcompiler

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/check"
	"github.com/dstar-trace/dstar/dcompiler/codegen"
	"github.com/dstar-trace/dstar/dcompiler/ktypes"
	"github.com/dstar-trace/dstar/dcompiler/parser"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/providers"
	"github.com/dstar-trace/dstar/stdlib"
)

// Providers is what the compiler needs of the providers: matching probe
// descriptions and emitting probe prologues (a *providers.Registry).
type Providers interface {
	check.Matcher
	codegen.Prologuer
}

// Options are a compilation's inputs besides the source.
type Options struct {
	Providers   Providers
	Macros      []string // $0 (the script name), $1, ...
	Target      int      // $target
	StrSize     int      // the strsize option: a string's most characters (256 when 0)
	BufSize     int
	AggSize     int
	DynVarSize  int
	NSpec       int
	AllowZero   bool // -Z
	Destructive bool // -w
	DefaultArgs bool
	ArgRef      bool // -x argref: arguments need not all be referenced
	Empty       bool // -x empty: a file may hold no clause or declaration
	PSpec       bool // -x pspec: "int*" at top level is a probe description
	// OnCPU, with CPU, is -x cpu: probes record only on that CPU.
	OnCPU bool
	CPU   int
	// -x stackframes and ustackframes: the default depths of stack( )
	// and ustack( ) (20 and 100 when 0).
	StackFrames, UStackFrames int
	// MaxFrames is -x maxframes: the deepest any stack is (when not 0).
	MaxFrames int
	// TupleRegs is -x tregs, which bounds a tuple's keys.
	TupleRegs int
	// ScratchSize is -x scratchsize (check.Options).
	ScratchSize int
	// LibDirs are -L directories: their .d files, in name order, join the
	// D library every program is compiled with.
	LibDirs []string
	// OptionProblem validates #pragma D option settings (check.Options).
	OptionProblem func(name, value string) error
	Version       string // -x version (check.Options)
}

// Program is a compiled D program.
type Program struct {
	Files []*source.File
	Info  *check.Info
	Code  *codegen.Output
}

// Compile compiles D source files as one program. Errors are
// *source.Error (with file, line and column) or *check.NoMatchError.
func Compile(files []*source.File, opts Options) (*Program, error) {
	tree := &ast.Program{}
	typedefs := map[string]bool{}
	lib, err := library(opts.LibDirs)
	if err != nil {
		return nil, err
	}
	for i, f := range append(lib, files...) {
		tree.Files = append(tree.Files, f)
		t, err := parser.ParseFile(f, typedefs, kernelTypedef, opts.PSpec && i >= len(lib))
		if err != nil {
			return nil, declaredFirst(tree, t, err, opts)
		}
		if i >= len(lib) && len(t.Clauses) == 0 && len(t.Decls) == 0 && !opts.Empty {
			// As dtrace: a file of nothing but comments and pragmas is
			// an error, reported where it ends.
			return nil, source.Errorf(f, source.Pos(len(f.Text)), "D_EMPTY", "empty D program translation unit")
		}
		tree.Clauses = append(tree.Clauses, t.Clauses...)
		tree.Pragmas = append(tree.Pragmas, t.Pragmas...)
		tree.Decls = append(tree.Decls, t.Decls...)
		tree.Macros = append(tree.Macros, t.Macros...)
	}
	// DTrace's strsize counts a string's characters; its buffer holds
	// one more, the NUL, so a string of exactly strsize characters is kept
	// whole.
	strBuf := opts.StrSize + 1
	if opts.StrSize <= 0 {
		strBuf = 256 + 1
	}
	info, err := check.Check(tree, check.Options{
		Probes: opts.Providers, Macros: opts.Macros, Target: opts.Target,
		StrSize: strBuf, AllowZero: opts.AllowZero,
		Destructive: opts.Destructive, DefaultArgs: opts.DefaultArgs,
		ArgRef: opts.ArgRef, StackFrames: opts.StackFrames, UStackFrames: opts.UStackFrames, MaxFrames: opts.MaxFrames,
		TupleRegs: opts.TupleRegs, OptionProblem: opts.OptionProblem, Version: opts.Version,
		ScratchSize: opts.ScratchSize,
	})
	if err != nil {
		return nil, err
	}
	code, err := codegen.Generate(info, codegen.Options{
		Providers: opts.Providers, StrSize: strBuf,
		BufSize: opts.BufSize, AggSize: opts.AggSize, DynVarSize: opts.DynVarSize,
		NSpec: opts.NSpec, OnCPU: opts.OnCPU, CPU: opts.CPU, MaxFrames: opts.MaxFrames,
	})
	if err != nil {
		return nil, err
	}
	return &Program{Files: files, Info: info, Code: code}, nil
}

// declaredFirst returns the error of a declaration made before syntax
// error err, if one has an error, else err: DTrace declares as it
// parses, so a bad declaration is reported before a later syntax error.
func declaredFirst(tree, partial *ast.Program, err error, opts Options) error {
	if partial == nil || len(partial.Decls) == 0 {
		return err
	}
	prog := &ast.Program{Files: tree.Files, Pragmas: append(tree.Pragmas, partial.Pragmas...),
		Decls: append(append([]*ast.Decl{}, tree.Decls...), partial.Decls...)}
	_, derr := check.Check(prog, check.Options{Probes: opts.Providers, StrSize: opts.StrSize})
	se, ok := derr.(*source.Error)
	pe, pok := err.(*source.Error)
	if ok && pok && se.File == pe.File && se.Pos < pe.Pos {
		return derr
	}
	return err
}

// library returns the D library's files, which every program includes
// first, then those of the directories dirs. They are parsed afresh each
// time: checking rewrites the tree.
func library(dirs []string) ([]*source.File, error) {
	var out []*source.File
	for _, f := range stdlib.DLibrary() {
		out = append(out, &source.File{Name: f.Name, Text: f.Text, Library: true})
	}
	for _, dir := range dirs {
		paths, err := filepath.Glob(filepath.Join(dir, "*.d"))
		if err == nil {
			_, err = os.Stat(dir)
		}
		if err != nil {
			return nil, fmt.Errorf("failed to open library directory %s: %v", dir, err)
		}
		sort.Strings(paths)
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("failed to load library %s: %v", p, err)
			}
			out = append(out, &source.File{Name: p, Text: string(b), Library: true})
		}
	}
	return out, nil
}

// Probes lists the program's matched probes.
func (p *Program) Probes() []*providers.Probe { return p.Info.Probes }

// MatchedIn counts the probes the clauses of file f matched, as dtrace
// counts them: each clause's probes, so that two clauses on BEGIN match 2.
func (p *Program) MatchedIn(f *source.File) int {
	n := 0
	for _, c := range p.Info.Clauses {
		if c.File == f {
			n += c.Matched
		}
	}
	return n
}

// PragmaOptions returns the options the files set with "#pragma D option",
// without compiling them: options such as strsize and nspec shape the
// compilation, so they must be known before it.
func PragmaOptions(files []*source.File) map[string]string {
	opts := map[string]string{}
	// The files parse as Compile parses them: knowing the D library's
	// typedefs (psinfo_t) and the kernel's (u32).
	typedefs := map[string]bool{}
	lib, _ := library(nil)
	for _, f := range lib {
		parser.ParseKnown(f, typedefs, nil)
	}
	for _, f := range files {
		t, err := parser.ParseKnown(f, typedefs, kernelTypedef)
		if err != nil {
			continue
		}
		for _, p := range t.Pragmas {
			if name, val, ok := check.PragmaOption(p.Text); ok {
				opts[name] = val
			}
		}
	}
	return opts
}

// kernelTypedef says whether name is one of the kernel's typedefs, which
// D programs use as types (u32, bool, dev_t), as DTrace knows them from
// the kernel's type data.
func kernelTypedef(name string) bool {
	_, err := ktypes.Lookup(name)
	return err == nil
}
