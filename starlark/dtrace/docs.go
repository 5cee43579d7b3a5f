package dtrace

import "strings"

// Doc documents one member of the module's API. The README's module
// section and the REPL's help are made from Docs, and a test fails when
// an API member has no entry or the README is stale.
type Doc struct {
	Sig  string // how it is called
	Text string
}

// Docs is the module's API reference, in the order it is presented.
var Docs = []Doc{
	{"dtrace.compile(src, args=[])", "Compiles and checks D source without touching the kernel (no root needed for BEGIN/END/profile programs; providers that read tracefs need it). Returns a program: `.probes` (matched probes as \"prov:mod:func:name\"), `.aggregations` (\"@\", \"@name\"), `.source`. `args` are the macro arguments $1, $2, ...; a compile error names the D line and column, and the Starlark backtrace the call site."},
	{"dtrace.probes(pattern)", "The probes matching a description with globs, as `dstar -l` lists them, as \"prov:mod:func:name\" strings. Creates nothing in the kernel."},
	{"dtrace.session(**opts)", "A new tracing session. Options are dtrace's -x options: `quiet` (no probe lines before records), `switchrate` (how often records are read: seconds or \"10ms\"), `bufsize`, `strsize`, `aggsize`, .... Every session is closed when the script ends, however it ends."},
	{"dtrace.folded(agg)", "An aggregation keyed by a stack, as `s.aggregations()` gives it (`s.aggregations()[\"@\"]`), as folded stacks: one line per stack, frames root first joined by `;`, then a space and the value — what FlameGraph's flamegraph.pl and speedscope read. Frames lose their offsets (``libc.so.6`read``), keys that are not stacks become root frames (`@[execname, ustack()]` puts each command under its name), and rows that fold alike add up. The same text `-x stackfmt=folded` prints."},
	{"dtrace.flamegraph(stacks, path, title=\"\", subtitle=\"\", width=1200)", "Draws `stacks` — an aggregation keyed by a stack or folded text — as an interactive flame graph in a self-contained SVG file at `path`: hover for a frame's samples, click to zoom, Ctrl-F to search."},
	{"dtrace.export(s, agg, name, help=\"\", labels=[], max_series=10000, interval=None)", "Exports aggregation `agg` (\"@lat\") of session `s` as the Prometheus metric `name`, which `dstar serve` serves at /metrics: `count()` and `sum()` as counters (they keep growing across `clear`, `trunc` and re-attaching), `quantize()`, `lquantize()` and `llquantize()` as histograms whose `le` bounds are D's buckets (the greatest value each counts), with `_sum` and `_count`, and `min()`, `max()`, `avg()` and `stddev()` as gauges. `labels` names the keys, one per key; stacks cannot be labels. Values are read from the kernel when Prometheus scrapes (or at most once per `interval`), never per event. Past `max_series` series, new ones are dropped and counted in `dstar_metric_series_dropped_total`. The aggregation must be in a program already attached to `s`; programs attached later with the same aggregation feed the same metric. Outside `dstar serve` exports are kept but not served."},
	{"dtrace.pprof(s, agg, path=None, name=None, type=\"samples\", unit=\"count\", labels=[])", "Writes a stack-keyed `count()` or `sum()` aggregation of session `s` (\"@stacks\") as a pprof profile (what `go tool pprof`, Pyroscope and Parca read), to the file `path` and, with `name`, as the profile `dstar serve` serves at /debug/pprof/NAME (the latest one). A row is a sample: its stacks are its locations (kernel frames above user frames), each user frame with its mapping (file, range, build ID) and function, kernel frames in [kernel.kallsyms]; other keys are labels named by `labels`. `type` and `unit` name the value (\"off_cpu\", \"nanoseconds\"). `dtrace.pprof(agg, path)` takes an aggregation as `s.aggregations()` gives it instead: functions and modules only."},
	{"dtrace.sleep(duration)", "Waits. Durations are int or float seconds, or strings such as \"500ms\" and \"2s\". Ctrl-C ends the wait early."},
	{"dtrace.args", "The script's arguments (`dstar run FILE.star ARGS...`), a list of strings."},
	{"s.attach(program, args=[])", "Compiles `program` if it is a string, loads it, attaches its probes and fires its BEGIN clauses; returns an enabling. Works while other programs are attached; each has its own variables and aggregations. What BEGIN prints is shown before attach returns."},
	{"s.detach(enabling)", "Same as `enabling.detach()`."},
	{"s.run(duration=None, on_event=None)", "Pumps records for `duration` (forever when None), calling `on_event(ev)` for each, or printing them as dstar's command line does. Returns early when a D program calls exit(), when `on_event` returns False, or on Ctrl-C. An event has `.kind` (\"printf\", \"trace\", \"exit\", \"error\", \"drop\"), `.probe`, `.cpu`, `.pid`, `.timestamp`, `.values` (the traced values) and `.text` (what the command line prints)."},
	{"s.wait_until(predicate, timeout)", "Pumps records, calling `predicate()` between them; returns True as soon as it holds, False at the timeout."},
	{"s.aggregations()", "A dict from aggregation name (\"@\", \"@name\") to a dict from key tuple to value, over the session's programs, detached ones included (their last values). A stack in a key (`stack()`, `ustack()`) is a tuple of frame strings, innermost first, as dtrace prints them (\"vmlinux`do_sys_openat2+0x5a\")."},
	{"s.printa(name=None)", "Prints aggregations (or the one named) exactly as dstar prints them at exit."},
	{"s.clear(name)", "Empties an aggregation: later reads show only what was aggregated since."},
	{"s.trunc(name, n)", "Keeps the n rows of an aggregation with the largest values (the smallest for negative n)."},
	{"s.stats()", "A struct with `records` (delivered), `drops` (lost in buffers or in the script's queue), `errors` (run-time faults) and `ustack_cuts` (user stacks cut short, each ending in a `[stack cut: …]` marker frame)."},
	{"s.watch(pid)", "Follows process `pid` as `dstar -p` does, while the session is open: its unwind tables are loaded at once, so that its first user stacks are whole (not cut short while they load), and its mappings are kept, so that its stacks are named even after it exits. An error if there is no such process."},
	{"s.close()", "Fires END of every attached program, shows what it printed, and releases every kernel object."},
	{"s.enablings", "The attached enablings."},
	{"e.detach()", "Fires the program's END clauses, shows what they printed, and releases its kernel objects. Its last aggregation values stay readable through `s.aggregations()`."},
	{"e.id, e.program, e.attached", "The enabling's number in its session, its program, and whether it is still attached."},
}

// Markdown renders Docs as the README's API section.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| call | what it does |\n|---|---|\n")
	for _, d := range Docs {
		b.WriteString("| `" + d.Sig + "` | " + strings.ReplaceAll(d.Text, "|", "\\|") + " |\n")
	}
	return b.String()
}
