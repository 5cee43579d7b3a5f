package engine

import (
	"fmt"
	"time"

	"github.com/dstar-trace/dstar/dcompiler/codegen"
	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/engine/usym"
	"github.com/dstar-trace/dstar/providers"
	"github.com/dstar-trace/dstar/providers/cfi"
	"github.com/dstar-trace/dstar/providers/ksym"
)

// userSyms resolves every session's user stacks: processes and the
// files they map are the same whichever session saw them.
var userSyms = usym.New()

// WatchProcess keeps process pid's mappings read while it lives (until
// stop is closed), so that its user stacks can be resolved after it has
// exited: what dstar does for its -c and -p processes.
func WatchProcess(pid int, stop <-chan struct{}) {
	userSyms.Watch(pid, 10*time.Millisecond, stop)
}

// preloadSymbols reads kallsyms in the background when prog records
// kernel stacks: parsing it takes a tenth of a second or more, which
// would otherwise be spent after tracing stops, before the first stack
// is printed.
func preloadSymbols(prog *codegen.Output) {
	kernel := func(ds []codegen.Datum) bool {
		for _, d := range ds {
			if d.Type.Kind == types.Stack && !d.Type.User {
				return true
			}
		}
		return false
	}
	for _, l := range prog.Aggs {
		if kernel(l.Keys) {
			go ksym.Kernel()
			return
		}
	}
	for _, r := range prog.Records {
		for _, a := range r.Actions {
			if kernel(a.Args) {
				go ksym.Kernel()
				return
			}
		}
	}
}

// stackFrames turns a recorded stack of type t (types.StackT's layout)
// into at most t.Len frames of text, innermost first, as
// module`function+0xoffset: kernel addresses through kallsyms, user ones
// through the process's mappings (see usym); anything unresolved as its
// address. With inline, a user frame is preceded by the functions the
// compiler inlined at it (usym.Symbolizer.Frames), each with the frame's
// address. It returns the frames' addresses too, and a user stack's
// process.
func stackFrames(b []byte, t *types.Type, inline bool) (frames []string, pcs []uint64, pid int) {
	user := t.User
	if len(b) < 8 {
		return nil, nil, 0
	}
	hdr := ne.Uint64(b)
	n := int(uint32(hdr))
	if max := len(b)/8 - 1; n > max {
		n = max
	}
	var kernel *ksym.Table
	if !user {
		kernel, _ = ksym.Kernel()
	}
	pid = int(hdr >> 32)
	if user {
		frames = make([]string, 0, n)
		for i := 0; i < n && len(frames) < t.Len; i++ {
			pc := ne.Uint64(b[8+8*i:])
			if stop, ok := cfi.IsMarker(pc); ok {
				// A walk cut short says why, in place of frames it
				// could not find.
				frames = append(frames, "[stack cut: "+stop.String()+"]")
				pcs = append(pcs, 0)
				break
			}
			// Code built without frame pointers sends the walk through
			// whatever its frame register held: a value no user code can
			// be at (the first page, or past the top of user space) ends
			// the stack there.
			if pc < 0x1000 || pc >= 1<<48 {
				break
			}
			// Every address but the first is a return address.
			for _, f := range userSyms.Frames(pid, pc, i > 0, inline) {
				if len(frames) == t.Len {
					break
				}
				frames = append(frames, f)
				pcs = append(pcs, pc)
			}
		}
		return frames, pcs, pid
	}
	addrs := make([]uint64, 0, n)
	syms := make([]ksym.Symbol, 0, n)
	known := make([]bool, 0, n)
	for i := 0; i < n; i++ {
		pc := ne.Uint64(b[8+8*i:])
		if pc == 0 {
			break
		}
		var s ksym.Symbol
		ok := false
		if kernel != nil {
			s, ok = kernel.Lookup(pc)
		}
		if !ok {
			s = ksym.Symbol{Func: fmt.Sprintf("0x%x", pc)}
		}
		syms, known, addrs = append(syms, s), append(known, ok), append(addrs, pc)
	}
	// The walk starts in dstar's own program and the code that ran it;
	// the stack the user asked for starts where the probe fired. The
	// program itself may be missing from a kallsyms read before it was
	// loaded (a session attaching again), so everything up to the last
	// tracing frame near the top goes.
	start := 0
	for i := 0; i < len(syms) && i <= types.StackSlack; i++ {
		if known[i] && tracing(syms[i]) {
			start = i + 1
		}
	}
	frames = make([]string, 0, t.Len)
	for i := start; i < len(syms) && len(frames) < t.Len; i++ {
		if known[i] {
			frames = append(frames, syms[i].String())
		} else {
			frames = append(frames, syms[i].Func)
		}
		pcs = append(pcs, addrs[i])
	}
	return frames, pcs, 0
}

// tracing reports whether s is in a BPF program or in the kernel code
// that runs one (the functions providers.TracingFrames may name, which
// stackdepth and caller leave out too).
func tracing(s ksym.Symbol) bool {
	return s.Module == "bpf" || providers.MayRunPrograms(s.Func)
}

// UserMapping finds the file mapping of process pid that holds pc, as
// user stacks are resolved: for profiles that name each frame's binary.
func UserMapping(pid int, pc uint64) (usym.Mapped, bool) {
	return userSyms.Mapping(pid, pc)
}
