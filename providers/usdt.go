package providers

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/dstar-trace/dstar/providers/elfsym"
	"github.com/dstar-trace/dstar/providers/procmaps"
	"github.com/dstar-trace/dstar/providers/stapsdt"
)

// USDT is the provider of user-level statically defined probes: the
// <sys/sdt.h> probes (systemtap's SDT notes) in the executable and shared
// libraries of a process. As in DTrace, a probe's provider field is the
// name the program gave its provider followed by the process ID, its module
// the file's base name, its function the function containing the probe:
//
//	myapp1234:myapp:main:request-start
//
// Probes are found for the processes a description names by ID
// (myapp$target, myapp1234) and, for a provider field that names no
// process (empty, or a glob such as myapp*), for the tracer's targets (-c
// and -p). Several sites of one probe in one function are one probe.
// Attaching sets a uprobe on each site through the perf uprobe PMU, for
// that process only, with the kernel counting the probe's semaphore.
type USDT struct {
	mu      sync.Mutex
	targets []int
	ids     map[usdtKey]int
	files   map[string]*usdtFile // by path
}

type usdtKey struct {
	pid                      int
	path, provider, fn, name string
}

// usdtFile is what one ELF file's notes say, cached while the file is
// unchanged.
type usdtFile struct {
	stamp time.Time
	size  int64
	sites []usdtSite
}

// usdtSite is one probe site of a file.
type usdtSite struct {
	note   stapsdt.Note
	fn     string
	offset uint64 // of the probe instruction in the file
	refCtr uint64 // file offset of the semaphore, 0 if none
	err    error  // why the site cannot be attached
}

// usdtProbe is what a usdt probe keeps for its prologue and Attach.
type usdtProbe struct {
	pid   int
	path  string
	sites []usdtSite
}

// NewUSDT returns the usdt provider.
func NewUSDT() *USDT {
	return &USDT{ids: map[usdtKey]int{}, files: map[string]*usdtFile{}}
}

// Name returns "usdt"; the probes' provider fields are their own.
func (*USDT) Name() string { return "usdt" }

// AddTarget makes the probes of process pid match descriptions whose
// provider field names no process.
func (u *USDT) AddTarget(pid int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, t := range u.targets {
		if t == pid {
			return
		}
	}
	u.targets = append(u.targets, pid)
}

// Claims reports whether a provider field could match usdt probes: any
// field ending in a digit or a glob character.
func (*USDT) Claims(pattern string) bool {
	if pattern == "" {
		return true
	}
	c := pattern[len(pattern)-1]
	return c >= '0' && c <= '9' || isGlob(pattern)
}

// Owns reports whether pr is a usdt probe.
func (*USDT) Owns(pr *Probe) bool {
	_, ok := pr.Private.(*usdtProbe)
	return ok
}

// pidsFor returns the processes whose probes pattern could match: the
// trailing digits of the pattern read as a process ID (for every split,
// since a provider's own name may end in digits: python31234 may be python3
// in process 1234), those that exist; and, when the pattern's end is a
// glob or it is empty, the targets.
func (u *USDT) pidsFor(pattern string) []int {
	var pids []int
	seen := map[int]bool{}
	digits := len(pattern)
	for digits > 0 && pattern[digits-1] >= '0' && pattern[digits-1] <= '9' {
		digits--
	}
	for i := len(pattern) - 1; i >= digits; i-- {
		if pattern[i] == '0' {
			continue // no process ID has a leading zero
		}
		pid, err := strconv.Atoi(pattern[i:])
		if err != nil || pid <= 0 || seen[pid] || !procmaps.Exists(pid) {
			continue
		}
		seen[pid] = true
		pids = append(pids, pid)
	}
	if digits == len(pattern) || isGlob(pattern) {
		u.mu.Lock()
		for _, t := range u.targets {
			if !seen[t] {
				seen[t] = true
				pids = append(pids, t)
			}
		}
		u.mu.Unlock()
	}
	sort.Ints(pids)
	return pids
}

// Probes returns the probes of the processes d's provider field names (or
// of the targets) that d matches, by process, file and site order.
func (u *USDT) Probes(d Desc) ([]*Probe, error) {
	if !u.Claims(d.Provider) {
		return nil, nil
	}
	// A process that a split of the digits names by accident may be one
	// dstar cannot read (a kernel thread): its errors count only when
	// nothing matched, and then only the full split's.
	var out []*Probe
	var firstErr error
	full := fullDigitsPid(d.Provider)
	for _, pid := range u.pidsFor(d.Provider) {
		ps, err := u.processProbes(pid, d)
		if err != nil && pid == full {
			firstErr = err
		}
		out = append(out, ps...)
	}
	if len(out) == 0 && firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// fullDigitsPid reads all the trailing digits of pattern as a process ID
// (0 if there are none).
func fullDigitsPid(pattern string) int {
	i := len(pattern)
	for i > 0 && pattern[i-1] >= '0' && pattern[i-1] <= '9' {
		i--
	}
	pid, _ := strconv.Atoi(pattern[i:])
	return pid
}

func (u *USDT) processProbes(pid int, d Desc) ([]*Probe, error) {
	// Load adds, for a process held at exec, the libraries it will map:
	// uprobes are set on the file, so they fire once it is mapped.
	mods, err := procmaps.Load(pid)
	if err != nil {
		if errors.Is(err, procmaps.ErrNoProcess) {
			return nil, nil // it exited
		}
		return nil, fmt.Errorf("usdt: failed to examine process %d: %w", pid, err)
	}
	// usdtNNN (usdt$target) names every provider of process NNN.
	anyProvider := d.Provider == "usdt"+strconv.Itoa(pid)
	var out []*Probe
	for _, m := range mods {
		mod := m.Name()
		if !objectMatch(d.Module, m, false) {
			continue
		}
		path := procmaps.FilePath(pid, m)
		f, err := u.file(path)
		if err != nil {
			return nil, err
		}
		var order []usdtKey
		byKey := map[usdtKey]*usdtProbe{}
		for _, s := range f.sites {
			k := usdtKey{pid: pid, path: path, provider: s.note.Provider, fn: s.fn, name: s.note.Name}
			pp := byKey[k]
			if pp == nil {
				pp = &usdtProbe{pid: pid, path: path}
				byKey[k] = pp
				order = append(order, k)
			}
			pp.sites = append(pp.sites, s)
		}
		for _, k := range order {
			// As DTrace names a probe defined as request__start (the
			// name <sys/sdt.h> and dtrace -h headers record), it is
			// request-start.
			pr := &Probe{
				Provider: k.provider + strconv.Itoa(pid), Module: mod, Function: k.fn, Name: strings.ReplaceAll(k.name, "__", "-"),
				ProgType: ebpf.Kprobe, Private: byKey[k],
			}
			if !d.Matches(pr) && !(anyProvider && d.Matches(withProvider(pr, d.Provider))) {
				continue
			}
			pr.ID = u.id(k)
			pr.Args = usdtArgs(byKey[k].sites[0].note.Args)
			out = append(out, pr)
		}
	}
	return out, nil
}

// withProvider is a copy of pr under another provider name, to match
// against.
func withProvider(pr *Probe, provider string) *Probe {
	c := *pr
	c.Provider = provider
	return &c
}

// id returns the probe ID of k, the same every time it is asked.
func (u *USDT) id(k usdtKey) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	id, ok := u.ids[k]
	if !ok {
		id = nextUserID()
		u.ids[k] = id
	}
	return id
}

// file reads (or recalls) the probe sites of the ELF file at path.
func (u *USDT) file(path string) (*usdtFile, error) {
	st, err := os.Stat(path)
	if err != nil {
		return &usdtFile{}, nil // gone since the process mapped it
	}
	u.mu.Lock()
	f := u.files[path]
	u.mu.Unlock()
	if f != nil && f.stamp.Equal(st.ModTime()) && f.size == st.Size() {
		return f, nil
	}
	f, err = readUSDTFile(path)
	if err != nil {
		return nil, err
	}
	f.stamp, f.size = st.ModTime(), st.Size()
	u.mu.Lock()
	u.files[path] = f
	u.mu.Unlock()
	return f, nil
}

func readUSDTFile(path string) (*usdtFile, error) {
	ef, err := elf.Open(path)
	if err != nil {
		// Not every executable mapping is of an ELF file (JIT code
		// cached in files, say); those have no probes.
		return &usdtFile{}, nil
	}
	defer ef.Close()
	notes, err := stapsdt.Notes(ef)
	if err != nil {
		return nil, fmt.Errorf("usdt: %s: %w", path, err)
	}
	out := &usdtFile{}
	if len(notes) == 0 {
		return out, nil
	}
	syms, err := elfsym.Open(path)
	if err != nil {
		return nil, fmt.Errorf("usdt: %w", err)
	}
	for _, n := range notes {
		for i, a := range n.Args {
			if a.Symbol == "" {
				continue
			}
			n.Args = append([]stapsdt.Arg(nil), n.Args...)
			n.Args[i] = ripRelative(a, syms, n.PC)
		}
		s := usdtSite{note: n}
		if fn, ok := syms.ByAddress(n.PC); ok {
			s.fn = fn.Name
		}
		s.offset, s.err = syms.FileOffset(n.PC)
		if s.err == nil && n.Semaphore != 0 {
			s.refCtr, s.err = syms.FileOffset(n.Semaphore)
		}
		if s.err != nil {
			// elfsym's error names the file.
			s.err = fmt.Errorf("probe %s:%s: %w", n.Provider, n.Name, s.err)
		}
		out.sites = append(out.sites, s)
	}
	return out, nil
}

// ripRelative resolves a "sym+off(%rip)" argument to an offset from the
// probe site: when the uprobe program runs, the pt_regs instruction
// pointer is the site's address, wherever the file is loaded.
func ripRelative(a stapsdt.Arg, syms *elfsym.File, pc uint64) stapsdt.Arg {
	v, ok := syms.Value(a.Symbol)
	if !ok {
		a.Kind, a.Err = stapsdt.Unsupported, fmt.Sprintf("symbol %s not found", a.Symbol)
		return a
	}
	a.Offset += int64(v - pc)
	a.Symbol = ""
	return a
}

// usdtArgs types a probe's arguments by their size and sign.
func usdtArgs(as []stapsdt.Arg) []Arg {
	out := []Arg{}
	for _, a := range as {
		t := "int" + strconv.Itoa(8*a.Size) + "_t"
		if !a.Signed {
			t = "u" + t
		}
		out = append(out, Arg{Type: t, Kind: ArgInt, Size: a.Size, Signed: a.Signed})
	}
	return out
}

// Prologue fills arg0..argN from the site's argument specs: registers from
// the pt_regs the uprobe program receives, memory operands read from the
// process with bpf_probe_read_user, constants as they are; each value
// truncated to its size and sign- or zero-extended. When a probe's sites
// keep their arguments in different places, each site's attachment carries
// its index as the BPF cookie and the prologue branches on it.
func (*USDT) Prologue(pr *Probe, p *Prologue) error {
	if err := checkPrologue(p); err != nil {
		return err
	}
	up, ok := pr.Private.(*usdtProbe)
	if !ok {
		return fmt.Errorf("%s: not a usdt probe", pr)
	}
	if !regs.supported {
		return fmt.Errorf("usdt: pt_regs layout unknown on this architecture")
	}
	variants := usdtVariants(up.sites)
	for _, v := range variants {
		for i, a := range up.sites[v].note.Args {
			if i >= NumArgs || p.Unused&(1<<i) != 0 {
				continue
			}
			if a.Kind == stapsdt.Unsupported {
				return fmt.Errorf("arg%d (%s) cannot be evaluated: %s", i, a.Spec, a.Err)
			}
			for _, r := range []string{a.Reg, a.Index} {
				if _, ok := userRegs[r]; r != "" && !ok {
					return fmt.Errorf("arg%d (%s): unknown register %q", i, a.Spec, r)
				}
			}
		}
	}
	setup(p)
	if len(variants) == 1 {
		usdtSiteArgs(p, up.sites[variants[0]].note.Args)
	} else {
		done := label(pr, "args")
		p.Insns = append(p.Insns,
			asm.Mov.Reg(asm.R1, p.Ctx),
			asm.FnGetAttachCookie.Call(),
		)
		for k := range variants {
			p.Insns = append(p.Insns, asm.JEq.Imm(asm.R0, int32(k), label(pr, "site"+strconv.Itoa(k))))
		}
		zeroArgs(p, 0) // no site's cookie: cannot happen
		p.Insns = append(p.Insns, asm.Ja.Label(done))
		for k, v := range variants {
			start := len(p.Insns)
			usdtSiteArgs(p, up.sites[v].note.Args)
			p.Insns = append(p.Insns, asm.Ja.Label(done))
			p.Insns[start] = p.Insns[start].WithSymbol(label(pr, "site"+strconv.Itoa(k)))
		}
		p.Insns = append(p.Insns, asm.Mov.Imm(asm.R0, 0).WithSymbol(done))
	}
	zeroErrno(p)
	return nil
}

// usdtVariants returns, for each distinct argument spec among sites, the
// index of its first site.
func usdtVariants(sites []usdtSite) []int {
	var out []int
	seen := map[string]bool{}
	for i, s := range sites {
		if !seen[s.note.ArgSpec] {
			seen[s.note.ArgSpec] = true
			out = append(out, i)
		}
	}
	return out
}

// usdtVariant is the cookie of site i: the index of its spec's variant.
func usdtVariant(sites []usdtSite, i int) uint64 {
	for k, v := range usdtVariants(sites) {
		if sites[v].note.ArgSpec == sites[i].note.ArgSpec {
			return uint64(k)
		}
	}
	return 0
}

// usdtSiteArgs emits the code that evaluates one site's arguments. It
// always emits at least one instruction (a Prologue label lands on it).
func usdtSiteArgs(p *Prologue, args []stapsdt.Arg) {
	start := len(p.Insns)
	for i, a := range args {
		if i >= NumArgs || p.Unused&(1<<i) != 0 {
			continue
		}
		switch a.Kind {
		case stapsdt.Reg:
			loadUserReg(p, asm.R0, a.Reg)
		case stapsdt.Imm:
			p.Insns = append(p.Insns, asm.LoadImm(asm.R0, a.Offset, asm.DWord))
		case stapsdt.Mem:
			// R3 = base + index*scale + displacement; then read Size
			// bytes from there into argi's slot, and load them back.
			p.Insns = append(p.Insns, asm.Mov.Imm(asm.R3, 0))
			if a.Reg != "" {
				loadUserReg(p, asm.R3, a.Reg)
			}
			if a.Index != "" {
				loadUserReg(p, asm.R4, a.Index)
				if sh := scaleShift(a.Scale); sh > 0 {
					p.Insns = append(p.Insns, asm.LSh.Imm(asm.R4, sh))
				}
				p.Insns = append(p.Insns, asm.Add.Reg(asm.R3, asm.R4))
			}
			if a.Offset == 0 {
				// nothing to add
			} else if a.Offset == int64(int32(a.Offset)) {
				p.Insns = append(p.Insns, asm.Add.Imm(asm.R3, int32(a.Offset)))
			} else {
				p.Insns = append(p.Insns, asm.LoadImm(asm.R4, a.Offset, asm.DWord), asm.Add.Reg(asm.R3, asm.R4))
			}
			p.Insns = append(p.Insns,
				storeZero64(p.State, p.ArgOffset(i)),
				asm.Mov.Reg(asm.R1, p.State),
				asm.Add.Imm(asm.R1, int32(p.ArgOffset(i))),
				asm.Mov.Imm(asm.R2, int32(a.Size)),
				asm.FnProbeReadUser.Call(),
				asm.LoadMem(asm.R0, p.State, p.ArgOffset(i), sizes[a.Size]),
			)
		default:
			continue // rejected by Prologue when used
		}
		p.Insns = append(p.Insns, extend(asm.R0, a.Size, a.Signed)...)
		storeArg(p, i, asm.R0)
	}
	zeroArgs(p, min(len(args), NumArgs))
	if len(p.Insns) == start {
		p.Insns = append(p.Insns, asm.Mov.Imm(asm.R0, 0))
	}
}

// loadUserReg loads the user register name, as wide as it is, from the
// pt_regs context into dst.
func loadUserReg(p *Prologue, dst asm.Register, name string) {
	r := userRegs[name]
	p.Insns = append(p.Insns, asm.LoadMem(dst, p.Ctx, r.off, asm.DWord))
	if r.shift > 0 {
		p.Insns = append(p.Insns, asm.RSh.Imm(dst, int32(r.shift)))
	}
	p.Insns = append(p.Insns, extend(dst, r.size, false)...)
}

// extend keeps the low size bytes of r, sign- or zero-extended to 64 bits.
func extend(r asm.Register, size int, signed bool) asm.Instructions {
	if size >= 8 {
		return nil
	}
	sh := int32(64 - 8*size)
	if signed {
		return asm.Instructions{asm.LSh.Imm(r, sh), asm.ArSh.Imm(r, sh)}
	}
	return asm.Instructions{asm.LSh.Imm(r, sh), asm.RSh.Imm(r, sh)}
}

func scaleShift(scale int) int32 {
	switch scale {
	case 2:
		return 1
	case 4:
		return 2
	case 8:
		return 3
	}
	return 0
}

// Attach sets a uprobe on every site of the probe, for its process only,
// through the perf uprobe PMU (nothing is written to uprobe_events), with
// the kernel incrementing the semaphore, if any, while it is attached.
func (*USDT) Attach(pr *Probe, prog *ebpf.Program) (io.Closer, error) {
	up, ok := pr.Private.(*usdtProbe)
	if !ok {
		return nil, fmt.Errorf("%s: not a usdt probe", pr)
	}
	if prog.Type() != ebpf.Kprobe {
		return nil, fmt.Errorf("%s: program type is %v, want %v", pr, prog.Type(), ebpf.Kprobe)
	}
	if err := checkUprobePMU(); err != nil {
		return nil, fmt.Errorf("%s: %w", pr, err)
	}
	ex, err := link.OpenExecutable(up.path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pr, err)
	}
	multi := len(usdtVariants(up.sites)) > 1
	var cs closers
	for i, s := range up.sites {
		if s.err != nil {
			cs.Close()
			return nil, fmt.Errorf("%s: %w", pr, s.err)
		}
		opts := &link.UprobeOptions{Address: s.offset, PID: up.pid, RefCtrOffset: s.refCtr}
		if multi {
			opts.Cookie = usdtVariant(up.sites, i)
		}
		l, err := ex.Uprobe("", prog, opts)
		if err != nil {
			cs.Close()
			if errors.Is(err, syscall.ESRCH) {
				return nil, fmt.Errorf("%s: process %d has exited", pr, up.pid)
			}
			return nil, fmt.Errorf("%s: uprobe at %s offset %#x: %w", pr, up.path, s.offset, err)
		}
		cs = append(cs, l)
	}
	return cs, nil
}
