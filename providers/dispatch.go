package providers

import (
	"io"

	"github.com/cilium/ebpf"
)

// Prologue emits pr's prologue through its provider.
func (r *Registry) Prologue(pr *Probe, p *Prologue) error {
	prov, err := r.ProviderOf(pr)
	if err != nil {
		return err
	}
	return prov.Prologue(pr, p)
}

// Attach attaches prog to pr through its provider.
func (r *Registry) Attach(pr *Probe, prog *ebpf.Program) (io.Closer, error) {
	prov, err := r.ProviderOf(pr)
	if err != nil {
		return nil, err
	}
	return prov.Attach(pr, prog)
}

// AttachOptions are a session's settings that change where probes attach.
type AttachOptions struct {
	// OnCPU, with CPU, is -x cpu: profile-N and tick-N fire on that CPU
	// only.
	OnCPU bool
	CPU   int
}

// OptionAttacher is implemented by providers whose probes attach
// differently under AttachOptions.
type OptionAttacher interface {
	AttachWith(pr *Probe, prog *ebpf.Program, o AttachOptions) (io.Closer, error)
}

// AttachWith is Attach under o.
func (r *Registry) AttachWith(pr *Probe, prog *ebpf.Program, o AttachOptions) (io.Closer, error) {
	prov, err := r.ProviderOf(pr)
	if err != nil {
		return nil, err
	}
	if oa, ok := prov.(OptionAttacher); ok {
		return oa.AttachWith(pr, prog, o)
	}
	return prov.Attach(pr, prog)
}

// Dispatcher returns pr's provider as a Dispatcher with the group pr
// shares, or nil when pr shares no attach point.
func (r *Registry) Dispatcher(pr *Probe) (Dispatcher, string) {
	prov, err := r.ProviderOf(pr)
	if err != nil {
		return nil, ""
	}
	d, ok := prov.(Dispatcher)
	if !ok {
		return nil, ""
	}
	if g := d.Group(pr); g != "" {
		return d, g
	}
	return nil, ""
}

// ContextFreer is implemented by providers that can fire a probe from a
// kernel hook that costs less to make or to release when no clause reads
// anything of the probe's context (its arguments or record).
type ContextFreer interface {
	// ContextFree returns pr as fired from that hook, with the same ID,
	// or nil when pr has no such hook.
	ContextFree(pr *Probe) *Probe
}

// ContextFree is pr's context-free form, through its provider, or nil.
func (r *Registry) ContextFree(pr *Probe) *Probe {
	prov, err := r.ProviderOf(pr)
	if err != nil {
		return nil
	}
	if cf, ok := prov.(ContextFreer); ok {
		return cf.ContextFree(pr)
	}
	return nil
}
