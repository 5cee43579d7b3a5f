package providers

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/dstar-trace/dstar/providers/elfsym"
	"github.com/dstar-trace/dstar/providers/procmaps"
	"golang.org/x/sys/unix"
)

// Pid is the pid provider: pidNNN:MODULE:FUNCTION:entry, :return and
// :OFFSET (hex) on the functions of process NNN's executable and shared
// libraries, as uprobes and uretprobes that fire for that process only.
//
// Its probes exist only once a description names a process: the provider
// field is "pid" followed by the process id (pid$target after macro
// expansion). Discovery reads /proc/NNN/maps and the ELF symbol tables of
// the mapped files, and of the libraries a process held at exec will map
// (procmaps.Load), whose uprobes fire once they are. The uprobes are made
// at attach time, as uprobe_multi BPF links where the kernel has them
// (6.6+) and as perf events of the uprobe PMU elsewhere. Neither writes to tracefs's uprobe_events, so
// nothing outlives dstar, however it ends.
//
// Module names are the files' basenames (libc.so.6); the executable also
// answers to a.out. Functions are the ELF's (local ones too), or for a Go
// binary without .symtab those of its .gopclntab. An OFFSET probe must
// name the start of an instruction: dstar does not decode instructions,
// and the kernel refuses only some bad offsets.
type Pid struct {
	mu   sync.Mutex
	made map[string]*Probe // by provider:module:function:name
}

// pidFirstID is where pid probes' IDs start: above the listed probes
// (fbt's can number a hundred thousand) and the profile probes made on
// demand (from firstDynamicID up, one per rate named); the first fifty
// thousand have six digits, as dtrace's probe lines have room for.
const pidFirstID = 950000

// userIDs numbers the probes pid and usdt make on demand, from pidFirstID
// up, so that both keep to six digits as long as they can.
var userIDs = struct {
	sync.Mutex
	next int
}{next: pidFirstID}

// nextUserID returns a new pid or usdt probe ID.
func nextUserID() int {
	userIDs.Lock()
	defer userIDs.Unlock()
	id := userIDs.next
	userIDs.next++
	return id
}

// pidProbe is what a pid probe keeps for its prologue and Attach.
type pidProbe struct {
	pid    int
	path   string // the file, as the kernel can open it
	offset uint64 // file offset of the probed instruction
	ret    bool
	goABI  bool // a Go function: arguments in Go's registers
}

// NewPid returns the pid provider.
func NewPid() *Pid { return &Pid{made: map[string]*Probe{}} }

// Name returns "pid".
func (*Pid) Name() string { return "pid" }

// Claims reports whether a provider field could match pid probes: one
// that matches "pid" (listing the probes made before), or "pid" and a
// process ID.
func (p *Pid) Claims(pattern string) bool {
	_, ok := pidOf(pattern)
	return ok || isPidZero(pattern) || fieldMatch(pattern, p.Name())
}

// isPidZero reports whether a provider field is "pid" and a process ID of
// zero (pid0), which names no process.
func isPidZero(provider string) bool {
	digits, ok := strings.CutPrefix(provider, "pid")
	return ok && digits != "" && strings.Trim(digits, "0") == ""
}

// checkPidName refuses a probe name that no pid probe can have: a pid
// probe is entry, return or a hexadecimal offset. The name is wrong
// whatever function it is asked of, so it is refused before any lookup.
// The function "-" takes an absolute address, which a glob cannot be.
func checkPidName(d Desc) error {
	if d.Function == "-" && (d.Name == "" || isGlob(d.Name)) {
		return tagErrorf("D_PROC_NAME", "only individual addresses may be specified with the '-' function")
	}
	if d.Name == "" || isGlob(d.Name) || d.Name == "entry" || d.Name == "return" {
		return nil
	}
	if _, err := strconv.ParseUint(d.Name, 16, 64); err != nil {
		return tagErrorf("D_PROC_NAME", "'%s' is an invalid probe name", d.Name)
	}
	return nil
}

// Owns reports whether pr is a pid probe.
func (*Pid) Owns(pr *Probe) bool {
	_, ok := pr.Private.(pidProbe)
	return ok
}

// pidOf parses a provider field "pidNNN".
func pidOf(provider string) (int, bool) {
	digits, ok := strings.CutPrefix(provider, "pid")
	if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil && n > 0
}

// Probes returns the probes d matches. A description naming one process
// (pidNNN) makes that process's matching probes; any other description
// (a glob in the provider field, or none) matches only probes made before,
// so listing every probe reads no process and no ELF file.
func (p *Pid) Probes(d Desc) ([]*Probe, error) { return p.probes(d, false) }

// List is Probes for listing: its probes are not for attaching, so it
// need not settle how they would be attached.
func (p *Pid) List(d Desc) ([]*Probe, error) { return p.probes(d, true) }

func (p *Pid) probes(d Desc, list bool) ([]*Probe, error) {
	pid, ok := pidOf(d.Provider)
	if !ok {
		if isPidZero(d.Provider) {
			return nil, tagErrorf("D_PROC_BADPID", "'%s' does not contain a valid pid", d.Provider)
		}
		return p.madeMatching(d), nil
	}
	// Load adds, for a process held at exec, the libraries it will map:
	// their probes fire once they are.
	mods, err := procmaps.Load(pid)
	if err != nil {
		if errors.Is(err, procmaps.ErrNoProcess) {
			return nil, fmt.Errorf("failed to grab pid %d: No such process", pid)
		}
		return nil, fmt.Errorf("failed to grab pid %d: %v", pid, err)
	}
	exe, err := procmaps.Executable(pid)
	if err != nil {
		return nil, fmt.Errorf("failed to grab pid %d: %v", pid, err)
	}
	if err := checkPidName(d); err != nil {
		return nil, err
	}
	if d.Function == "-" && d.Module != "" && d.Module != "a.out" && !slices.ContainsFunc(mods, func(m *procmaps.Module) bool {
		return m.Path == exe && objectMatch(d.Module, m, true) && !isGlob(d.Module)
	}) {
		return nil, tagErrorf("D_PROC_LIB", "only the a.out module is valid with the '-' function")
	}
	var out []*Probe
	strippedExe := ""
	for _, mod := range mods {
		isExe := mod.Path == exe
		if !objectMatch(d.Module, mod, isExe) {
			continue
		}
		// A module named exactly must be readable and have symbols; one
		// matched by a glob (or by an empty field) is skipped quietly.
		named := d.Module != "" && !isGlob(d.Module)
		path := procmaps.FilePath(pid, mod)
		f, err := elfsym.Open(path)
		if err != nil {
			if named {
				return nil, fmt.Errorf("pid provider: %v", err)
			}
			continue
		}
		if named && d.Function != "" && d.Function != "-" && !isGlob(d.Function) && len(matchingFuncs(f, d.Function)) == 0 {
			// DTrace reports a function missing from a module named
			// exactly; where the file has no .symtab, say so.
			why := ""
			switch {
			case f.Sym == elfsym.None:
				why = fmt.Sprintf(" (%s has no symbol table (stripped))", mod.Path)
			case f.Stripped():
				why = fmt.Sprintf(" (%s is stripped (no .symtab) and exports no such function)", mod.Path)
			}
			return nil, tagErrorf("D_PROC_FUNC", "failed to lookup '%s' in module '%s'%s", d.Function, d.Module, why)
		}
		if f.Sym == elfsym.None && named {
			return nil, fmt.Errorf("pid provider: %s has no symbol table (stripped): no function can be found by name", mod.Path)
		}
		ps, err := p.moduleProbes(d, pid, mod, path, f, list)
		if err != nil {
			return nil, err
		}
		if isExe && f.Sym == elfsym.None {
			strippedExe = mod.Path
		}
		out = append(out, ps...)
	}
	if len(out) == 0 && strippedExe != "" && d.Function != "" && !isGlob(d.Function) {
		// The function may well be in the executable, which cannot say.
		return nil, fmt.Errorf("pid provider: no function %s found in pid %d; its executable %s has no symbol table (stripped)", d.Function, pid, strippedExe)
	}
	return out, nil
}

// moduleProbes makes the probes d matches in one module.
func (p *Pid) moduleProbes(d Desc, pid int, mod *procmaps.Module, path string, f *elfsym.File, list bool) ([]*Probe, error) {
	// The probe names wanted: entry and return, or one offset.
	var names []string
	var off uint64
	isOff := false
	if d.Name != "" && !isGlob(d.Name) && d.Name != "entry" && d.Name != "return" {
		n, err := strconv.ParseUint(d.Name, 16, 64)
		if err != nil {
			return nil, nil // no such probe name: the description matches nothing
		}
		off, isOff = n, true
		names = []string{strconv.FormatUint(n, 16)}
	} else {
		for _, n := range []string{"entry", "return"} {
			if fieldMatch(d.Name, n) {
				names = append(names, n)
			}
		}
		if f.Go && slices.Contains(names, "return") {
			// A uretprobe replaces the return address on the stack with a
			// trampoline's, which Go's stack copying and tracebacks (the
			// garbage collector's among them) cannot follow: the program
			// can die with "unexpected return pc".
			if d.Name == "return" {
				return nil, fmt.Errorf("pid provider: return probes on Go functions (%s) are refused: the uretprobe's return address would crash the Go runtime's stack walks; use entry probes", mod.Path)
			}
			names = slices.DeleteFunc(names, func(n string) bool { return n == "return" })
		}
	}
	provider := "pid" + strconv.Itoa(pid)
	var attachType ebpf.AttachType
	if !list && haveUprobeMulti() {
		attachType = ebpf.AttachTraceUprobeMulti
	}
	var out []*Probe
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range matchingFuncs(f, d.Function) {
		if isOff && s.Size != 0 && off >= s.Size {
			if !isGlob(d.Function) {
				return nil, tagErrorf("D_PROC_OFF", "offset %#x outside of function '%s' (%d bytes in %s)", off, s.Name, s.Size, mod.Path)
			}
			continue
		}
		fileOff, err := f.FileOffset(s.Value + off)
		if err != nil {
			continue
		}
		for _, n := range names {
			pr := &Probe{
				Provider: provider, Module: mod.Name(), Function: s.Name, Name: n,
				ProgType: ebpf.Kprobe, AttachType: attachType, UserRegs: true,
				Private: pidProbe{pid: pid, path: path, offset: fileOff, ret: n == "return", goABI: isGoFunc(f, s.Name)},
			}
			key := pr.String()
			if old := p.made[key]; old != nil && old.Private == pr.Private {
				if list || old.AttachType == attachType {
					out = append(out, old)
					continue
				}
				// Listed before, now to be attached: the same probe (ID)
				// with the attach type its program must be loaded with.
				pr.ID = old.ID
			} else {
				pr.ID = nextUserID()
			}
			pr.Args = pidArgs(n == "return", isGoFunc(f, s.Name))
			p.made[key] = pr
			out = append(out, pr)
		}
	}
	return out, nil
}

// matchingFuncs returns the functions of f whose names match pattern, one
// per name and one per address: where several names match the same code
// (sbrk and __sbrk), one probe is made, as DTrace does, so that a glob
// does not count each call twice. The name kept is a global one with the
// fewest leading underscores. A name that is not a glob names its
// address: the probe takes the name kept among all of the address's
// names, as DTrace's lookup by address does (go, not its weak alias _go).
func matchingFuncs(f *elfsym.File, pattern string) []elfsym.Symbol {
	better := func(a, b elfsym.Symbol) bool {
		if a.Global != b.Global {
			return a.Global
		}
		ua := len(a.Name) - len(strings.TrimLeft(a.Name, "_"))
		ub := len(b.Name) - len(strings.TrimLeft(b.Name, "_"))
		if ua != ub {
			return ua < ub
		}
		return a.Name < b.Name
	}
	var out []elfsym.Symbol
	names := map[string]bool{}
	syms := f.Symbols()
	if pattern != "" && !isGlob(pattern) {
		s, ok := f.Lookup(pattern)
		if !ok {
			return nil
		}
		i, _ := slices.BinarySearchFunc(syms, s.Value, func(a elfsym.Symbol, v uint64) int { return cmp.Compare(a.Value, v) })
		for ; i < len(syms) && syms[i].Value == s.Value; i++ {
			if better(syms[i], s) {
				s = syms[i]
			}
		}
		return []elfsym.Symbol{s}
	}
	for _, s := range syms { // by address
		if names[s.Name] || !fieldMatch(pattern, s.Name) {
			continue
		}
		names[s.Name] = true
		if n := len(out); n > 0 && out[n-1].Value == s.Value {
			if better(s, out[n-1]) {
				out[n-1] = s
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// stackArgs fills arg[from..NumArgs-1] from the words the C calling
// convention passes further arguments in on the user stack, as DTrace's
// pid provider does (at an offset probe, as at entry, they are read from
// where entry would have them). A word that cannot be read is 0.
func stackArgs(p *Prologue, from int) {
	for i := from; i < NumArgs; i++ {
		if p.Unused&(1<<i) != 0 {
			continue
		}
		p.Insns = append(p.Insns,
			asm.Mov.Reg(asm.R1, p.State),
			asm.Add.Imm(asm.R1, int32(p.ArgOffset(i))),
			asm.Mov.Imm(asm.R2, 8),
			asm.LoadMem(asm.R3, p.Ctx, regs.sp, asm.DWord),
			asm.Add.Imm(asm.R3, int32(regs.stackArgs)+8*int32(i-from)),
			asm.FnProbeReadUser.Call(),
		)
	}
}

// pidArgs types a pid probe's arguments: ten integers at entry (and at an
// offset), six in registers, nine for a Go function, and at return the return
// site (arg0) and value (arg1), untyped as DTrace leaves them.
func pidArgs(ret, goABI bool) []Arg {
	a := Arg{Type: "uint64_t", Kind: ArgInt, Size: 8}
	switch {
	case ret:
		return []Arg{a, a}
	case goABI:
		return []Arg{a, a, a, a, a, a, a, a, a}
	}
	return []Arg{a, a, a, a, a, a, a, a, a, a} // the last on the stack
}

// isGoFunc reports whether function name of f is Go code, which passes its
// arguments in Go's registers rather than C's: a Go binary's functions are
// package-qualified (main.work, runtime.mallocgc); those of C linked in by
// cgo are not.
func isGoFunc(f *elfsym.File, name string) bool {
	return f.Go && strings.Contains(name, ".")
}

// madeMatching returns the probes made before that d matches, by ID.
func (p *Pid) madeMatching(d Desc) []*Probe {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*Probe
	for _, pr := range p.made {
		if d.Matches(pr) {
			out = append(out, pr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Prologue drops events of other processes (a library's uprobe is shared
// by every process that maps it; the kernel filters by process too, but a
// check here costs one helper call and makes it certain), then fills the
// state from the user registers the uprobe's context holds: arg0..arg9 =
// the first ten integer arguments at entry or at an offset (those past the
// registers from the stack) (arg0..arg8,
// from Go's argument registers, for a Go function); at return,
// arg0 = 0 (a uretprobe cannot tell which return instruction ran, so
// DTrace's offset of it is unknown) and arg1 = the return value.
func (*Pid) Prologue(pr *Probe, p *Prologue) error {
	if err := checkPrologue(p); err != nil {
		return err
	}
	pp, ok := pr.Private.(pidProbe)
	if !ok {
		return fmt.Errorf("%s: not a pid probe", pr)
	}
	if !regs.supported {
		return fmt.Errorf("pid: pt_regs layout unknown on this architecture")
	}
	p.Insns = append(p.Insns,
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.JNE.Imm(asm.R0, int32(pp.pid), p.Skip),
	)
	setup(p)
	if pp.ret {
		p.Insns = append(p.Insns, asm.LoadMem(asm.R0, p.Ctx, regs.ret, asm.DWord))
		if p.Unused&1 == 0 {
			p.Insns = append(p.Insns, storeZero64(p.State, p.ArgOffset(0)))
		}
		storeArg(p, 1, asm.R0)
		zeroArgs(p, 2)
	} else {
		args := regs.callArgs[:]
		if pp.goABI {
			args = regs.goArgs[:]
		}
		for i, o := range args {
			if p.Unused&(1<<i) == 0 {
				p.Insns = append(p.Insns, asm.LoadMem(asm.R0, p.Ctx, o, asm.DWord))
				storeArg(p, i, asm.R0)
			}
		}
		if pp.goABI {
			zeroArgs(p, len(args))
		} else {
			stackArgs(p, len(args))
		}
	}
	zeroErrno(p)
	return nil
}

// haveUprobeMulti says whether the kernel has uprobe_multi links, by its
// release (Linux 6.6 brought them): asking the kernel itself would load a
// throwaway program, and discovery makes nothing in the kernel. With them
// a uprobe is a BPF link that closes in well under a millisecond; a uprobe
// made as a perf event takes about 80 ms to close, one at a time under a
// kernel lock, so a hundred probes would keep dstar from exiting for
// seconds. A kernel that backports them gets perf events: slower to
// close, as correct.
var haveUprobeMulti = sync.OnceValue(func() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	major, minor, ok := kernelRelease(unix.ByteSliceToString(u.Release[:]))
	return ok && (major > 6 || major == 6 && minor >= 6)
})

// kernelRelease parses the major and minor numbers of a kernel release
// ("6.18.44-fc-v657").
func kernelRelease(r string) (major, minor int, ok bool) {
	a, rest, ok1 := strings.Cut(r, ".")
	b, _, _ := strings.Cut(rest, ".")
	b = b[:len(b)-len(strings.TrimLeft(b, "0123456789"))]
	major, err1 := strconv.Atoi(a)
	minor, err2 := strconv.Atoi(b)
	return major, minor, ok1 && err1 == nil && err2 == nil
}

// uprobePMU is the perf event source for uprobes; with it a uprobe is a
// perf event that closes with its file descriptor, and nothing is written
// to tracefs's uprobe_events (which would outlive a killed dstar): without
// it, cilium/ebpf would fall back to writing there, so dstar refuses.
const uprobePMU = "/sys/bus/event_source/devices/uprobe"

// checkUprobePMU is the refusal: pid and usdt call it before placing a
// uprobe as a perf event.
func checkUprobePMU() error {
	if _, err := os.Stat(uprobePMU); err != nil {
		return fmt.Errorf("the kernel has no uprobe perf event source (%s): Linux 4.17+ with CONFIG_UPROBE_EVENTS", uprobePMU)
	}
	return nil
}

// Attach places a uprobe (entry, offset) or uretprobe (return) on the
// probe's file for its process only: a uprobe_multi link when the probe's
// program was loaded for one, else a perf event.
func (*Pid) Attach(pr *Probe, prog *ebpf.Program) (io.Closer, error) {
	pp, ok := pr.Private.(pidProbe)
	if !ok {
		return nil, fmt.Errorf("%s: not a pid probe", pr)
	}
	if prog.Type() != ebpf.Kprobe {
		return nil, fmt.Errorf("%s: program type is %v, want %v", pr, prog.Type(), ebpf.Kprobe)
	}
	ex, err := link.OpenExecutable(pp.path)
	if err != nil {
		return nil, err
	}
	var l link.Link
	if pr.AttachType == ebpf.AttachTraceUprobeMulti {
		opts := &link.UprobeMultiOptions{Addresses: []uint64{pp.offset}, PID: uint32(pp.pid)}
		if pp.ret {
			l, err = ex.UretprobeMulti(nil, prog, opts)
		} else {
			l, err = ex.UprobeMulti(nil, prog, opts)
		}
		if err != nil {
			return nil, uprobeError(pr, pp, err)
		}
		return l, nil
	}
	if err := checkUprobePMU(); err != nil {
		return nil, err
	}
	opts := &link.UprobeOptions{Address: pp.offset, PID: pp.pid}
	if pp.ret {
		l, err = ex.Uretprobe("", prog, opts)
	} else {
		l, err = ex.Uprobe("", prog, opts)
	}
	if err != nil {
		return nil, uprobeError(pr, pp, err)
	}
	return l, nil
}

// ErrUnprobeable is wrapped by Attach's error when the kernel refuses to
// place a uprobe on a function's first instruction (it refuses some, such
// as lock-prefixed ones): a glob over a library's functions meets a few,
// which are better skipped with a warning than fatal to the whole run.
var ErrUnprobeable = errors.New("the kernel cannot place a uprobe on that instruction")

// uprobeError says why a uprobe could not be placed.
func uprobeError(pr *Probe, pp pidProbe, err error) error {
	// ENOTSUPP (the kernel's own errno 524) from a perf uprobe, EINVAL
	// from a uprobe_multi link.
	refused := errors.Is(err, syscall.Errno(524)) || errors.Is(err, syscall.EINVAL)
	switch {
	case errors.Is(err, syscall.ESRCH):
		return fmt.Errorf("failed to grab pid %d: No such process", pp.pid)
	case refused && (pr.Name == "entry" || pr.Name == "return"):
		return fmt.Errorf("%w: the first instruction of %s in %s (file offset %#x)", ErrUnprobeable, pr.Function, pp.path, pp.offset)
	case refused:
		return fmt.Errorf("the kernel cannot place a uprobe at offset %#x of %s (is offset %s of %s the start of an instruction the kernel can probe?)", pp.offset, pp.path, pr.Name, pr.Function)
	}
	return fmt.Errorf("placing a uprobe on %s at offset %#x: %w", pp.path, pp.offset, err)
}

// AtUserEntry reports whether p is a pid probe on a function's first
// instruction, where the stack pointer points at the return address and
// the caller's frame is not yet linked.
func AtUserEntry(p *Probe) bool {
	_, ok := p.Private.(pidProbe)
	return ok && p.Name == "entry"
}

// objectMatch matches the module field of a pid or usdt probe against a
// process's load object, as DTrace names one: its file name (a glob),
// its full path, the file name up to a '.' ("libc" or "libc.so" for
// libc.so.6), or "a.out" for the executable.
func objectMatch(pattern string, obj *procmaps.Module, isExe bool) bool {
	name := obj.Name()
	switch {
	case fieldMatch(pattern, name), pattern == obj.Path:
		return true
	case isExe && pattern == "a.out":
		return true
	}
	return !isGlob(pattern) && strings.HasPrefix(name, pattern+".")
}
