package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dstar-trace/dstar/dcompiler"
	"github.com/dstar-trace/dstar/dcompiler/check"
	"github.com/dstar-trace/dstar/dcompiler/cpp"
	dsource "github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/engine"
	"github.com/dstar-trace/dstar/engine/output"
	"github.com/dstar-trace/dstar/engine/sink"
	"github.com/dstar-trace/dstar/providers"
)

// tracer runs one dtrace(1)-style invocation.
type tracer struct {
	cfg            *config
	stdout, stderr io.Writer
	files          []*dsource.File
	kinds          []source
	reg            *providers.Registry
	opts           map[string]string
}

func (t *tracer) errorf(format string, args ...any) {
	fmt.Fprintf(t.stderr, "%s: %s\n", t.cfg.prog, fmt.Sprintf(format, args...))
}

// descText turns -P/-m/-f/-n/-i arguments into D clause text.
func (t *tracer) descText(s source) (string, error) {
	desc, rest := s.text, ""
	if i := strings.IndexAny(s.text, " \t\n/{"); i >= 0 {
		desc, rest = s.text[:i], s.text[i:]
	}
	switch s.kind {
	case 'P':
		desc += ":::"
	case 'm':
		desc += "::"
	case 'f':
		desc += ":"
	case 'i':
		p, err := t.probeByID(desc)
		if err != nil {
			return "", fmt.Errorf("invalid probe specifier %s: %v", s.text, err)
		}
		desc = p.Provider + ":" + p.Module + ":" + p.Function + ":" + p.Name
	}
	return desc + rest, nil
}

// probeByID finds the probe with an ID dstar -l shows.
func (t *tracer) probeByID(text string) (*providers.Probe, error) {
	id, err := strconv.ParseUint(text, 0, 32)
	if err != nil || id == 0 {
		return nil, fmt.Errorf("invalid probe identifier %s", text)
	}
	all, err := t.reg.List(providers.Desc{})
	if err != nil {
		return nil, err
	}
	for _, p := range all {
		if p.ID == int(id) {
			return p, nil
		}
	}
	return nil, fmt.Errorf("invalid probe identifier %d", id)
}

// descName is how dtrace(1) names a -n argument in its notices: the
// argument cut before its first '{', '/' or ';'.
func descName(arg string) string {
	if i := strings.IndexAny(arg, "{/;"); i >= 0 {
		return arg[:i]
	}
	return arg
}

// readSources reads -s files and turns descriptions into D text.
func (t *tracer) readSources() error {
	for _, s := range t.cfg.sources {
		if s.kind == 's' {
			b, err := os.ReadFile(s.text)
			if err != nil {
				var pe *os.PathError
				if errors.As(err, &pe) {
					err = pe.Err
				}
				return fmt.Errorf("failed to open %s: %s", s.text, capitalize(err.Error()))
			}
			text := stripShebang(string(b))
			if t.cfg.cpp || engine.OptionSet(t.pragmaOpts(text), "cpp") {
				opts := cpp.Options{
					Defines: t.cfg.defines, Undefs: t.cfg.undefs, Includes: t.cfg.incdirs, Stdc: t.cfg.stdc,
				}
				if t.cfg.incList {
					// As cpp -H: a dot per level of nesting, then the path.
					opts.Included = func(depth int, path string) {
						fmt.Fprintf(t.stderr, "%s %s\n", strings.Repeat(".", depth), path)
					}
				}
				out, err := cpp.Run(s.text, text, opts)
				var errs cpp.Errors
				if errors.As(err, &errs) {
					// As dtrace, which pipes the script into cpp: cpp's
					// words, the script called /dev/stdin, then dtrace's.
					for _, e := range errs {
						file := e.File
						if file == s.text {
							file = "/dev/stdin"
						}
						fmt.Fprintf(t.stderr, "%s:%d: error: %s\n", file, e.Line, e.Msg)
					}
					return fmt.Errorf("failed to compile script %s: Preprocessor failed to process input program", s.text)
				}
				if err != nil {
					return fmt.Errorf("failed to preprocess %s: %v", s.text, err)
				}
				text = out
			}
			t.files = append(t.files, dsource.NewFile(s.text, text))
		} else {
			text, err := t.descText(s)
			if err != nil {
				return err
			}
			t.files = append(t.files, dsource.NewFile("", text))
		}
		t.kinds = append(t.kinds, s)
	}
	return nil
}

// pragmaOpts reads "#pragma D option" lines from raw script text, before
// any preprocessing ("#pragma D option cpp" asks for it).
func (t *tracer) pragmaOpts(text string) map[string]string {
	opts := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "#pragma"); ok {
			if name, val, ok := check.PragmaOption(rest); ok {
				opts[name] = val
			}
		}
	}
	return opts
}

// stripShebang blanks a "#!" first line, keeping line numbers.
func stripShebang(s string) string {
	if strings.HasPrefix(s, "#!") {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			return s[i:]
		}
		return ""
	}
	return s
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func (t *tracer) run() int {
	t.reg = providers.Default()
	if err := t.readSources(); err != nil {
		t.errorf("%v", err)
		return exitError
	}
	if t.cfg.list {
		return t.list()
	}
	if t.cfg.header {
		return t.header()
	}
	t.opts = map[string]string{}
	for _, x := range t.cfg.xopts {
		t.opts[x[0]] = x[1]
	}
	if err := checkOptions(t.opts); err != nil {
		t.errorf("%v", err)
		return exitError
	}
	// As dtrace(1), SIGINT and SIGTERM are caught from before compiling:
	// one then ends the run once compiling or attaching is done.
	intr := catchInterrupts()
	defer intr.stop()

	// Targets first: $target must be known when compiling.
	var kids []*child
	var targetExits []<-chan struct{}
	var targetPids []int
	target := 0
	for _, cmdline := range t.cfg.cmds {
		k, err := startHeld(cmdline)
		if err != nil {
			for _, k := range kids {
				k.kill()
			}
			t.errorf("%v", err)
			return exitError
		}
		kids = append(kids, k)
		targetExits = append(targetExits, k.exited)
		targetPids = append(targetPids, k.cmd.Process.Pid)
		if target == 0 {
			target = k.cmd.Process.Pid
		}
	}
	killKids := func() {
		for _, k := range kids {
			k.kill()
		}
	}
	for _, pid := range t.cfg.pids {
		ch, err := watchPid(pid)
		if err != nil {
			killKids()
			t.errorf("%v", err)
			return exitError
		}
		targetExits = append(targetExits, ch)
		targetPids = append(targetPids, pid)
		if target == 0 {
			target = pid
		}
	}
	t.addTargets(targetPids)

	// Options set in the scripts shape the compilation; -x ones win.
	for k, v := range dcompiler.PragmaOptions(t.files) {
		if engine.CheckOption(k, v) != nil {
			continue // the compiler reports it at its #pragma, as dtrace does
		}
		if _, set := t.opts[k]; !set {
			t.opts[k] = v
		}
	}
	if err := checkOptions(t.opts); err != nil {
		killKids()
		t.errorf("%v", err)
		return exitError
	}
	// -x evaltime says where -c commands are held while probes are found
	// and attached: by default at exec, so that their first system call
	// is seen. Probes on the shared libraries they have not mapped yet
	// are found from their executables' DT_NEEDED (procmaps.Load) and
	// fire once the libraries are mapped.
	if evaltime := t.opts["evaltime"]; evaltime != "" {
		if err := advanceAll(kids, evaltime); err != nil {
			killKids()
			t.errorf("%v", err)
			return exitError
		}
	}
	t.hold("compile", intr)
	prog, err := t.compile(target)
	if err != nil {
		killKids()
		t.compileError(err)
		return exitError
	}
	if intr.seen() {
		// Interrupted while compiling: nothing was traced.
		killKids()
		return exitOK
	}
	if t.cfg.showBPF {
		t.showPrograms(prog)
	}
	if err := checkOptions(t.opts); err != nil {
		killKids()
		t.errorf("%v", err)
		return exitError
	}
	quiet := t.cfg.quiet || engine.OptionSet(t.opts, "quiet")
	// With -e nothing is enabled, so dtrace reports no matches.
	if !quiet && !t.cfg.check {
		for i, f := range t.files {
			if t.kinds[i].kind == 's' {
				t.errorf("%s", output.Matched("script", f.Name, prog.MatchedIn(f)))
			} else {
				t.errorf("%s", output.Matched("description", descName(t.kinds[i].text), prog.MatchedIn(f)))
			}
		}
	}
	if t.cfg.check {
		killKids()
		return exitOK
	}
	total := 0
	for _, f := range t.files {
		total += prog.MatchedIn(f)
	}
	if total == 0 && !t.cfg.zero && !engine.OptionSet(t.opts, "zdefs") {
		killKids()
		t.errorf("no probes matched")
		return exitError
	}
	destructive := t.cfg.destr || engine.OptionSet(t.opts, "destructive")
	if prog.Info.Destructive && !destructive {
		killKids()
		t.errorf("could not enable tracing: Destructive actions not allowed")
		return exitError
	}
	if destructive && !quiet {
		t.errorf("allowing destructive actions")
	}

	// Deferred first, so run last: when the output is complete.
	var rel releaser
	defer rel.handOff()
	out, outName := t.stdout, ""
	if t.cfg.output != "" {
		f, err := os.OpenFile(t.cfg.output, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			killKids()
			t.errorf("failed to open output file '%s': %v", t.cfg.output, err)
			return exitError
		}
		defer f.Close()
		out, outName = f, t.cfg.output
	} else {
		outName = sink.StdoutName()
	}
	bw := sink.New(out, outName, true)
	defer bw.Close()

	cpu, onCPU := cpuOption(t.opts)
	sess := engine.NewSession(engine.Options{
		// JSON records carry what quiet mode prints: no probe lines.
		Quiet: quiet || t.opts["outputformat"] == "json", Out: bw, Err: t.stderr, Prog: t.cfg.prog,
		FlowIndent: engine.OptionSet(t.opts, "flowindent") && t.opts["outputformat"] != "json",
		RawBytes:   engine.OptionSet(t.opts, "rawbytes"),
		SwitchRate: switchRate(t.opts), StatusRate: rateOption(t.opts, "statusrate"), AggRate: rateOption(t.opts, "aggrate"), SpecSize: specSize(t.opts), PrintSize: printSize(t.opts),
		JSON:    t.opts["outputformat"] == "json",
		AggSort: aggSort(t.opts), AggPerCPU: engine.OptionSet(t.opts, "aggpercpu"),
		Folded: t.opts["stackfmt"] == "folded", NoInline: engine.OptionSet(t.opts, "noinline"),
		OnCPU: onCPU, CPU: cpu,
		SkipRefused: engine.OptionSet(t.opts, "skiprefused"),
		Release:     rel.add,
	})
	// Output that cannot be written is reported once, naming the file,
	// and ends tracing with status 1, as in dtrace.
	bw.OnFail(func(err *sink.Error) { sess.Fail(err) })
	t.hold("attach", intr)
	// -p processes run on while tracing begins: their unwind tables
	// are loaded before the probes fire (-c ones are held at exec).
	for _, pid := range t.cfg.pids {
		sess.PreloadUserStacks(pid)
	}
	en, err := sess.Enable(prog, t.reg)
	if err != nil {
		killKids()
		t.errorf("could not enable tracing: %v", err)
		return exitError
	}
	t.hold("begin", intr)
	// Where user stacks are walked by call-frame information, the -c
	// commands' unwind tables are loaded before they run on, so that
	// their first stacks are whole: -c commands held at exec are first
	// run to their entry points, their libraries mapped (their dynamic
	// linker's own stacks, traced meanwhile, are cut short, and marked).
	if en.WalksUserStacks() {
		if evaltime := t.opts["evaltime"]; evaltime == "" || evaltime == "exec" {
			// A command that cannot be run to its entry (a static
			// one, another architecture) is left where it is.
			advanceAll(kids, "preinit")
		}
		for _, k := range kids {
			en.LoadUserStacks(k.cmd.Process.Pid)
		}
	}
	// Their mappings are kept read, and followed from before the -c
	// ones run, so that their user stacks can be resolved after they
	// exit.
	watching := make(chan struct{})
	defer close(watching)
	for _, pid := range targetPids {
		engine.WatchProcess(pid, watching)
	}
	// Interrupted while attaching: the commands never run.
	released := !intr.seen()
	if released {
		for _, k := range kids {
			k.release()
		}
	}

	// As dtrace(1), stop when every -c and -p process has gone, saying
	// how each went.
	exited, live := eachDone(targetExits), len(targetExits)
wait:
	for {
		select {
		case <-sess.Done():
			break wait
		case <-intr.first:
			// dtrace(1) ends the line the terminal echoed ^C on, even in
			// quiet mode, before END's output and the aggregations.
			if t.opts["outputformat"] != "json" {
				io.WriteString(bw, "\n")
			}
			break wait
		case i := <-exited:
			if !quiet {
				var state *os.ProcessState
				if i < len(kids) {
					state = kids[i].state
				}
				t.errorf("%s", exitNotice(targetPids[i], state))
			}
			if live--; live == 0 {
				break wait
			}
		}
	}
	if err := en.Disable(); err != nil {
		t.errorf("%v", err)
	}
	t.hold("end", intr)
	// A second interrupt makes dstar impatient, as dtrace: what was
	// traced is written, the aggregations are not, and the status is
	// what it would have been.
	t.hold("print", intr)
	if !intr.impatient() {
		t.printAggregations(sess, en, bw)
	}
	bw.Close()
	// User stacks cut short are reported as drops are: each such stack
	// ends in a marker frame, and the count says how many there were.
	for _, c := range en.UStackCuts() {
		t.errorf("%s", output.UStackCuts(c.Count, c.Reason))
	}
	status := sess.Status()
	sess.Close()
	if !released {
		killKids()
	}
	for _, k := range kids {
		k.cmd.Process.Kill()
	}
	return status
}

// compile compiles every -n/-s program as one.
func (t *tracer) compile(target int) (*dcompiler.Program, error) {
	macros := append([]string{t.scriptName()}, t.cfg.macros...)
	strsize, _ := engine.ParseSize(t.opts["strsize"], 256)
	bufsize, _ := engine.ParseSize(t.opts["bufsize"], 4<<20)
	aggsize, _ := engine.ParseSize(t.opts["aggsize"], 4<<20)
	dynvarsize, _ := engine.ParseSize(t.opts["dynvarsize"], 1<<20)
	nspec, _ := strconv.Atoi(t.opts["nspec"])
	cpu, onCPU := cpuOption(t.opts)
	frames, _ := strconv.Atoi(t.opts["stackframes"])
	uframes, _ := strconv.Atoi(t.opts["ustackframes"])
	maxframes, _ := strconv.Atoi(t.opts["maxframes"])
	tregs, _ := strconv.Atoi(t.opts["tregs"])
	scratch, _ := engine.ParseSize(t.opts["scratchsize"], 0)
	return dcompiler.Compile(t.files, dcompiler.Options{
		OnCPU: onCPU, CPU: cpu,
		Providers: t.reg, Macros: macros, Target: target,
		StrSize: int(strsize), BufSize: int(bufsize), AggSize: int(aggsize),
		DynVarSize: int(dynvarsize), NSpec: nspec,
		AllowZero: t.cfg.zero || engine.OptionSet(t.opts, "zdefs"), Destructive: t.cfg.destr || engine.OptionSet(t.opts, "destructive"),
		DefaultArgs: engine.OptionSet(t.opts, "defaultargs"), ArgRef: engine.OptionSet(t.opts, "argref"),
		Empty: engine.OptionSet(t.opts, "empty"), PSpec: engine.OptionSet(t.opts, "pspec"),
		StackFrames: frames, UStackFrames: uframes, MaxFrames: maxframes, TupleRegs: tregs, ScratchSize: int(scratch), LibDirs: t.cfg.libdirs,
		OptionProblem: engine.PragmaOptionProblem, Version: t.opts["version"],
	})
}

// showPrograms is -S: where dtrace prints each clause's DIF, dstar prints
// the BPF programs it will load, on standard error.
func (t *tracer) showPrograms(prog *dcompiler.Program) {
	for _, p := range prog.Code.Programs {
		what := p.Probe.String()
		if len(p.Probes) > 1 {
			what = fmt.Sprintf("%d probes (%s, ...)", len(p.Probes), p.Probes[0])
		}
		fmt.Fprintf(t.stderr, "\nBPF program %s for %s: %s, %d instructions\n%v", p.Spec.Name, what,
			p.Spec.Type, len(p.Spec.Instructions), p.Spec.Instructions)
	}
}

// scriptName is $0: the first script's name, else the program name.
func (t *tracer) scriptName() string {
	for _, s := range t.cfg.sources {
		if s.kind == 's' {
			return s.text
		}
	}
	return t.cfg.prog
}

// compileError reports a compile error in dtrace(1)'s words, then where in
// the source it is.
func (t *tracer) compileError(err error) {
	var se *dsource.Error
	if !errors.As(err, &se) {
		t.errorf("failed to compile: %v", err)
		return
	}
	var nm *check.NoMatchError
	isNoMatch := errors.As(err, &nm)
	tag := ""
	if engine.OptionSet(t.opts, "errtags") && se.Tag != "" {
		tag = "[" + se.Tag + "] "
	}
	if se.File != nil && se.File.Name == "" {
		// A -n description: dtrace names the specifier, not a line.
		spec := t.specifierOf(se.File)
		t.errorf("invalid probe specifier %s: %s%s", spec, tag, se.InRegion())
	} else if se.File != nil {
		t.errorf("failed to compile script %s: %s%s", se.File.Name, tag, se.Error())
	} else {
		t.errorf("failed to compile: %s", se.Msg)
	}
	if ex := se.Excerpt(); ex != "" && !isNoMatch {
		fmt.Fprintln(t.stderr, ex)
	}
}

func (t *tracer) specifierOf(f *dsource.File) string {
	for i, g := range t.files {
		if g == f {
			return t.kinds[i].text
		}
	}
	return f.Text
}

// addTargets lets descriptions that name no process (usdt probes with a
// glob or empty provider field) match the targets' probes.
func (t *tracer) addTargets(pidLists ...[]int) {
	u, ok := t.reg.Lookup("usdt").(*providers.USDT)
	if !ok {
		return
	}
	for _, pids := range pidLists {
		for _, pid := range pids {
			u.AddTarget(pid)
		}
	}
}

// list prints the probes the descriptions match, or all, as dtrace -l.
func (t *tracer) list() int {
	// -c and -p give $target, as when tracing: pid probes are listed
	// only for a process. A -c command is never let run.
	target := 0
	if len(t.cfg.pids) > 0 {
		target = t.cfg.pids[0]
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", target)); err != nil {
			t.errorf("failed to grab pid %d: No such process", target)
			return exitError
		}
	}
	if len(t.cfg.cmds) > 0 {
		// Held at exec (or where -x evaltime says): its libraries'
		// probes are listed, mapped or not yet.
		k, err := startHeld(t.cfg.cmds[0])
		if err != nil {
			t.errorf("%v", err)
			return exitError
		}
		defer k.kill()
		if err := k.advance(evaltime(t.cfg.xopts)); err != nil {
			t.errorf("%v", err)
			return exitError
		}
		if target == 0 {
			target = k.cmd.Process.Pid
		}
		t.addTargets([]int{k.cmd.Process.Pid})
	}
	// With -c or -p, -l lists the targets' USDT probes too.
	t.addTargets(t.cfg.pids)
	var descs []providers.Desc
	for i, s := range t.cfg.sources {
		if s.kind == 's' {
			// A script lists what its clauses match.
			prog, err := t.compile(target)
			if err != nil {
				t.compileError(err)
				return exitError
			}
			_ = i
			return t.printList(prog.Probes())
		}
		text, err := t.descText(s)
		if err != nil {
			t.errorf("%v", err)
			return exitError
		}
		if j := strings.IndexAny(text, " \t\n/{"); j >= 0 {
			text = text[:j]
		}
		// As when compiling, $target is 0 without -c or -p.
		text = strings.ReplaceAll(text, "$target", strconv.Itoa(target))
		d, err := providers.ParseDesc(text)
		if err != nil {
			t.errorf("invalid probe specifier %s: %v", s.text, err)
			return exitError
		}
		descs = append(descs, d)
	}
	if len(descs) == 0 {
		descs = append(descs, providers.Desc{})
	}
	var all []*providers.Probe
	seen := map[int]bool{}
	// -v wants argument types, which may cost reading formats and BTF.
	find := t.reg.List
	if t.cfg.verbose {
		find = t.reg.Match
	}
	for i, d := range descs {
		probes, err := find(d)
		var te *providers.TagError
		if errors.As(err, &te) {
			t.errorf("invalid probe specifier %s: %v", t.cfg.sources[i].text, err)
			return exitError
		}
		if err != nil {
			t.errorf("%v", err)
			return exitError
		}
		if len(probes) == 0 && !t.cfg.zero {
			t.errorf("invalid probe specifier %s: probe description %s does not match any probes", t.cfg.sources[i].text, d)
			return exitError
		}
		for _, p := range probes {
			if !seen[p.ID] {
				seen[p.ID] = true
				all = append(all, p)
			}
		}
	}
	return t.printList(all)
}

// printList prints probes as dtrace -l does; a failed write is an error.
func (t *tracer) printList(probes []*providers.Probe) int {
	w := sink.New(t.stdout, sink.StdoutName(), true)
	io.WriteString(w, output.ListHeader())
	for _, p := range probes {
		io.WriteString(w, output.ListLine(p.ID, p.Provider, p.Module, p.Function, p.Name))
		if t.cfg.verbose {
			pa, aa := providers.Stability(p.Provider)
			io.WriteString(w, output.ListAttrs([3]string{pa.Name, pa.Data, pa.Class}, [3]string{aa.Name, aa.Data, aa.Class}, providers.ArgTypes(p)))
		}
	}
	if err := w.Close(); err != nil {
		t.errorf("%v", err)
		return exitError
	}
	return exitOK
}

// printAggregations prints, at exit, every aggregation not yet printed.
func (t *tracer) printAggregations(sess *engine.Session, en *engine.Enabling, w io.Writer) {
	print := en.PrintAggregations
	if t.opts["outputformat"] == "json" {
		print = en.WriteAggregationsJSON
	}
	// A write error is the output's, reported once by its writer.
	var werr *sink.Error
	if err := print(w); err != nil && !errors.As(err, &werr) {
		t.errorf("%v", err)
	}
}

// eachDone delivers the index of each of chs as it is closed.
func eachDone(chs []<-chan struct{}) <-chan int {
	out := make(chan int, len(chs))
	for i, ch := range chs {
		go func() {
			<-ch
			out <- i
		}()
	}
	return out
}

// checkOptions validates every option set, in dtrace(1)'s words.
func checkOptions(opts map[string]string) error {
	for name, val := range opts {
		if err := engine.CheckOption(name, val); err != nil {
			return err
		}
	}
	return nil
}

// cpuOption is -x cpu: the one CPU to trace on, and whether it is set.
func cpuOption(opts map[string]string) (int, bool) {
	v, ok := opts["cpu"]
	if !ok {
		return 0, false
	}
	return engine.ParseCPU(v)
}

// switchRate is how often records are read (-x switchrate), 0 for the
// engine's default.
func switchRate(opts map[string]string) time.Duration {
	return rateOption(opts, "switchrate")
}

// rateOption is a rate option's period, 0 when not set.
func rateOption(opts map[string]string, name string) time.Duration {
	d, _ := engine.ParseRate(opts[name])
	return d
}

// printSize is -x printsize, 0 when not set.
func printSize(opts map[string]string) int {
	n, _ := engine.ParseSize(opts["printsize"], 0)
	return int(n)
}

// specSize is what a speculation may hold (-x specsize), 0 for the
// engine's default.
func specSize(opts map[string]string) int {
	n, _ := engine.ParseSize(opts["specsize"], 0)
	return int(n)
}

// aggSort is how aggregation rows are ordered: -x aggsortkey sorts by key,
// aggsortrev reverses, aggsortkeypos picks the key compared first.
func aggSort(opts map[string]string) output.SortOptions {
	pos, _ := strconv.Atoi(opts["aggsortkeypos"])
	agg, _ := strconv.Atoi(opts["aggsortpos"])
	return output.SortOptions{
		ByKey:   engine.OptionSet(opts, "aggsortkey"),
		Reverse: engine.OptionSet(opts, "aggsortrev"),
		KeyPos:  pos,
		AggPos:  agg,
	}
}

// evaltime is the -x evaltime option, for listing (which reads no other
// options): "exec" unless set.
func evaltime(xopts [][2]string) string {
	v := "exec"
	for _, x := range xopts {
		if x[0] == "evaltime" {
			v = x[1]
		}
	}
	return v
}

// advanceAll runs every held -c command on to evaltime.
func advanceAll(kids []*child, evaltime string) error {
	for _, k := range kids {
		if err := k.advance(evaltime); err != nil {
			return err
		}
	}
	return nil
}

// header is -h: the C header of the providers the scripts define, in the
// -o file or, for one script X.d, in X.h in the current directory.
func (t *tracer) header() int {
	out := t.cfg.output
	if out == "" {
		if len(t.cfg.sources) > 1 {
			t.errorf("-h requires an output file if multiple scripts are specified")
			return exitUsage
		}
		s := t.cfg.sources[0]
		if s.kind != 's' || !strings.HasSuffix(s.text, ".d") {
			t.errorf("-h requires an output file if no scripts are specified")
			return exitUsage
		}
		out = strings.TrimSuffix(filepath.Base(s.text), ".d") + ".h"
	}
	text, err := dcompiler.Header(t.files, t.cfg.libdirs, out)
	if err != nil {
		t.compileError(err)
		return exitError
	}
	if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
		t.errorf("failed to open header file '%s': %v", out, err)
		return exitError
	}
	return exitOK
}

// interrupts are SIGINT and SIGTERM, counted as dtrace(1) counts them:
// the first ends tracing (or the run, once compiling or attaching is
// done), the second makes dstar impatient (it skips the aggregations'
// printout; the status stays what it would have been), and a third,
// which dtrace has no use for, leaves at once: the kernel releases
// every object with the process's descriptors.
type interrupts struct {
	first   chan struct{} // closed at the first
	count   atomic.Int32
	arrived chan struct{} // one token per signal, for hold
	stop    func()
}

func catchInterrupts() *interrupts {
	in := &interrupts{first: make(chan struct{}), arrived: make(chan struct{}, 8)}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-sigs:
				n := in.count.Add(1)
				select {
				case in.arrived <- struct{}{}:
				default:
				}
				switch n {
				case 1:
					close(in.first)
				case 3:
					os.Exit(exitError)
				}
			}
		}
	}()
	in.stop = func() {
		signal.Stop(sigs)
		close(done)
	}
	return in
}

// seen reports whether an interrupt has come.
func (in *interrupts) seen() bool { return in.count.Load() > 0 }

// impatient reports whether a second interrupt has come.
func (in *interrupts) impatient() bool { return in.count.Load() > 1 }

// hold is how a test signals dstar at a chosen phase of its run: with
// DSTAR_TEST_HOLD=PHASE in its environment, dstar says "holding at
// PHASE" on standard error when it gets there and waits for a signal.
// The phases are compile, attach (before probes are attached), begin
// (after BEGIN), end (after END) and print (before the aggregations).
func (t *tracer) hold(phase string, in *interrupts) {
	if os.Getenv("DSTAR_TEST_HOLD") != phase {
		return
	}
	for len(in.arrived) > 0 {
		<-in.arrived
	}
	t.errorf("holding at %s", phase)
	<-in.arrived
}
