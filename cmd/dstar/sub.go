package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/dstar-trace/dstar/engine/sink"
	"github.com/dstar-trace/dstar/starlark/repl"
	"github.com/dstar-trace/dstar/starlark/script"
	"github.com/dstar-trace/dstar/stdlib"
)

// subcommand runs dstar's own commands — run, tool, repl, serve, and a .star
// file given alone — and reports whether args named one. Everything else
// is dtrace(1)'s command line.
func subcommand(prog string, args []string, stdout, stderr io.Writer) (int, bool) {
	if len(args) == 0 {
		// On a terminal, no arguments is the REPL; otherwise dtrace's usage.
		if repl.IsTerminal(os.Stdin) {
			return runREPL(prog, stdout, stderr), true
		}
		return 0, false
	}
	opts := script.Options{Stdout: stdout, Stderr: stderr, Prog: prog, StdoutName: sink.StdoutName(), Release: releaseNow}
	switch {
	case args[0] == "repl":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "Usage: %s repl\n", prog)
			return exitUsage, true
		}
		return runREPL(prog, stdout, stderr), true
	case args[0] == "run":
		if len(args) < 2 {
			fmt.Fprintf(stderr, "Usage: %s run FILE.star [ARGS...]\n", prog)
			return exitUsage, true
		}
		return runFile(args[1], args[2:], opts), true
	case strings.HasSuffix(args[0], ".star"):
		return runFile(args[0], args[1:], opts), true
	case args[0] == "tool":
		return runTool(args[1:], opts), true
	case args[0] == "serve":
		return runServe(prog, args[1:], stdout, stderr), true
	}
	return 0, false
}

// runREPL runs the REPL, with line editing when stdin is a terminal.
func runREPL(prog string, stdout, stderr io.Writer) int {
	return repl.Run(repl.Options{
		Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, Prog: prog, StdoutName: sink.StdoutName(), Release: releaseNow,
		Terminal: repl.IsTerminal(os.Stdin) && repl.IsTerminal(os.Stdout),
	})
}

func runFile(path string, args []string, opts script.Options) int {
	src, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(opts.Stderr, "%s: failed to open %s: %v\n", opts.Prog, path, err)
		return exitError
	}
	opts.Args = args
	return script.Run(path, src, opts)
}

// runTool runs an embedded tool, or lists them.
func runTool(args []string, opts script.Options) int {
	tools := stdlib.Tools()
	if len(args) == 0 || args[0] == "-h" || args[0] == "help" {
		fmt.Fprintf(opts.Stdout, "Usage: %s tool NAME [flags]\n\n", opts.Prog)
		for _, t := range tools {
			fmt.Fprintf(opts.Stdout, "  %-12s %s\n", t.Name, t.Summary)
		}
		return exitOK
	}
	for _, t := range tools {
		if t.Name == args[0] {
			src, err := fs.ReadFile(stdlib.FS, t.Path)
			if err != nil {
				fmt.Fprintf(opts.Stderr, "%s: %v\n", opts.Prog, err)
				return exitError
			}
			opts.Args = args[1:]
			return script.Run("@stdlib//"+t.Path, src, opts)
		}
	}
	fmt.Fprintf(opts.Stderr, "%s: no tool %q; %s tool lists them\n", opts.Prog, args[0], opts.Prog)
	return exitUsage
}
