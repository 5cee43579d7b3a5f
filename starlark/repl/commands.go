package repl

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"go.starlark.net/starlark"

	"github.com/dstar-trace/dstar/engine/output"
	"github.com/dstar-trace/dstar/providers"
	"github.com/dstar-trace/dstar/starlark/dtrace"
)

// command is one of the REPL's ':' commands. :help is made from this table.
type command struct {
	name, args, help string
	// run runs the command on its argument; it reports whether the REPL
	// should end.
	run func(r *shell, arg string) (quit bool)
}

var commands []command

func init() {
	commands = []command{
		{"help", "[dtrace]", "this help; with dtrace, the dtrace module's reference", (*shell).help},
		{"list", "[PATTERN]", "list the probes PATTERN matches (all without one), as dstar -l does", (*shell).list},
		{"attached", "", "list the session's attached enablings: their ids and probes", (*shell).attached},
		{"detach", "N", "detach enabling N: its END clauses fire, its aggregations stay readable", (*shell).detach},
		{"agg", "[NAME]", "print the session's aggregations (or @NAME) as dstar does at exit", (*shell).agg},
		{"run", "[DURATION]", "print records as they arrive, until Ctrl-C, exit() or DURATION (\"5s\", 0.5)", (*shell).run},
		{"quit", "", "leave, closing every session (Ctrl-D too)", func(*shell, string) bool { return true }},
	}
}

// lookupCommand finds a command by its name or a prefix only it has.
func lookupCommand(name string) (*command, error) {
	var found []*command
	for i := range commands {
		c := &commands[i]
		if c.name == name {
			return c, nil
		}
		if strings.HasPrefix(c.name, name) {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("unknown command :%s (:help lists them)", name)
	case 1:
		return found[0], nil
	}
	var names []string
	for _, c := range found {
		names = append(names, ":"+c.name)
	}
	return nil, fmt.Errorf("ambiguous command :%s (%s)", name, strings.Join(names, ", "))
}

// command runs a ':' command line (without the colon).
func (r *shell) command(line string) (quit bool) {
	name, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	c, err := lookupCommand(name)
	if err != nil {
		r.errorf("%v", err)
		return false
	}
	return c.run(r, strings.TrimSpace(arg))
}

const helpIntro = `Type Starlark, a D clause, or a command.

A D clause — probe descriptions followed by { or /, as in
    syscall::read:entry { @[execname] = count(); }
— is compiled and attached to the REPL's session, the global ` + "`session`" + `.
Its records are printed after each input, and by :run as they arrive.
Starlark sees the dtrace, json, time, math and struct modules; an
expression's value is printed. Tab completes names, attributes, commands
and probe descriptions. Ctrl-C stops a run or clears the line; Ctrl-D
leaves.

Commands:
`

func (r *shell) help(arg string) bool {
	w := r.opts.Stdout
	if arg == "dtrace" {
		for _, d := range dtrace.Docs {
			fmt.Fprintf(w, "%s\n    %s\n", d.Sig, d.Text)
		}
		return false
	}
	io.WriteString(w, helpIntro)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-22s %s\n", ":"+c.name+" "+c.args, c.help)
	}
	return false
}

func (r *shell) list(arg string) bool {
	d := providers.Desc{}
	if arg != "" {
		var err error
		if d, err = providers.ParseDesc(arg); err != nil {
			r.errorf("%v", err)
			return false
		}
	}
	probes, err := providers.Default().List(d)
	if err != nil {
		r.errorf("%v", err)
		return false
	}
	if len(probes) == 0 {
		r.errorf("probe description %s does not match any probes", d)
		return false
	}
	io.WriteString(r.opts.Stdout, output.ListHeader())
	for _, p := range probes {
		io.WriteString(r.opts.Stdout, output.ListLine(p.ID, p.Provider, p.Module, p.Function, p.Name))
	}
	return false
}

// enablings returns the session's attached enablings.
func (r *shell) enablings() []*dtrace.Enabling {
	s := r.current()
	if s == nil {
		return nil
	}
	list, ok := attr(s, "enablings").(*starlark.List)
	if !ok {
		return nil
	}
	var out []*dtrace.Enabling
	for i := 0; i < list.Len(); i++ {
		if e, ok := list.Index(i).(*dtrace.Enabling); ok {
			out = append(out, e)
		}
	}
	return out
}

func (r *shell) attached(string) bool {
	w := r.opts.Stdout
	ens := r.enablings()
	if len(ens) == 0 {
		fmt.Fprintln(w, "nothing is attached")
		return false
	}
	fmt.Fprintf(w, "%5s  %s\n", "ID", "PROBES")
	for _, e := range ens {
		probes := probesOf(e)
		sort.Strings(probes)
		id := attr(e, "id").String()
		if len(probes) == 0 {
			fmt.Fprintf(w, "%5s\n", id)
		}
		for i, p := range probes {
			if i > 0 {
				id = ""
			}
			fmt.Fprintf(w, "%5s  %s\n", id, p)
		}
	}
	return false
}

func (r *shell) detach(arg string) bool {
	n, err := strconv.Atoi(arg)
	if err != nil {
		r.errorf(":detach wants an enabling's id (:attached lists them), not %q", arg)
		return false
	}
	for _, e := range r.enablings() {
		if id, _ := starlark.AsInt32(attr(e, "id")); id == n {
			if _, err := r.call(e, "detach"); err != nil {
				r.printCause(err)
			}
			return false
		}
	}
	r.errorf("no enabling %d is attached (:attached lists them)", n)
	return false
}

func (r *shell) agg(arg string) bool {
	s := r.current()
	if s == nil {
		return false
	}
	var args []starlark.Value
	if arg != "" {
		args = append(args, starlark.String(arg))
	}
	if _, err := r.call(s, "printa", args...); err != nil {
		r.printCause(err)
	}
	return false
}

func (r *shell) run(arg string) bool {
	s := r.current()
	if s == nil || len(r.enablings()) == 0 {
		r.errorf("nothing is attached to run")
		return false
	}
	var args []starlark.Value
	if arg != "" {
		if f, err := strconv.ParseFloat(arg, 64); err == nil {
			args = append(args, starlark.Float(f))
		} else {
			args = append(args, starlark.String(arg))
		}
	}
	if _, err := r.call(s, "run", args...); err != nil {
		r.printCause(err)
	}
	return false
}
