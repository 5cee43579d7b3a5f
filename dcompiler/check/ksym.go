package check

import (
	"github.com/cilium/ebpf/btf"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/ktypes"
	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/providers"
	"github.com/dstar-trace/dstar/providers/ksym"
)

// KSymbol is a kernel symbol a program names (`name, module`name),
// resolved when the program is compiled: its address is a constant.
type KSymbol struct {
	ksym.Named
	// Type is the variable's type when the kernel's BTF has it (a VAR),
	// else nil.
	Type   *types.Type
	PerCPU bool // a per-CPU variable: its address is an offset
}

// kernelNames and kernelBTF are where symbols and their types come from;
// tests replace them.
var (
	kernelNames = ksym.KernelNames
	kernelBTF   = providers.KernelBTF
)

// KSym resolves e. kallsyms is read only for programs that name a symbol.
func (in *Info) KSym(e *ast.KSym) (*KSymbol, error) {
	key := e.String()
	if s, ok := in.ksyms[key]; ok {
		return s, nil
	}
	names, err := kernelNames()
	var n ksym.Named
	if err == nil {
		n, err = names.Find(e.Module, e.Name)
	}
	if err != nil {
		return nil, in.errorf(e.Pos, "D_IDENT_UNDEF", "failed to resolve %s: %v", key, err)
	}
	s := &KSymbol{Named: n}
	if !n.Code {
		s.Type, s.PerCPU = varType(n.Name)
	}
	if in.ksyms == nil {
		in.ksyms = map[string]*KSymbol{}
	}
	in.ksyms[key] = s
	return s, nil
}

// varType finds kernel variable name's type in BTF, and whether it is
// per-CPU. Kernels' BTF has VARs only for per-CPU variables unless pahole
// was asked for all globals.
func varType(name string) (*types.Type, bool) {
	spec, err := kernelBTF()
	if err != nil {
		return nil, false
	}
	var v *btf.Var
	if err := spec.TypeByName(name, &v); err != nil {
		return nil, false
	}
	perCPU := false
	for t, err := range spec.All() {
		if err != nil {
			break
		}
		ds, ok := t.(*btf.Datasec)
		if !ok {
			continue
		}
		for _, sv := range ds.Vars {
			if sv.Type == v {
				perCPU = ds.Name == ".data..percpu"
			}
		}
	}
	return ktypes.FromBTF(v.Type), perCPU
}

// ksymAddrType types &`name: a pointer to the variable's type when BTF
// has it, else void *, as a function's address is too.
func (in *Info) ksymAddrType(e *ast.KSym) (*types.Type, error) {
	s, err := in.KSym(e)
	if err != nil {
		return nil, err
	}
	if s.Type == nil || s.Type.Kind == types.Void {
		return types.VoidPtr, nil
	}
	return &types.Type{Kind: types.Pointer, Size: 8, Name: s.Type.Name + " *", Elem: s.Type}, nil
}

// ksymType types `name as a value, read from kernel memory: only a
// variable whose type is known can be.
func (in *Info) ksymType(e *ast.KSym) (*types.Type, error) {
	s, err := in.KSym(e)
	if err != nil {
		return nil, err
	}
	full := s.Module + "`" + s.Name
	switch {
	case s.Code:
		return nil, in.errorf(e.Pos, "D_IDENT_BADREF", "%s is a function and may not be referenced as a scalar; its address, &%s, may be used", full, e)
	case s.Type == nil:
		return nil, in.errorf(e.Pos, "D_SYM_NOTYPES", "no symbolic type information is available for %s: the kernel's BTF has no type for it; its address, &%s, may be used", full, e)
	case s.PerCPU:
		return nil, in.errorf(e.Pos, "D_UNKNOWN", "%s is a per-CPU variable, which D cannot read yet; &%s is its offset in each CPU's area", full, e)
	case s.Type.Kind != types.Int && s.Type.Kind != types.Pointer:
		return nil, in.errorf(e.Pos, "D_UNKNOWN", "%s of type %s cannot be read yet; its address, &%s, may be used", full, s.Type.Name, e)
	}
	return s.Type, nil
}
