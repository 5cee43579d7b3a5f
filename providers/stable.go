package providers

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/dstar-trace/dstar/providers/sysnum"
)

// Stable is one of DTrace's stable providers — proc, sched or io — built
// on the kernel's raw tracepoints. A raw tracepoint's context is its
// TP_PROTO arguments as u64s, among them the kernel pointers (task_struct,
// request) that the D library's translators turn into psinfo_t,
// lwpsinfo_t, bufinfo_t and devinfo_t. The prologue copies those native
// values into arg0..argN; args[i] are D expressions over them (Arg.Expr),
// so args[0]->pr_pid reads only what it needs.
type Stable struct {
	name  string
	first func() (int, error)
	defs  []stableDef
}

// stableDef is one probe: the raw tracepoints it fires on (all with the
// same prototype), which events are the probe's (conds, on the
// tracepoint's arguments), which tracepoint argument each of its native
// arguments arg0..argN is (native), and its args[].
//
// A probe's native arguments are what its args[] translate, in order
// (sched:::off-cpu's arg0 and arg1 are both the next task_struct), so that
// args[1]->pr_pid reads the same way on every probe where args[1] is a
// psinfo_t *, and one clause can serve them all, as in DTrace.
type stableDef struct {
	name   string
	tps    []string
	conds  []stableCond
	native []int
	args   []Arg
	// tick, when set, makes the probe a cpu-clock perf event on every
	// CPU at this period instead of a tracepoint.
	tick time.Duration
}

// Native arguments that are not a tracepoint argument as it is.
const (
	curTask  = -1 // the current task_struct
	execPath = -2 // at sys_enter, the path execve or execveat was given
)

// stableCond keeps the events where tracepoint argument arg passes test.
type stableCond struct {
	arg   int
	test  condTest
	sys   []string // for inSyscalls and isSyscall
	value int32    // for equals
}

type condTest int

const (
	nonzero     condTest = iota // the value is not 0
	isZero                      // the value is 0
	negative                    // the value is negative
	equals                      // the value is value
	newProcess                  // the task_struct it points to is its process's first thread
	newThread                   // ... or a later one
	inSyscalls                  // sys_exit's pt_regs: the call returning is one of sys
	isSyscall                   // the value (sys_enter's id) is one of sys
	curProcess                  // the current thread (arg unused) is its process's first
	curThread                   // ... or a later one
	inIOWait                    // the task_struct it points to waits for I/O (io_schedule)
	curInIOWait                 // the current thread (arg unused) waits for I/O
)

// xarg is args[n] of translated type t *, from native argument n.
func xarg(t, from string, n int) Arg {
	return Arg{Type: t + " *", Kind: ArgPointer, Size: 8,
		Expr: fmt.Sprintf("xlate <%s *> ((%s *)arg%d)", t, from, n)}
}

// iarg is an int argument from expression expr.
func iarg(expr string) Arg { return Arg{Type: "int", Kind: ArgInt, Size: 4, Signed: true, Expr: expr} }

// taskArgs are the lwpsinfo_t and psinfo_t of the task_struct in native
// arguments 0 and 1.
var taskArgs = []Arg{xarg("lwpsinfo_t", "struct task_struct", 0), xarg("psinfo_t", "struct task_struct", 1)}

// queueArgs are taskArgs and the cpuinfo_t of the processor whose run
// queue the task joins or leaves, from native argument 2.
var queueArgs = append(append([]Arg{}, taskArgs...), xarg("cpuinfo_t", "struct task_struct", 2))

// ioArgs are io's bufinfo_t, devinfo_t and fileinfo_t of the request in
// native arguments 0, 1 and 2.
var ioArgs = []Arg{
	xarg("bufinfo_t", "struct request", 0),
	xarg("devinfo_t", "struct request", 1),
	xarg("fileinfo_t", "struct request", 2),
}

// execs are the system calls that run a new program.
var execs = []string{"execve", "execveat"}

// forks are the system calls that make processes and threads.
var forks = []string{"fork", "vfork", "clone", "clone3"}

// exitReason is proc:::exit's args[0]: how the process ended, from the
// exit code do_exit stored (a signal number in the low 7 bits, 0x80 when
// it dumped core, else the status shifted left 8).
var exitReason = "(((struct task_struct *)arg0)->exit_code & 0x7f) == 0 ? CLD_EXITED : " +
	"(((struct task_struct *)arg0)->exit_code & 0x80) ? CLD_DUMPED : CLD_KILLED"

// The probes, with the tracepoints of this kernel generation that serve
// them (the README's table of proc, sched and io probes says what each
// one means here).
var (
	procDefs = []stableDef{
		// exec fires in a process as it calls execve or execveat; args[0]
		// is the path it asks for, from its memory. exec-success or
		// exec-failure follows.
		{name: "exec", tps: []string{"sys_enter"}, conds: []stableCond{{arg: 1, test: isSyscall, sys: execs}},
			native: []int{execPath}, args: []Arg{{Type: "string", Kind: ArgPointer, Size: 8, Expr: "copyinstr(arg0)"}}},
		{name: "exec-success", tps: []string{"sched_process_exec"}},
		// exec-failure fires as execve or execveat returns an error;
		// args[0] is the errno.
		{name: "exec-failure", tps: []string{"sys_exit"},
			conds:  []stableCond{{arg: 1, test: negative}, {test: inSyscalls, sys: execs}},
			native: []int{1}, args: []Arg{iarg("-(int)arg0")}},
		// exit fires once per process, in its last thread to exit.
		{name: "exit", tps: []string{"sched_process_exit"}, conds: []stableCond{{arg: 1}},
			native: []int{0}, args: []Arg{iarg(exitReason)}},
		// create and lwp-create fire in the parent.
		{name: "create", tps: []string{"sched_process_fork"}, conds: []stableCond{{arg: 1, test: newProcess}},
			native: []int{1}, args: []Arg{xarg("psinfo_t", "struct task_struct", 0)}},
		{name: "lwp-create", tps: []string{"sched_process_fork"}, conds: []stableCond{{arg: 1, test: newThread}},
			native: []int{1, 1}, args: taskArgs},
		{name: "lwp-exit", tps: []string{"sched_process_exit"}},
		// start and lwp-start fire in the new process or thread, as it
		// first returns to user space: from fork, vfork, clone or clone3,
		// with 0.
		{name: "start", tps: []string{"sys_exit"},
			conds: []stableCond{{arg: 1, test: isZero}, {test: inSyscalls, sys: forks}, {test: curProcess}}},
		{name: "lwp-start", tps: []string{"sys_exit"},
			conds: []stableCond{{arg: 1, test: isZero}, {test: inSyscalls, sys: forks}, {test: curThread}}},
		// signal-send fires in the sender; signal-handle in the receiver,
		// as it is about to run the handler (or take the default action).
		{name: "signal-send", tps: []string{"signal_generate"}, native: []int{2, 2, 0},
			args: append(append([]Arg{}, taskArgs...), iarg("(int)arg2"))},
		// signal-discard fires as a signal the target ignores is dropped
		// (signal_generate's result is TRACE_SIGNAL_IGNORED).
		{name: "signal-discard", tps: []string{"signal_generate"}, conds: []stableCond{{arg: 4, test: equals, value: 1}},
			native: []int{2, 2, 0}, args: append(append([]Arg{}, taskArgs...), iarg("(int)arg2"))},
		{name: "signal-handle", tps: []string{"signal_deliver"}, native: []int{0, 1, 2},
			args: []Arg{iarg("(int)arg0"),
				{Type: "siginfo_t *", Kind: ArgPointer, Size: 8, Expr: "(struct kernel_siginfo *)arg1"},
				{Type: "void (*)(int)", Kind: ArgPointer, Size: 8, Expr: "(uintptr_t)((struct k_sigaction *)arg2)->sa.sa_handler"}}},
	}
	schedDefs = []stableDef{
		// on-cpu fires in the thread that has just been switched to, as
		// __schedule returns in it (sched_exit_tp with is_switch set).
		{name: "on-cpu", tps: []string{"sched_exit_tp"}, conds: []stableCond{{arg: 0}}},
		// off-cpu fires in the thread leaving the CPU; args are the next.
		{name: "off-cpu", tps: []string{"sched_switch"}, native: []int{2, 2}, args: taskArgs},
		// A thread that is not preempted and has a state other than
		// running is leaving its run queue to sleep.
		{name: "sleep", tps: []string{"sched_switch"}, conds: []stableCond{{arg: 0, test: isZero}, {arg: 3}}},
		{name: "dequeue", tps: []string{"sched_switch"}, conds: []stableCond{{arg: 0, test: isZero}, {arg: 3}},
			native: []int{1, 1, 1}, args: queueArgs},
		{name: "preempt", tps: []string{"sched_switch"}, conds: []stableCond{{arg: 0}}},
		{name: "enqueue", tps: []string{"sched_wakeup", "sched_wakeup_new"}, native: []int{0, 0, 0}, args: queueArgs},
		// wakeup fires in the waker.
		{name: "wakeup", tps: []string{"sched_waking"}, native: []int{0, 0}, args: taskArgs},
		// tick fires 100 times a second on each CPU, in whatever thread
		// it interrupts (the idle thread included), as DTrace's does at
		// hz = 100.
		{name: "tick", tick: 10 * time.Millisecond, native: []int{curTask, curTask}, args: taskArgs},
	}
	ioDefs = []stableDef{
		{name: "start", tps: []string{"block_rq_issue"}, native: []int{0, 0, 0}, args: ioArgs},
		{name: "done", tps: []string{"block_rq_complete"}, native: []int{0, 0, 0}, args: ioArgs},
		// A thread waits for I/O when it sleeps in io_schedule, which
		// marks it in_iowait: wait-start as it leaves the CPU so marked,
		// wait-done as it comes back. Which request it waits for, the
		// kernel does not record, so these have no args[].
		{name: "wait-start", tps: []string{"sched_switch"}, conds: []stableCond{{arg: 0, test: isZero}, {arg: 1, test: inIOWait}}},
		{name: "wait-done", tps: []string{"sched_exit_tp"}, conds: []stableCond{{arg: 0}, {test: curInIOWait}}},
	}
)

// stableProviders are the providers in registry order, and so in ID order.
// numStableProbes is how many probes proc, sched and io have together.
func numStableProbes() int { return len(procDefs) + len(schedDefs) + len(ioDefs) }

func stableProviders(first func() (int, error)) []Provider {
	var out []Provider
	n := 0
	for _, p := range []struct {
		name string
		defs []stableDef
	}{{"proc", procDefs}, {"sched", schedDefs}, {"io", ioDefs}} {
		off := n
		out = append(out, &Stable{name: p.name, defs: p.defs, first: func() (int, error) {
			f, err := first()
			return f + off, err
		}})
		n += len(p.defs)
	}
	return out
}

// Name is the provider's name.
func (s *Stable) Name() string { return s.name }

// Probes returns the matching probes. It reads nothing from the kernel
// but the count of probes before these (for their IDs).
func (s *Stable) Probes(d Desc) ([]*Probe, error) {
	if !fieldMatch(d.Provider, s.name) || !fieldMatch(d.Module, "") || !fieldMatch(d.Function, "") {
		return nil, nil
	}
	var out []*Probe
	first := -1
	for i := range s.defs {
		def := &s.defs[i]
		if !fieldMatch(d.Name, def.name) {
			continue
		}
		if first < 0 {
			f, err := s.first()
			if err != nil {
				return nil, err
			}
			first = f
		}
		pr := &Probe{
			ID: first + i, Provider: s.name, Name: def.name,
			Args:     append([]Arg{}, def.args...),
			ProgType: ebpf.RawTracepoint,
			Private:  def,
		}
		if def.tick != 0 {
			pr.ProgType, pr.AttachType = ebpf.PerfEvent, ebpf.AttachPerfEvent
		}
		out = append(out, pr)
	}
	return out, nil
}

// Prologue keeps the probe's events, then copies its native arguments from
// the tracepoint's into arg0..argN.
func (s *Stable) Prologue(pr *Probe, p *Prologue) error {
	if err := checkPrologue(p); err != nil {
		return err
	}
	def, ok := pr.Private.(*stableDef)
	if !ok {
		return fmt.Errorf("%s: not a %s probe", pr, s.name)
	}
	for _, c := range def.conds {
		p.Insns = append(p.Insns, asm.LoadMem(asm.R0, p.Ctx, int16(8*c.arg), asm.DWord))
		switch c.test {
		case newProcess, newThread:
			ins, err := newTaskIs(p, c.test == newProcess)
			if err != nil {
				return fmt.Errorf("%s: %w", pr, err)
			}
			p.Insns = append(p.Insns, ins...)
		case inIOWait, curInIOWait:
			if c.test == curInIOWait {
				p.Insns = append(p.Insns, asm.FnGetCurrentTask.Call())
			}
			ins, err := taskInIOWait(pr, p)
			if err != nil {
				return fmt.Errorf("%s: %w", pr, err)
			}
			p.Insns = append(p.Insns, ins...)
		case curProcess, curThread:
			jump := asm.JEq // a thread: skip when pid == tgid
			if c.test == curProcess {
				jump = asm.JNE
			}
			p.Insns = append(p.Insns,
				asm.FnGetCurrentPidTgid.Call(),
				asm.Mov.Reg(asm.R1, asm.R0),
				asm.RSh.Imm(asm.R1, 32),
				asm.Mov.Reg32(asm.R0, asm.R0),
				jump.Reg(asm.R0, asm.R1, p.Skip))
		case inSyscalls, isSyscall:
			if !regs.supported {
				return fmt.Errorf("%s: pt_regs layout unknown on this architecture", pr)
			}
			if c.test == inSyscalls {
				exitNr(p)
			}
			keep := label(pr, "syscall")
			for _, name := range c.sys {
				if nr, ok := sysnum.Lookup(name); ok {
					p.Insns = append(p.Insns, asm.JEq.Imm(asm.R0, int32(nr), keep))
				}
			}
			p.Insns = append(p.Insns, asm.Ja.Label(p.Skip), asm.Mov.Imm(asm.R0, 0).WithSymbol(keep))
		case isZero:
			p.Insns = append(p.Insns, asm.JNE.Imm(asm.R0, 0, p.Skip))
		case negative:
			p.Insns = append(p.Insns, asm.JSGE.Imm(asm.R0, 0, p.Skip))
		case equals:
			p.Insns = append(p.Insns, asm.JNE.Imm(asm.R0, c.value, p.Skip))
		default:
			p.Insns = append(p.Insns, asm.JEq.Imm(asm.R0, 0, p.Skip))
		}
	}
	setup(p)
	for i, from := range def.native {
		if p.Unused&(1<<i) != 0 {
			continue
		}
		switch from {
		case curTask:
			p.Insns = append(p.Insns, asm.FnGetCurrentTask.Call())
		case execPath:
			p.Insns = append(p.Insns, execPathArg(pr, p, i)...)
			continue
		default:
			p.Insns = append(p.Insns, asm.LoadMem(asm.R0, p.Ctx, int16(8*from), asm.DWord))
		}
		storeArg(p, i, asm.R0)
	}
	zeroArgs(p, len(def.native))
	zeroErrno(p)
	return nil
}

// execPathArg reads, at sys_enter, the path argument of execve (its
// first) or execveat (its second) from pt_regs straight into argi.
func execPathArg(pr *Probe, p *Prologue, i int) asm.Instructions {
	at, _ := sysnum.Lookup("execveat")
	second := label(pr, fmt.Sprintf("execveat_%d", i))
	read := label(pr, fmt.Sprintf("exec_path_%d", i))
	return asm.Instructions{
		asm.LoadMem(asm.R0, p.Ctx, 8, asm.DWord), // id
		asm.LoadMem(asm.R3, p.Ctx, 0, asm.DWord), // regs
		asm.JEq.Imm(asm.R0, int32(at), second),
		asm.Add.Imm(asm.R3, int32(regs.sysArgs[0])),
		asm.Ja.Label(read),
		asm.Add.Imm(asm.R3, int32(regs.sysArgs[1])).WithSymbol(second),
		asm.Mov.Reg(asm.R1, p.State).WithSymbol(read),
		asm.Add.Imm(asm.R1, int32(p.ArgOffset(i))),
		asm.Mov.Imm(asm.R2, 8),
		asm.FnProbeReadKernel.Call(),
	}
}

// taskMembers are task_struct's members, from the kernel's BTF.
var taskMembers = sync.OnceValues(func() (map[string]btf.Member, error) {
	spec, err := KernelBTF()
	if err != nil {
		return nil, fmt.Errorf("reading the kernel's BTF: %w", err)
	}
	var ts *btf.Struct
	if err := spec.TypeByName("task_struct", &ts); err != nil {
		return nil, err
	}
	ms := map[string]btf.Member{}
	for _, m := range ts.Members {
		ms[m.Name] = m
	}
	return ms, nil
})

// taskIDs is where a task_struct keeps its thread id (pid), followed by
// its process id (tgid).
func taskIDs() (int, error) {
	ms, err := taskMembers()
	if err != nil {
		return 0, err
	}
	pid, ok1 := ms["pid"]
	tgid, ok2 := ms["tgid"]
	if !ok1 || !ok2 || tgid.Offset != pid.Offset+32 {
		return 0, fmt.Errorf("task_struct's pid and tgid are not adjacent on this kernel")
	}
	return int(pid.Offset.Bytes()), nil
}

// readTask appends code that reads n bytes at offset off of the
// task_struct in R0 into the prologue's scratch bytes, skipping the event
// if it cannot.
func readTask(p *Prologue, off, n int) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Add.Imm(asm.R3, int32(off)),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, int32(p.Scratch)),
		asm.Mov.Imm(asm.R2, int32(n)),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, p.Skip),
	}
}

// taskInIOWait appends code that skips the event unless the task_struct
// in R0 is waiting for I/O: in_iowait is a one-bit field (bit-fields fill
// bytes from the low bit up on the little-endian machines dstar runs on).
func taskInIOWait(pr *Probe, p *Prologue) (asm.Instructions, error) {
	ms, err := taskMembers()
	if err != nil {
		return nil, err
	}
	m, ok := ms["in_iowait"]
	if !ok {
		return nil, fmt.Errorf("task_struct has no in_iowait on this kernel")
	}
	keep := label(pr, "iowait")
	return append(readTask(p, int(m.Offset/8), 1),
		asm.LoadMem(asm.R1, asm.RFP, p.Scratch, asm.Byte),
		asm.JSet.Imm(asm.R1, int32(1)<<(m.Offset%8), keep),
		asm.Ja.Label(p.Skip),
		asm.Mov.Imm(asm.R0, 0).WithSymbol(keep),
	), nil
}

// newTaskIs appends code that skips the event unless the task_struct in
// R0 is a process's first thread (process) or a later one (!process): it
// reads pid and tgid together into the prologue's scratch bytes.
func newTaskIs(p *Prologue, process bool) (asm.Instructions, error) {
	off, err := taskIDs()
	if err != nil {
		return nil, err
	}
	jump := asm.JEq // a thread: skip when pid == tgid
	if process {
		jump = asm.JNE
	}
	return append(readTask(p, off, 8),
		asm.LoadMem(asm.R1, asm.RFP, p.Scratch, asm.Word),
		asm.LoadMem(asm.R2, asm.RFP, p.Scratch+4, asm.Word),
		jump.Reg(asm.R1, asm.R2, p.Skip),
	), nil
}

// Attach attaches prog to each of the probe's raw tracepoints, or to a
// cpu-clock perf event on each online CPU.
func (s *Stable) Attach(pr *Probe, prog *ebpf.Program) (io.Closer, error) {
	def, ok := pr.Private.(*stableDef)
	if !ok {
		return nil, fmt.Errorf("%s: not a %s probe", pr, s.name)
	}
	if prog.Type() != pr.ProgType {
		return nil, fmt.Errorf("%s: program type is %v, want %v", pr, prog.Type(), pr.ProgType)
	}
	var cs closers
	if def.tick != 0 {
		cpus, err := onlineCPUs()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pr, err)
		}
		for _, cpu := range cpus {
			if err := attachCPUClock(&cs, cpu, def.tick, prog); err != nil {
				cs.Close()
				return nil, fmt.Errorf("%s: %w", pr, err)
			}
		}
		return cs, nil
	}
	for _, tp := range def.tps {
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: tp, Program: prog})
		if err != nil {
			cs.Close()
			hint := ""
			if errors.Is(err, unix.ENOENT) {
				hint = fmt.Sprintf(" (this kernel has no tracepoint %s, which %s needs)", tp, pr)
			}
			return nil, fmt.Errorf("%s: attaching to raw tracepoint %s (BPF_RAW_TRACEPOINT_OPEN): %w%s", pr, tp, err, hint)
		}
		cs = append(cs, l)
	}
	return cs, nil
}
