package engine

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/dstar-trace/dstar/dcompiler/codegen"
)

// refusals are the probes of an enabling the kernel would not attach, by
// reason, for one message that says how many and why.
type refusals struct {
	tried   int
	probes  []string // as refused
	reasons []string // in order of first refusal
	by      map[string][]string
	first   error // the whole error of the first refusal
}

// add records that p could not be attached.
func (r *refusals) add(p *codegen.Program, err error) {
	why := reason(err)
	if r.by == nil {
		r.by = map[string][]string{}
		r.first = fmt.Errorf("cannot enable %s: %w", p.Probe, err)
	}
	if _, ok := r.by[why]; !ok {
		r.reasons = append(r.reasons, why)
	}
	name := p.Probe.String()
	r.by[why] = append(r.by[why], name)
	r.probes = append(r.probes, name)
}

// reason is what the kernel said: from the error number's text on (a
// provider may explain it after), else the error's last part.
func reason(err error) string {
	s := err.Error()
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if i := strings.LastIndex(s, errno.Error()); i >= 0 {
			return s[i:]
		}
		return errno.Error()
	}
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// summary says how many probes were refused, which, and why.
func (r *refusals) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d probes could not be enabled", len(r.probes), r.tried)
	for i, why := range r.reasons {
		sep := ": "
		if i > 0 {
			sep = "; "
		}
		ps := r.by[why]
		b.WriteString(sep)
		const shown = 3
		b.WriteString(strings.Join(ps[:min(len(ps), shown)], ", "))
		if len(ps) > shown {
			fmt.Fprintf(&b, " and %d more", len(ps)-shown)
		}
		b.WriteString(": " + why)
	}
	return b.String()
}

// error fails the enabling: the only probe's refusal as it came, with
// the whole chain of what refused it; else a summary.
func (r *refusals) error() error {
	if r.tried == 1 {
		return r.first
	}
	return fmt.Errorf("%s; -x skiprefused enables the other %d", r.summary(), r.tried-len(r.probes))
}

// warning is what -x skiprefused says of the probes it skipped.
func (r *refusals) warning() string {
	return r.summary() + "; skipped"
}
