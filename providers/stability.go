package providers

import "strconv"

// Attr is one of DTrace's stability attributes: how stable the names are,
// how stable what they mean is, and what the interface depends on.
type Attr struct {
	Name, Data, Class string
}

// Stability returns the attributes dtrace -lv prints for a provider's
// probes and for their arguments. They follow DTrace's own providers:
// BEGIN, END and ERROR are stable; profile and syscall names are
// evolving, and so are proc, sched and io with their arguments; what the kernel's tracepoints and functions are and take is
// the kernel's private business (ISA: it depends on the architecture).
func Stability(provider string) (probe, args Attr) {
	switch provider {
	case "dtrace":
		s := Attr{"Stable", "Stable", "Common"}
		return s, s
	case "profile":
		s := Attr{"Evolving", "Evolving", "Common"}
		return s, s
	case "syscall":
		return Attr{"Evolving", "Evolving", "Common"}, Attr{"Private", "Private", "ISA"}
	case "proc", "sched", "io":
		// DTrace's stable providers: their names and translated
		// arguments are meant to outlast kernel versions.
		s := Attr{"Evolving", "Evolving", "ISA"}
		return s, s
	}
	if _, ok := pidOf(provider); ok {
		// What a process's functions are and take is its own business.
		u := Attr{"Private", "Private", "Unknown"}
		return u, u
	}
	return Attr{"Private", "Private", "Unknown"}, Attr{"Private", "Private", "ISA"}
}

// ArgTypes renders a probe's arguments for dtrace -lv: "args[0]: int"
// for positional ones, "args->name: type" for a tracepoint's fields.
func ArgTypes(pr *Probe) []string {
	var out []string
	for i, a := range pr.Args {
		if a.Name != "" {
			out = append(out, "args->"+a.Name+": "+a.Type)
		} else {
			out = append(out, "args["+strconv.Itoa(i)+"]: "+a.Type)
		}
	}
	return out
}
