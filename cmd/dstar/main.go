// Command dstar is a DTrace-compatible tracer for Linux: it compiles D
// programs to BPF, attaches them to the kernel's probes and prints what
// they record. Its command line is dtrace(1)'s.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/dstar-trace/dstar/engine/output"
	"github.com/dstar-trace/dstar/engine/sink"
)

// version is what -V prints: the D API version, as dtrace prints it
// (scripts test it); -V -v adds dstar's own.
const version, dstarVersion = "Oracle D 2.0", "dstar 0.1"

// init keeps main on the process's main thread, where dtrace fires BEGIN
// and END: there tid is pid, and curthread the process's leader.
func init() { runtime.LockOSThread() }

func main() {
	if n := os.Getenv(releaseEnv); n != "" {
		os.Exit(releaseFiles(n))
	}
	os.Exit(run(os.Args, sink.Stdout(), os.Stderr))
}

// progName is the name messages carry: the name dstar was invoked as, so
// that a link named dtrace speaks as dtrace.
func progName(arg0 string) string {
	name := filepath.Base(arg0)
	if name == "" || name == "." || strings.HasPrefix(name, "__debug") || strings.HasSuffix(name, ".test") {
		return "dstar"
	}
	return name
}

// source is one D program given on the command line.
type source struct {
	kind byte   // 'n', 'P', 'm', 'f' (a probe description), or 's' (a file)
	text string // the argument as given
}

// config is the parsed command line.
type config struct {
	prog    string
	sources []source
	list    bool
	quiet   bool
	check   bool // -e
	zero    bool // -Z
	destr   bool // -w
	verbose bool
	xopts   [][2]string
	output  string
	cmds    []string
	pids    []int
	macros  []string
	cpp     bool              // -C
	defines map[string]string // -D
	undefs  []string          // -U
	incdirs []string          // -I
	stdc    string            // -X: a, c, s or t
	incList bool              // -H: list the files #include reads
	libdirs []string          // -L: directories of D library files
	showBPF bool              // -S: print the programs' instructions
	header  bool              // -h: write a C header for the scripts' providers
}

// exit statuses, as dtrace(1)'s.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError is bad command-line usage: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func parseArgs(args []string) (*config, error) {
	c := &config{prog: progName(args[0])}
	// -32 and -64 choose the data model, before getopt sees them.
	var argv []string
	for _, a := range args[1:] {
		switch a {
		case "-64":
			continue
		case "-32":
			return nil, fmt.Errorf("-32 is not supported: dstar's programs are 64-bit")
		case "--help":
			// -h is dtrace's header generation: help has the long name.
			return c, errHelp
		}
		argv = append(argv, a)
	}
	opts, rest, err := getopt(argv, "b:c:eFGh?HlL:m:n:o:p:qs:SvVwx:X:ZP:f:i:CD:U:I:")
	if err != nil {
		return nil, &usageError{err.Error()}
	}
	for _, o := range opts {
		switch o.name {
		case 'f':
			// "-f json" and "-f text" choose the output format; any
			// other -f is dtrace's function probe description.
			if o.arg == "json" || o.arg == "text" {
				c.xopts = append(c.xopts, [2]string{"outputformat", o.arg})
				continue
			}
			c.sources = append(c.sources, source{o.name, o.arg})
		case 'n', 'P', 'm', 's', 'i':
			c.sources = append(c.sources, source{o.name, o.arg})
		case 'b':
			c.xopts = append(c.xopts, [2]string{"bufsize", o.arg})
		case 'G':
			return nil, fmt.Errorf("-G is not supported: dstar reads USDT probes from the ELF notes <sys/sdt.h> makes (package systemtap-sdt-dev), which need no generated object")
		case 'H':
			c.incList = true
		case 'L':
			c.libdirs = append(c.libdirs, o.arg)
		case 'S':
			c.showBPF = true
		case 'X':
			c.xopts = append(c.xopts, [2]string{"stdc", o.arg})
		case 'c':
			c.cmds = append(c.cmds, o.arg)
		case 'p':
			pid, err := strconv.Atoi(o.arg)
			if err != nil || pid <= 0 {
				return nil, fmt.Errorf("invalid process ID: %s", o.arg)
			}
			c.pids = append(c.pids, pid)
		case 'e':
			c.check = true
		case 'l':
			c.list = true
		case 'q':
			c.quiet = true
		case 'F':
			c.xopts = append(c.xopts, [2]string{"flowindent", ""})
		case 'o':
			c.output = o.arg
		case 'v':
			c.verbose = true
		case 'w':
			c.destr = true
		case 'Z':
			c.zero = true
		case 'x':
			name, val, _ := strings.Cut(o.arg, "=")
			c.xopts = append(c.xopts, [2]string{name, val})
		case 'V':
			return c, errVersion
		case 'h':
			c.header = true
		case '?':
			return c, errHelp
		case 'C':
			c.cpp = true
		case 'D':
			c.define(o.arg)
		case 'U':
			c.undefs = append(c.undefs, o.arg)
		case 'I':
			c.incdirs = append(c.incdirs, o.arg)
		}
	}
	// The preprocessor's and the library's settings may also come as -x
	// options (an invalid value is reported with the others).
	for _, x := range c.xopts {
		switch x[0] {
		case "define":
			c.define(x[1])
		case "undef":
			c.undefs = append(c.undefs, x[1])
		case "incdir":
			c.incdirs = append(c.incdirs, x[1])
		case "libdir":
			c.libdirs = append(c.libdirs, x[1])
		case "stdc":
			c.stdc = x[1]
		case "cpp":
			c.cpp = true
		}
	}
	c.macros = rest
	return c, nil
}

// define is -D NAME[=VALUE].
func (c *config) define(arg string) {
	name, val, _ := strings.Cut(arg, "=")
	if c.defines == nil {
		c.defines = map[string]string{}
	}
	c.defines[name] = val
}

var (
	errVersion = errors.New("version")
	errHelp    = errors.New("help")
)

func usage(w io.Writer, prog string) { io.WriteString(w, output.Usage(prog)) }

func run(args []string, stdout, stderr io.Writer) int {
	prog := progName(args[0])
	if status, ok := subcommand(prog, args[1:], stdout, stderr); ok {
		return status
	}
	c, err := parseArgs(args)
	switch {
	case err == errVersion:
		fmt.Fprintf(stdout, "%s: %s\n", prog, version)
		if c != nil && c.verbose {
			fmt.Fprintf(stdout, "%s: %s\n", prog, dstarVersion)
		}
		return exitOK
	case err == errHelp:
		usage(stdout, prog)
		return exitOK
	case err != nil:
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			usage(stderr, prog)
			return exitUsage
		}
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return exitError
	}
	if len(c.sources) == 0 && c.header {
		fmt.Fprintf(stderr, "%s: -h requires one or more scripts or enabling options\n", prog)
		return exitUsage
	}
	if len(c.sources) == 0 && !c.list {
		usage(stderr, prog)
		return exitUsage
	}
	t := &tracer{cfg: c, stdout: stdout, stderr: stderr}
	return t.run()
}
