package providers

import (
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
)

// TracingFrames says which frames at the top of a kernel stack walked by
// p's program belong to the code that ran the program rather than to
// where p fired, so that stackdepth and caller can leave them out (as the
// consumer leaves them out of stack( ), by their symbols).
//
// program is how many frames the program itself makes: a raw tracepoint's
// walk starts in it; a tracepoint's starts at the registers its perf
// handler saved, a perf event's at the interrupted ones, a uprobe's in
// user mode. funcs names the kernel functions that may come next on the
// way from the probe site to the program: the tracepoint's iterator
// (__traceiter_<event>, there when more than one handler is attached),
// its BPF or perf wrapper (not always a frame of its own: the compiler
// may make it a jump), and bpf_trace_run<N>.
func TracingFrames(p *Probe) (program int, funcs []string) {
	switch p.ProgType {
	case ebpf.RawTracepoint, ebpf.Tracing:
		if p.Provider == "dtrace" || p.ProgType == ebpf.Tracing && p.AttachType != ebpf.AttachTraceRawTp {
			// BEGIN and END run in dstar. fentry and fexit (fbt) run
			// through a trampoline, which this does not know of yet:
			// only the program's frame is left out.
			return 1, nil
		}
		event := p.Name
		if p.Provider == "syscall" || p.Provider == "sdt" && p.Module == "syscalls" {
			// Both run on the raw sys_enter and sys_exit.
			event = "sys_enter"
			if p.Name == "return" || strings.HasPrefix(p.Name, "sys_exit_") {
				event = "sys_exit"
			}
		}
		funcs = []string{"__traceiter_" + event, "__bpf_trace_" + event}
		for n := 1; n <= 12; n++ {
			funcs = append(funcs, "bpf_trace_run"+strconv.Itoa(n))
		}
		return 1, funcs
	case ebpf.TracePoint:
		funcs = []string{"__traceiter_" + p.Name, "perf_trace_" + p.Name, "perf_syscall_enter", "perf_syscall_exit"}
		if p.Module == "syscalls" {
			// A system call's tracepoint hangs off sys_enter or sys_exit,
			// whose iterator runs when another program is attached there.
			funcs = append(funcs, "__traceiter_sys_enter", "__traceiter_sys_exit")
		}
		return 0, funcs
	}
	return 0, nil
}

// MayRunPrograms reports whether the kernel function name is of a family
// that runs BPF programs for probes (those TracingFrames may name, and
// trace_call_bpf, which runs kprobe programs): callers use it to read the
// extents of just those from kallsyms, and to leave such frames out of
// stacks.
func MayRunPrograms(name string) bool {
	for _, p := range []string{"__traceiter_", "__bpf_trace_", "bpf_trace_run", "perf_trace_", "perf_syscall_", "trace_call_bpf"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
