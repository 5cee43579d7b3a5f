package check

import (
	"fmt"
	"strings"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/ktypes"
	"github.com/dstar-trace/dstar/dcompiler/types"
)

// argKind is what a subroutine's argument must be.
type argKind int

const (
	argString argKind = iota
	argInt
	argPtr // a pointer to the type its prototype names, void *, or 0
)

// subr is a subroutine's prototype.
type subr struct {
	args     []argKind
	optional int    // how many trailing args may be left out
	result   string // "string", "int", "int64", "size_t", "uint64"
	proto    string // the prototype DTrace shows in messages
}

// Subroutines are D's subroutines that compute values.
var Subroutines = map[string]subr{
	"strlen":      {[]argKind{argString}, 0, "size_t", "string"},
	"strjoin":     {[]argKind{argString, argString}, 0, "string", "string, string"},
	"substr":      {[]argKind{argString, argInt, argInt}, 1, "string", "string, int, int"},
	"index":       {[]argKind{argString, argString, argInt}, 1, "int", "string, string, int"},
	"rindex":      {[]argKind{argString, argString, argInt}, 1, "int", "string, string, int"},
	"strstr":      {[]argKind{argString, argString}, 0, "string", "string, string"},
	"strchr":      {[]argKind{argString, argInt}, 0, "string", "string, char"},
	"strrchr":     {[]argKind{argString, argInt}, 0, "string", "string, char"},
	"toupper":     {[]argKind{argString}, 0, "string", "string"},
	"tolower":     {[]argKind{argString}, 0, "string", "string"},
	"basename":    {[]argKind{argString}, 0, "string", "string"},
	"dirname":     {[]argKind{argString}, 0, "string", "string"},
	"cleanpath":   {[]argKind{argString}, 0, "string", "string"},
	"lltostr":     {[]argKind{argInt, argInt}, 1, "string", "int64_t, int"},
	"strtoll":     {[]argKind{argString, argInt}, 1, "int64", "string, int"},
	"htons":       {[]argKind{argInt}, 0, "uint16", "uint16_t"},
	"ntohs":       {[]argKind{argInt}, 0, "uint16", "uint16_t"},
	"htonl":       {[]argKind{argInt}, 0, "uint32", "uint32_t"},
	"ntohl":       {[]argKind{argInt}, 0, "uint32", "uint32_t"},
	"htonll":      {[]argKind{argInt}, 0, "uint64", "uint64_t"},
	"ntohll":      {[]argKind{argInt}, 0, "uint64", "uint64_t"},
	"rand":        {nil, 0, "int", "void"},
	"speculation": {nil, 0, "int", "void"},
	"getmajor":    {[]argKind{argInt}, 0, "int", "dev_t"},
	"inet_ntoa":   {[]argKind{argInt}, 0, "string", "ipaddr_t *"},
	"inet_ntoa6":  {[]argKind{argPtr, argInt}, 1, "string", "in6_addr_t *, int"},
	"inet_ntop":   {[]argKind{argInt, argInt}, 0, "string", "int, void *"},
	"link_ntop":   {[]argKind{argInt, argPtr}, 0, "string", "int, void *"},
	"getminor":    {[]argKind{argInt}, 0, "int", "dev_t"},
	"progenyof":   {[]argKind{argInt}, 0, "int", "pid_t"},
	// Linux has adaptive mutexes only (DTrace's own answer).
	"mutex_owned":         {[]argKind{argPtr}, 0, "int", "struct mutex *"},
	"mutex_owner":         {[]argKind{argPtr}, 0, "task", "struct mutex *"},
	"mutex_type_adaptive": {[]argKind{argPtr}, 0, "int", "struct mutex *"},
	"mutex_type_spin":     {[]argKind{argPtr}, 0, "int", "struct mutex *"},
}

// subrType checks a subroutine call and returns its result type.
func (in *Info) subrType(e *ast.Call, sr subr, argTypes []*types.Type) (*types.Type, error) {
	if err := in.argCount(e, len(sr.args)-sr.optional, len(sr.args)); err != nil {
		return nil, err
	}
	protos := strings.Split(sr.proto, ", ")
	for i, t := range argTypes {
		ok := in.StringArg(t, e.Args[i])
		switch sr.args[i] {
		case argInt:
			ok = t.IsScalar()
		case argPtr:
			ok = in.ptrArg(t, e.Args[i], strings.TrimSuffix(protos[i], " *"))
		}
		if !ok {
			// dtrace names the parameter's C type; a string is a char *.
			want := protos[i]
			if want == "string" {
				want = "char *"
			}
			return nil, in.errorf(e.Args[i].Start(), "D_PROTO_ARG", "%s( ) argument #%d is incompatible with prototype:\n\tprototype: %s\n\t argument: %s", e.Fn, i+1, want, t)
		}
	}
	if e.Fn == "inet_ntoa6" && len(e.Args) == 2 {
		if _, ok := in.ConstInt(e.Args[1]); !ok {
			return nil, in.errorf(e.Args[1].Start(), "D_PROTO_ARG", "inet_ntoa6( ) argument #2 must be an integer constant")
		}
	}
	switch sr.result {
	case "string":
		size := in.Opts.StrSize
		switch e.Fn {
		case "lltostr":
			size = 24
		case "inet_ntoa":
			size = 16
		case "inet_ntoa6", "inet_ntop":
			size = 48
		case "link_ntop":
			size = 60 // an InfiniBand address: 20 bytes of "xx:"
		}
		// No string is longer than strsize.
		return types.StringT(min(size, in.Opts.StrSize)), nil
	case "size_t":
		return types.UlongT, nil
	case "int64":
		return types.Int64T, nil
	case "uint16":
		return types.FromC("uint16_t", 2, false), nil
	case "uint32":
		return types.FromC("uint32_t", 4, false), nil
	case "uint64":
		return types.Uint64T, nil
	case "task":
		kt, err := ktypes.Lookup("struct task_struct")
		if err != nil {
			return nil, in.errorf(e.Pos, "D_TYPE_ERR", "%s( ) needs the kernel's struct task_struct: %v", e.Fn, err)
		}
		return &types.Type{Kind: types.Pointer, Size: 8, Name: kt.Name + " *", Elem: kt}, nil
	}
	return types.IntT, nil
}

// argCount checks how many arguments a function was given against the
// fewest and most it takes, in dtrace's words: "at least" or "at most"
// when the count may vary.
func (in *Info) argCount(e *ast.Call, least, most int) error {
	n := len(e.Args)
	if n >= least && n <= most {
		return nil
	}
	want := fmt.Sprint(most)
	switch {
	case least != most && n < least:
		want = fmt.Sprintf("at least %d", least)
	case least != most:
		want = fmt.Sprintf("at most %d", most)
	}
	return in.errorf(e.Pos, "D_PROTO_LEN", "%s( ) prototype mismatch: %d arg%s passed, %s expected", e.Fn, n, plural(n), want)
}

// ptrArg reports whether an argument of type t may be passed for a
// parameter that points to the type named elem, by DTrace's rule for
// pointers: a pointer (or array) to that type or to void, or the
// constant 0; no other integer.
func (in *Info) ptrArg(t *types.Type, arg ast.Expr, elem string) bool {
	if _, lit := Unparen(arg).(*ast.StrLit); t.IsString() && !lit {
		return elem == "void" // a char array in memory: its address
	}
	if t.Kind != types.Pointer && t.Kind != types.Array {
		return t.IsInt() && in.isZero(arg)
	}
	if elem == "in6_addr_t" {
		elem = "struct in6_addr" // as typeName resolves it
	}
	return elem == "void" || t.Elem == nil || t.Elem.Kind == types.Void || t.Elem.Name == elem
}

// StringArg reports whether an argument of type t may stand for a string,
// as DTrace's string functions take one: a string or char array, a char
// * (or void *) to read one from, or NULL, which faults when read.
func (in *Info) StringArg(t *types.Type, arg ast.Expr) bool {
	if t.IsString() {
		return true
	}
	if t.Kind == types.Pointer && (t.Elem == nil || t.Elem.Kind == types.Void || t.Elem.Kind == types.Int && t.Elem.Size == 1) {
		return true
	}
	v, ok := in.ConstInt(arg)
	return ok && v == 0 && t.IsInt()
}
