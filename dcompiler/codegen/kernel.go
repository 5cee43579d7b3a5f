package codegen

import (
	"fmt"

	"github.com/cilium/ebpf/btf"

	"github.com/dstar-trace/dstar/providers"
)

// kernelSpec is the kernel's BTF, loaded once and only when a program reads
// a kernel structure: it costs tens of milliseconds.
var kernelSpec = providers.KernelBTF

// taskOffsets resolves a member path from struct task_struct. Each offset
// in the result is one read: a pointer member ends a read and the next
// offset applies to what it points at. size is the last member's size.
func taskOffsets(path []string) (offs []int, size int, err error) {
	return structOffsets("task_struct", path)
}

// structOffsets is taskOffsets from the kernel's struct name.
func structOffsets(name string, path []string) (offs []int, size int, err error) {
	spec, err := kernelSpec()
	if err != nil {
		return nil, 0, err
	}
	var st *btf.Struct
	if err := spec.TypeByName(name, &st); err != nil {
		return nil, 0, err
	}
	var t btf.Type = st
	off := 0
	for i, name := range path {
		s, ok := btf.UnderlyingType(t).(*btf.Struct)
		if !ok {
			return nil, 0, fmt.Errorf("%s is not a struct member", name)
		}
		m, err := member(s, name)
		if err != nil {
			return nil, 0, err
		}
		off += int(m.Offset.Bytes())
		t = m.Type
		if p, ok := btf.UnderlyingType(t).(*btf.Pointer); ok && i < len(path)-1 {
			offs = append(offs, off)
			off = 0
			t = p.Target
		}
	}
	sz, err := btf.Sizeof(t)
	if err != nil {
		return nil, 0, err
	}
	return append(offs, off), sz, nil
}

// member finds a member of s by name, also inside its anonymous structs
// and unions (struct qstr's len), with its offset from the start of s.
func member(s *btf.Struct, name string) (*btf.Member, error) {
	if m := findMember(s.Members, name); m != nil {
		return m, nil
	}
	return nil, fmt.Errorf("struct %s has no member %s", s.Name, name)
}

func findMember(ms []btf.Member, name string) *btf.Member {
	for i := range ms {
		m := &ms[i]
		if m.Name == name {
			return m
		}
		if m.Name != "" {
			continue
		}
		var inner []btf.Member
		switch t := btf.UnderlyingType(m.Type).(type) {
		case *btf.Struct:
			inner = t.Members
		case *btf.Union:
			inner = t.Members
		}
		if found := findMember(inner, name); found != nil {
			c := *found
			c.Offset += m.Offset
			return &c
		}
	}
	return nil
}
