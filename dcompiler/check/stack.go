package check

import (
	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/types"
)

// maxFrames is the deepest stack the kernel's stack walker gives
// (kernel.perf_event_max_stack's default).
const maxFrames = 127

// allowStack notes that x, if it is a stack( ) or ustack( ) call, or one
// of the functions that print an address by name (SymFuncs), stands where
// one may: as a statement (the action) or an aggregation key.
func (in *Info) allowStack(x ast.Expr) {
	if c, ok := x.(*ast.Call); ok && (c.Fn == "stack" || c.Fn == "ustack" || SymFuncs[c.Fn] != "") {
		if in.stackOK == nil {
			in.stackOK = map[*ast.Call]bool{}
		}
		in.stackOK[c] = true
	}
}

// stackType checks stack([frames]) and ustack([frames[, strsize]]).
func (in *Info) stackType(e *ast.Call, argTypes []*types.Type) (*types.Type, error) {
	user := e.Fn == "ustack"
	most := 1
	frames := in.Opts.StackFrames
	if user {
		most, frames = 2, in.Opts.UStackFrames
	}
	if frames <= 0 {
		// Oracle's defaults: 20 kernel frames, 100 user frames.
		frames = 20
		if user {
			frames = 100
		}
	}
	if len(e.Args) > most {
		return nil, in.errorf(e.Pos, "D_PROTO_LEN", "%s( ) prototype mismatch: %d args passed, at most %d expected", e.Fn, len(e.Args), most)
	}
	for i, a := range e.Args {
		if !argTypes[i].IsInt() {
			return nil, in.errorf(a.Start(), "D_PROTO_ARG", "%s( ) argument #%d is incompatible with prototype:\n\tprototype: uint32_t\n\t argument: %s", e.Fn, i+1, argTypes[i])
		}
		// DTrace's words and tags: the frame count is positive, the
		// string size (which changes nothing) not negative; a deeper
		// stack than the walker gives is reduced to its depth.
		n, ok := in.ConstInt(a)
		switch {
		case i == 1 && (!ok || n < 0):
			return nil, in.errorf(a.Start(), "D_USTACK_STRSIZE", "ustack( ) argument #2 must be a positive integer constant")
		case i == 0 && (!ok || n <= 0):
			tag := map[string]string{"stack": "D_STACK_SIZE", "ustack": "D_USTACK_FRAMES"}[e.Fn]
			return nil, in.errorf(a.Start(), tag, "%s( ) argument #1 must be a non-zero positive integer constant", e.Fn)
		}
		if i == 0 {
			frames = int(min(n, maxFrames))
		}
	}
	frames = min(frames, maxFrames)
	if in.Opts.MaxFrames > 0 {
		frames = min(frames, in.Opts.MaxFrames)
	}
	if !in.stackOK[e] {
		return nil, in.errorf(e.Pos, "D_CG_EXPR", "action function %s( ) may not be called from a D expression (D program context required)", e.Fn)
	}
	return types.StackT(frames, user), nil
}

// SymFuncs are the functions that record an address for the consumer to
// print by name, each with the form it prints (func and ufunc are
// DTrace's other names for sym and usym).
var SymFuncs = map[string]string{
	"sym": "sym", "func": "sym", "mod": "mod",
	"usym": "usym", "ufunc": "usym", "umod": "umod", "uaddr": "uaddr",
}

// symType checks sym(addr) and its kin. Like stack( ), they are actions:
// as a statement or an aggregation key the address is recorded, with the
// process id for a user address, and printed by name.
func (in *Info) symType(e *ast.Call, argTypes []*types.Type) (*types.Type, error) {
	if len(e.Args) != 1 {
		return nil, in.errorf(e.Pos, "D_PROTO_LEN", "%s( ) prototype mismatch: %d arg%s passed, 1 expected", e.Fn, len(e.Args), plural(len(e.Args)))
	}
	if !argTypes[0].IsScalar() {
		return nil, in.errorf(e.Args[0].Start(), "D_PROTO_ARG", "%s( ) argument #1 is incompatible with prototype:\n\tprototype: uintptr_t\n\t argument: %s", e.Fn, argTypes[0])
	}
	if !in.stackOK[e] {
		return nil, in.errorf(e.Pos, "D_CG_EXPR", "action function %s( ) may not be called from a D expression (D program context required)", e.Fn)
	}
	fn := SymFuncs[e.Fn]
	return types.SymT(fn, fn[0] == 'u'), nil
}
