package providers

import (
	"fmt"
	"sync"
)

// Registry holds the providers in a fixed order, which is also the order of
// probe IDs: dtrace (1-3), profile (its listed set), syscall (by name, entry
// before return), sdt (by group and event), proc, sched and io, rawtp (by
// group and event), fbt (by kallsyms), then pid, whose probes are made for
// a process when a description names it. The IDs of listed probes are the
// same for
// `dstar -l` and for a run on the same kernel.
type Registry struct {
	providers []Provider
}

// NewRegistry returns a registry of ps, consulted in that order.
func NewRegistry(ps ...Provider) *Registry { return &Registry{providers: ps} }

// Default returns the process's registry of the built-in providers. It is
// shared so that probes created on demand (profile-N) keep their IDs.
func Default() *Registry { return defaultRegistry() }

var defaultRegistry = sync.OnceValue(func() *Registry {
	profileFirst := ErrorID + 1
	syscallFirst := profileFirst + len(profileNames)
	sys := NewSyscall(syscallFirst)
	sdtFirst := func() (int, error) {
		n, err := sys.NumProbes()
		return syscallFirst + n, err
	}
	sdt := NewSDT(sdtFirst)
	stableFirst := func() (int, error) {
		first, err := sdtFirst()
		if err != nil {
			return 0, err
		}
		n, err := sdt.NumProbes()
		return first + n, err
	}
	stable := stableProviders(stableFirst)
	rawtpFirst := func() (int, error) {
		first, err := stableFirst()
		return first + numStableProbes(), err
	}
	rawtp := NewRawTP(rawtpFirst)
	fbt := NewFBT(func() (int, error) {
		first, err := rawtpFirst()
		if err != nil {
			return 0, err
		}
		n, err := rawtp.NumProbes()
		return first + n, err
	})
	ps := append([]Provider{DTrace{}, NewProfile(profileFirst), sys, sdt}, stable...)
	return NewRegistry(append(ps, rawtp, fbt, NewPid(), NewUSDT())...)
})

// Claimer is implemented by providers whose probes' provider field is not
// the provider's Name: the pid provider's are "pid" plus a process ID
// ("pid1234"), usdt's the name a program gave its provider plus the
// process ID ("myapp1234"), so the registry cannot route descriptions and
// probes to them by name.
type Claimer interface {
	// Claims reports whether probes of this provider could match the
	// provider field pattern (a glob, or "" for any).
	Claims(pattern string) bool
	// Owns reports whether pr is one of this provider's probes.
	Owns(pr *Probe) bool
}

// Providers returns the providers in order.
func (r *Registry) Providers() []Provider { return r.providers }

// Lookup returns the provider called name, or nil.
func (r *Registry) Lookup(name string) Provider {
	for _, p := range r.providers {
		if p.Name() == name {
			return p
		}
	}
	return nil
}

// ProviderOf returns the provider of a probe, to emit its prologue and
// attach it: the Claimer that owns it, else the provider its provider
// field names, else the first Claimer that claims that field. Owners are
// asked first, as a field can be claimed by more than one (a usdt
// provider called "pid" in process 1234 is pid1234, as is the pid
// provider's instance).
func (r *Registry) ProviderOf(pr *Probe) (Provider, error) {
	for _, p := range r.providers {
		if c, ok := p.(Claimer); ok && c.Owns(pr) {
			return p, nil
		}
	}
	if p := r.Lookup(pr.Provider); p != nil {
		return p, nil
	}
	for _, p := range r.providers {
		if c, ok := p.(Claimer); ok && c.Claims(pr.Provider) {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%s: no provider %q", pr, pr.Provider)
}

// Match returns the probes d matches, with their argument types, for
// compiling a script (or for dtrace -lv). Only providers whose name matches
// d's provider field are asked, and BEGIN, END and ERROR go straight to the
// dtrace provider, so a script that uses only those never reads tracefs.
func (r *Registry) Match(d Desc) ([]*Probe, error) { return r.collect(d, false) }

// List is Match for listing (dtrace -l): the same probes with the same IDs,
// but without argument types where those cost extra reads.
func (r *Registry) List(d Desc) ([]*Probe, error) { return r.collect(d, true) }

func (r *Registry) collect(d Desc, list bool) ([]*Probe, error) {
	var out []*Probe
	for _, p := range r.providers {
		if c, ok := p.(Claimer); ok {
			if !c.Claims(d.Provider) {
				continue
			}
		} else if !fieldMatch(d.Provider, p.Name()) {
			continue
		}
		if isDTraceName(d) && p.Name() != "dtrace" {
			continue
		}
		var ps []*Probe
		var err error
		if l, ok := p.(Lister); ok && list {
			ps, err = l.List(d)
		} else {
			ps, err = p.Probes(d)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}
