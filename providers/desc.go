package providers

import (
	"fmt"
	"strings"
)

// Desc is a probe description: provider:module:function:name, each field a
// glob pattern, an empty field matching anything.
type Desc struct {
	Provider, Module, Function, Name string
}

// ParseDesc parses a probe description as DTrace does: the fields are
// colon-separated and, when there are fewer than four, they are the
// rightmost ones ("BEGIN" is a name, "read:entry" function and name,
// "vmlinux:read:entry" module, function and name). More than four fields is
// an error.
func ParseDesc(s string) (Desc, error) {
	s = strings.TrimSpace(s)
	f := strings.Split(s, ":")
	if len(f) > 4 {
		// dtrace's words (EDT_BADSPEC).
		return Desc{}, fmt.Errorf("invalid probe description %q: Overspecified probe description", s)
	}
	var all [4]string
	copy(all[4-len(f):], f)
	return Desc{Provider: all[0], Module: all[1], Function: all[2], Name: all[3]}, nil
}

// String renders d as provider:module:function:name.
func (d Desc) String() string {
	return d.Provider + ":" + d.Module + ":" + d.Function + ":" + d.Name
}

// Matches reports whether every non-empty field of d matches p's as a glob.
func (d Desc) Matches(p *Probe) bool {
	return fieldMatch(d.Provider, p.Provider) &&
		fieldMatch(d.Module, p.Module) &&
		fieldMatch(d.Function, p.Function) &&
		fieldMatch(d.Name, p.Name)
}

// fieldMatch matches one field; literal patterns skip the glob machinery.
func fieldMatch(pattern, s string) bool {
	if pattern == "" {
		return true
	}
	if !isGlob(pattern) {
		return pattern == s
	}
	return globMatch(pattern, s)
}
