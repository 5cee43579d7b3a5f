package engine

import (
	"fmt"

	"github.com/dstar-trace/dstar/dcompiler/printf"
	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/engine/usym"
	"github.com/dstar-trace/dstar/providers/ksym"
)

// symbol names an address recorded by sym( ), mod( ), usym( ), umod( ) or
// uaddr( ) (types.SymT's layout) as dtrace(1) prints it:
//
//	sym   module`function, or module`0xaddr, or 0xaddr
//	mod   module, or 0xaddr
//	usym  as sym, in the process's mappings
//	umod  as mod, in the process's mappings
//	uaddr module`function+0xoffset (no offset at the function's start)
//
// The value sorts by the start of its function (sym, usym) or by the
// address (the others): what the symbol makes equal prints as one key.
func symbol(b []byte, t *types.Type) printf.Value {
	if len(b) < t.Size {
		return printf.Symbol("", 0)
	}
	var loc usym.Location
	var pc uint64
	if t.User {
		pid := int(ne.Uint64(b))
		pc = ne.Uint64(b[8:])
		loc = userSyms.Lookup(pid, pc)
	} else {
		pc = ne.Uint64(b)
		loc = kernelLocation(pc)
	}
	addr := fmt.Sprintf("0x%x", pc)
	switch {
	case loc.Module == "":
		return printf.Symbol(addr, pc)
	case t.Fn == "mod" || t.Fn == "umod":
		return printf.Symbol(loc.Module, pc)
	case loc.Func == "":
		return printf.Symbol(loc.Module+"`"+addr, pc)
	case t.Fn == "uaddr":
		return printf.Symbol(addrText(loc, pc), pc)
	}
	return printf.Symbol(loc.Module+"`"+loc.Func, pc-loc.Offset)
}

// kernelLocation finds where a kernel address lies, through kallsyms.
func kernelLocation(pc uint64) usym.Location {
	table, err := ksym.Kernel()
	if err != nil {
		return usym.Location{}
	}
	s, ok := table.Lookup(pc)
	if !ok {
		return usym.Location{}
	}
	return usym.Location{Module: s.Module, Func: s.Func, Offset: s.Offset}
}

// addrText renders pc, found at loc, as printf's %a and %A and uaddr( )
// do: module`function+0xoffset (no offset at the function's start),
// module`0xaddr, or 0xaddr.
func addrText(loc usym.Location, pc uint64) string {
	switch {
	case loc.Module == "":
		return fmt.Sprintf("0x%x", pc)
	case loc.Func == "":
		return fmt.Sprintf("%s`0x%x", loc.Module, pc)
	}
	return ksym.Symbol{Module: loc.Module, Func: loc.Func, Offset: loc.Offset}.String()
}

// nameAddresses returns vals with the addresses that f's %a and %A
// conversions print replaced by their names: kernel ones through
// kallsyms, user ones in process pid (the one that fired the probe).
// vals itself is left as recorded.
func nameAddresses(f *printf.Format, vals []printf.Value, pid int) []printf.Value {
	var out []printf.Value
	j := 0
	for _, c := range f.Conversions() {
		if c.Kind == printf.ArgNone || c.Agg {
			continue
		}
		if c.DynWidth {
			j++
		}
		if c.DynPrec {
			j++
		}
		if j >= len(vals) {
			break
		}
		if v := vals[j]; v.Kind == printf.IntValue && (c.Kind == printf.ArgSymbol || c.Kind == printf.ArgUserSymbol) {
			if out == nil {
				out = append([]printf.Value(nil), vals...)
			}
			pc := v.Uint64()
			loc := kernelLocation(pc)
			if c.Kind == printf.ArgUserSymbol {
				loc = userSyms.Lookup(pid, pc)
			}
			out[j] = printf.Str(addrText(loc, pc))
		}
		j++
	}
	if out == nil {
		return vals
	}
	return out
}
