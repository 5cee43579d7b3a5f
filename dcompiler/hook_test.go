package dcompiler_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/dstar-trace/dstar/dcompiler"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/providers"
	"github.com/dstar-trace/dstar/providers/bpftest"
)

// TestSDTHook checks which kernel hook an sdt probe's program is made
// for: a raw tracepoint when no clause reads the record or arguments
// (directly or through an inline), or for a system call's tracepoint; a
// perf-event tracepoint otherwise.
func TestSDTHook(t *testing.T) {
	bpftest.Require(t)
	for _, c := range []struct {
		src  string
		want ebpf.ProgramType
	}{
		{`sdt:sched::sched_switch { @ = count(); }`, ebpf.RawTracepoint},
		{`sdt:sched::sched_switch { @[probename, execname] = count(); stack(); }`, ebpf.RawTracepoint},
		{`sdt:sched::sched_switch { @[args->prev_pid] = count(); }`, ebpf.TracePoint},
		{`sdt:sched::sched_switch /arg0 != 0/ { @ = count(); }`, ebpf.TracePoint},
		{`inline int first = arg0; sdt:sched::sched_switch { @[first] = count(); }`, ebpf.TracePoint},
		{`sdt:syscalls::sys_enter_openat { @[args->flags] = count(); }`, ebpf.RawTracepoint},
		{`sdt:syscalls::sys_exit_openat { @[arg0] = count(); }`, ebpf.RawTracepoint},
	} {
		f := source.NewFile("test.d", c.src)
		p, err := dcompiler.Compile([]*source.File{f}, dcompiler.Options{Providers: providers.Default()})
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		if got := p.Code.Programs[0].Spec.Type; got != c.want {
			t.Errorf("%s: a %v program, want %v", c.src, got, c.want)
		}
	}
}
