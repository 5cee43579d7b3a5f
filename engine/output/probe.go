// This file lays out the line dtrace prints for each probe firing, and the
// -l listing (cmd/dtrace.c: chew() and list_probe()).

package output

import (
	"strconv"
	"strings"
)

// ProbeHeader returns the heading printed once, before the first probe line
// ("%3s %6s %32s\n" of CPU, ID and FUNCTION:NAME).
func ProbeHeader() string {
	return "CPU" + " " + padLeft("ID", 6) + " " + padLeft("FUNCTION:NAME", 32) + "\n"
}

// ProbeLine returns what dtrace prints when a clause with data-recording
// actions fires, before its records: the CPU, the probe ID and
// "function:name" right-aligned in 32 columns, then a space ("%3d %6d %32s ").
// After the firing's last record dtrace prints "\n", so a clause whose only
// record is its probe (an empty clause) prints just this line and the
// newline.
func ProbeLine(cpu, id int, function, name string) string {
	return dec(int64(cpu), 3) + " " + dec(int64(id), 6) + " " + padLeft(function+":"+name, 32) + " "
}

// FlowHeader returns the heading printed instead of ProbeHeader under -F
// (flowindent): "%3s %-41s\n" of CPU and FUNCTION.
func FlowHeader() string {
	return "CPU " + padRight("FUNCTION", 41) + "\n"
}

// FlowLine returns the line printed under -F: the CPU, then indent spaces,
// the prefix (" -> " for an entry probe, " <- " for a return probe, " => "
// and " <= " for syscall's, "| " for others) and label (the function for
// entry and return probes, "function:name" for others), left-aligned in 41
// columns, then a space.
func FlowLine(cpu, indent int, prefix, label string) string {
	return dec(int64(cpu), 3) + " " + padRight(spaces(indent)+prefix+label, 41) + " "
}

// ListHeader returns the heading of dtrace -l:
// "%5s %10s %17s %33s %s\n" of ID, PROVIDER, MODULE, FUNCTION and NAME.
func ListHeader() string {
	return padLeft("ID", 5) + " " + padLeft("PROVIDER", 10) + " " + padLeft("MODULE", 17) + " " +
		padLeft("FUNCTION", 33) + " NAME\n"
}

// ListLine returns one probe's line in dtrace -l: "%5d %10s %17s %33s %s\n".
func ListLine(id int, provider, module, function, name string) string {
	return padLeft(strconv.Itoa(id), 5) + " " + padLeft(provider, 10) + " " + padLeft(module, 17) + " " +
		padLeft(function, 33) + " " + name + "\n"
}

// ListAttrs returns what dtrace -lv prints after a probe's line: its
// stability attributes and those of its arguments, each as a name, data
// and class, then its argument types ("None" when it has none), then an
// empty line.
func ListAttrs(probe, args [3]string, types []string) string {
	var b strings.Builder
	attrs := func(title string, a [3]string) {
		b.WriteString("\n\t" + title + "\n")
		b.WriteString("\t\tIdentifier Names: " + a[0] + "\n")
		b.WriteString("\t\tData Semantics:   " + a[1] + "\n")
		b.WriteString("\t\tDependency Class: " + a[2] + "\n")
	}
	attrs("Probe Description Attributes", probe)
	attrs("Argument Attributes", args)
	b.WriteString("\n\tArgument Types\n")
	for _, t := range types {
		b.WriteString("\t\t" + t + "\n")
	}
	if len(types) == 0 {
		b.WriteString("\t\tNone\n")
	}
	b.WriteString("\n")
	return b.String()
}
