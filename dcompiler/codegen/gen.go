// Package codegen turns a checked D program into BPF: one program per
// matched probe, running that probe's clauses in program order against a
// per-CPU machine state, plus the specs of the maps they share.
//
// Registers in generated code: R6 holds the probe's context, R9 the machine
// state, R8 the globals value and R7 the output record being written by the
// current clause. R0-R5 are scratch; temporaries spill to the stack.
package codegen

import (
	"fmt"
	"math"

	"github.com/dstar-trace/dstar/dcompiler/types"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/dstar-trace/dstar/dcompiler/ast"
	"github.com/dstar-trace/dstar/dcompiler/check"
	"github.com/dstar-trace/dstar/dcompiler/quant"
	"github.com/dstar-trace/dstar/dcompiler/source"
	"github.com/dstar-trace/dstar/providers"
)

// Prologuer emits a probe's prologue, and says which probes can share a
// program (a providers.Registry).
type Prologuer interface {
	Prologue(pr *providers.Probe, p *providers.Prologue) error
	Dispatcher(pr *providers.Probe) (providers.Dispatcher, string)
}

// group is the probes one program serves.
type group struct {
	probes []*providers.Probe
	d      providers.Dispatcher
	name   string
}

// groups puts the matched probes into programs: the probes of a shared
// attach point together, every other probe alone; in order of first match.
func (g *gen) groups() []*group {
	var out []*group
	shared := map[string]*group{}
	for _, pr := range g.in.Probes {
		d, name := g.opts.Providers.Dispatcher(pr)
		if d == nil {
			out = append(out, &group{probes: []*providers.Probe{pr}})
			continue
		}
		if grp := shared[name]; grp != nil {
			grp.probes = append(grp.probes, pr)
			continue
		}
		grp := &group{probes: []*providers.Probe{pr}, d: d, name: name}
		shared[name] = grp
		out = append(out, grp)
	}
	// A shared attach point with one probe needs no dispatcher.
	for _, grp := range out {
		if len(grp.probes) == 1 {
			grp.d = nil
		}
	}
	return out
}

// Options size the generated maps and strings.
type Options struct {
	Providers Prologuer
	StrSize   int // bytes per string buffer: the strsize option and the NUL
	BufSize   int // ring buffer bytes (a power of two, at least a page)
	AggSize   int // bytes per aggregation map, to derive its entry count
	// DynVarSize is bytes per associative array or thread-local, to
	// derive its entry count.
	DynVarSize int
	// NSpec is the number of speculation buffers.
	NSpec int
	// OnCPU, with CPU, is -x cpu: probes record only on that CPU.
	OnCPU bool
	CPU   int
	// MaxFrames is -x maxframes: the deepest stackdepth and ustackdepth
	// count (0: the kernel's walker's limit).
	MaxFrames int
}

// Output is the generated code.
type Output struct {
	Programs []*Program
	Maps     map[string]*ebpf.MapSpec
	Records  map[uint32]*Record
	Aggs     []*AggLayout
	Globals  []*Var
	NSpec    int // speculation buffers
	// BufTooSmall says -x bufsize, dynvarsize or aggsize cannot hold a
	// single record or element: dtrace refuses to enable such a program.
	BufTooSmall bool
}

// Program is a BPF program. It serves Probes (one, or for a dispatcher
// every probe of a shared attach point) and attaches as Probe does —
// unless TailOf names the program array a dispatcher tail-calls it from,
// at index Key.
type Program struct {
	Probe  *providers.Probe
	Probes []*providers.Probe
	Spec   *ebpf.ProgramSpec
	TailOf string
	Key    int64
}

const (
	regCtx    = asm.R6
	regRecord = asm.R7
	regGlob   = asm.R8
	regState  = asm.R9
)

// Stack layout: fp-8 holds a zero u32 key; temporaries below it; below
// them, the clause's record pointer as reserved.
const (
	stackKey    = -8
	stackTemps  = -16
	maxTemps    = 56
	stackRecord = stackTemps - 8*maxTemps
)

// Generate generates code for in.
func Generate(in *check.Info, opts Options) (*Output, error) {
	if opts.StrSize <= 0 {
		opts.StrSize = 256 + 1
	}
	if opts.BufSize <= 0 {
		opts.BufSize = 4 << 20
	}
	asked := opts.BufSize
	// A ring buffer is a power of two, at least a page.
	ring := 4096
	for ring < opts.BufSize {
		ring <<= 1
	}
	opts.BufSize = ring
	if opts.AggSize <= 0 {
		opts.AggSize = 4 << 20
	}
	if opts.DynVarSize <= 0 {
		opts.DynVarSize = 1 << 20
	}
	if opts.NSpec <= 0 {
		opts.NSpec = 1
	}
	out := &Output{Maps: map[string]*ebpf.MapSpec{}, Records: map[uint32]*Record{}, NSpec: opts.NSpec}
	g := &gen{in: in, opts: opts, out: out}
	g.layoutVars()
	g.layoutAggs()
	epid := uint32(1)
	scratch := 0
	for _, grp := range g.groups() {
		if grp.d != nil {
			disp, err := g.dispatcher(grp)
			if err != nil {
				return nil, err
			}
			out.Programs = append(out.Programs, disp)
		}
		for _, pr := range grp.probes {
			pg := &probeGen{gen: g}
			light := false
			if grp.d == nil {
				lp := g.contextFree(pr)
				light, pr = lp != pr, lp
			}
			prog, err := pg.program(pr, grp.d != nil, &epid)
			if err != nil {
				return nil, err
			}
			if light {
				if err := checkContextFree(prog); err != nil {
					return nil, err
				}
			}
			if grp.d != nil {
				prog.TailOf, prog.Key = grp.tailMap(), grp.d.Key(pr)
			}
			out.Programs = append(out.Programs, prog)
			scratch = max(scratch, pg.scratchUsed)
		}
	}
	g.maps(g.scratchBase + scratch)
	for _, r := range out.Records {
		// As dtrace: the buffer asked for must hold a record and the
		// ring buffer's header.
		if r.Size+8 > asked {
			out.BufTooSmall = true
		}
	}
	return out, nil
}

type gen struct {
	in   *check.Info
	opts Options
	out  *Output
	vars map[check.Scope]map[string]*Var
	aggs map[string]*AggLayout
	// scratchBase is where the state's scratch space starts, after the
	// clause-locals.
	scratchBase int
	strtok      int // strtok( )'s string and position, after the clause-locals; 0 if unused
	tstamp      int // timestamp's value for the firing, 0 until read; 0 if unused
	glSize      int
	arraysOff   int // where the fixed-size arrays start in the globals value
	zeroOff     int // zeroSize bytes of zeros in the globals value
	zeroSize    int
	file        *source.File // of the clause being generated
	keyMax      int          // bytes of the largest aggregation key
	valMax      int          // bytes of the largest aggregation value
}

func (g *gen) errorf(p source.Pos, format string, args ...any) error {
	return source.Errorf(g.file, p, "D_UNKNOWN", format, args...)
}

// layoutVars gives each variable its place: global scalars in the globals
// value, clause-locals in the state, associative arrays and thread-locals
// a hash map each.
func (g *gen) layoutVars() {
	g.vars = map[check.Scope]map[string]*Var{check.ScopeGlobal: {}, check.ScopeThread: {}, check.ScopeClause: {}}
	valSize := func(v *check.Var) int {
		if v.Type.IsString() || v.Type.Kind == types.Struct {
			return align8(v.Type.Size)
		}
		return 8
	}
	gl := GlSpecs + 8*g.opts.NSpec
	var arrays []*Var
	for _, v := range g.in.Globals {
		gv := &Var{Var: v}
		switch {
		case v.Keys != nil:
			gv.Map = "assoc_" + v.Name
			gv.Keys, gv.KeySize = keyLayout(v.Keys)
		case v.Type.Kind == types.Array || v.Type.Kind == types.Struct:
			// A struct's members may be stored through &x.m, as an
			// array's elements through &a[i].
			arrays = append(arrays, gv)
		default:
			gv.Off = gl
			gl += valSize(v)
		}
		g.vars[check.ScopeGlobal][v.Name] = gv
		g.out.Globals = append(g.out.Globals, gv)
	}
	// Zeros for a thread-local struct a thread has not assigned (or an
	// associative array's element not there): its members read from here. Before the arrays, where no pointer
	// store reaches.
	g.zeroOff = gl
	for _, v := range append(g.in.Threads, g.in.Globals...) {
		if v.Type.Kind == types.Struct && (v.Scope == check.ScopeThread || v.Keys != nil) {
			g.zeroSize = max(g.zeroSize, align8(v.Type.Size))
		}
	}
	gl += g.zeroSize
	// The fixed-size arrays come last, together: stores through a
	// pointer may go anywhere in [arrays, glSize).
	g.arraysOff = gl
	for _, gv := range arrays {
		gv.Off = gl
		gl += align8(gv.Type.Size)
	}
	g.glSize = gl
	for _, v := range g.in.Threads {
		tv := &Var{Var: v, Map: "self_" + v.Name, KeySize: 8}
		if v.Keys != nil {
			// self->a[k]: the thread id, then the tuple.
			keys, size := keyLayout(v.Keys)
			for i := range keys {
				keys[i].Off += 8
			}
			tv.Keys, tv.KeySize = keys, 8+size
		}
		g.vars[check.ScopeThread][v.Name] = tv
	}
	loc := stLocals
	for _, v := range g.in.Locals {
		g.vars[check.ScopeClause][v.Name] = &Var{Var: v, Off: loc}
		loc += valSize(v)
	}
	if usesStrtok(g.in.Clauses) {
		// Like a clause-local, it lasts the whole firing, so that
		// strtok(NULL, ...) goes on where another clause left off.
		g.strtok = loc
		loc += g.opts.StrSize + 8
	}
	if usesIdent(g.in.Clauses, "timestamp") {
		// timestamp is read once per firing, as in DTrace: every clause
		// of the firing sees the same value.
		g.tstamp = loc
		loc += 8
	}
	g.scratchBase = loc
}

// keyLayout lays out a tuple key: integers as u64, strings and structs
// in slots of their size rounded to 8.
func keyLayout(ts []*types.Type) ([]Datum, int) {
	var ds []Datum
	off := 0
	for _, k := range ts {
		size := 8
		if k.IsString() || k.Kind == types.Stack || k.Kind == types.Sym || k.Kind == types.Struct {
			size = align8(k.Size)
		}
		ds = append(ds, Datum{Off: off, Size: size, Type: k})
		off += size
	}
	if off == 0 {
		off = 8 // a map key cannot be empty
	}
	return ds, off
}

func (g *gen) layoutAggs() {
	g.aggs = map[string]*AggLayout{}
	for _, a := range g.in.Aggs {
		l := &AggLayout{Agg: a, Map: AggMap(a.ID), Array: len(a.Keys) == 0}
		l.Keys, l.KeySize = keyLayout(a.Keys)
		if l.Array {
			l.KeySize = 4
		}
		switch a.Func {
		case "count":
			l.ValueSize = 8
		case "stddev":
			l.ValueSize = 32
		case "quantize":
			l.Buckets = quant.QuantizeBuckets
		case "lquantize":
			l.Buckets = l.Lquantize().Len()
		case "llquantize":
			l.Buckets = l.Llquantize().Len()
		default:
			l.ValueSize = 16
		}
		if l.Buckets > 0 {
			l.ValueSize = 8 + 8*l.Buckets + 8 // updates, buckets, weighted sum
		}
		g.keyMax = max(g.keyMax, l.KeySize)
		g.valMax = max(g.valMax, l.ValueSize)
		g.aggs[a.Name] = l
		g.out.Aggs = append(g.out.Aggs, l)
	}
}

// cpuInfoMap declares the map curcpu points into, once, and names it.
func (g *gen) cpuInfoMap() string {
	if g.out.Maps[CPUInfoMap] == nil {
		g.out.Maps[CPUInfoMap] = &ebpf.MapSpec{
			Name: CPUInfoMap, Type: ebpf.PerCPUArray, KeySize: 4,
			ValueSize: CPUInfoSize, MaxEntries: 1,
		}
	}
	return CPUInfoMap
}

// maps declares the maps the programs use.
func (g *gen) maps(stateSize int) {
	g.out.Maps[StateMap] = &ebpf.MapSpec{
		Name: StateMap, Type: ebpf.PerCPUArray, KeySize: 4,
		ValueSize: uint32(align8(stateSize)), MaxEntries: 1,
	}
	// User space sets single words of the globals (the gate, freed
	// speculations) while programs write others: mapped memory lets it
	// store a word without rewriting the rest.
	g.out.Maps[GlobalsMap] = &ebpf.MapSpec{
		Name: GlobalsMap, Type: ebpf.Array, KeySize: 4,
		ValueSize: uint32(g.glSize), MaxEntries: 1, Flags: unix.BPF_F_MMAPABLE,
	}
	g.out.Maps[EventsMap] = &ebpf.MapSpec{
		Name: EventsMap, Type: ebpf.RingBuf, MaxEntries: uint32(g.opts.BufSize),
	}
	for _, scope := range []check.Scope{check.ScopeGlobal, check.ScopeThread} {
		for _, v := range g.vars[scope] {
			if v.Map == "" {
				continue
			}
			val := 8
			if v.Type.IsString() || v.Type.Kind == types.Struct {
				val = align8(v.Type.Size)
			}
			// As Oracle's: an associative array's element must fit; a
			// thread-local scalar is not refused (dynvarsize=5 holds one).
			if len(v.Keys) > 0 && v.KeySize+val > g.opts.DynVarSize {
				g.out.BufTooSmall = true
			}
			g.out.Maps[v.Map] = &ebpf.MapSpec{
				Name: v.Map, Type: ebpf.Hash, KeySize: uint32(v.KeySize), ValueSize: uint32(val),
				MaxEntries: uint32(max(g.opts.DynVarSize/(v.KeySize+val), 1024)),
			}
		}
	}
	for _, l := range g.out.Aggs {
		spec := &ebpf.MapSpec{
			Name: l.Map, Type: ebpf.PerCPUHash, KeySize: uint32(l.KeySize),
			ValueSize: uint32(l.ValueSize),
		}
		// As Oracle's: aggsize must hold one element of every aggregation,
		// keyed or not.
		n := g.opts.AggSize / (l.KeySize + l.ValueSize)
		if n == 0 {
			g.out.BufTooSmall = true
		}
		if l.Array {
			spec.Type = ebpf.PerCPUArray
			spec.MaxEntries = 1
		} else {
			spec.MaxEntries = uint32(max(n, 1))
		}
		g.out.Maps[l.Map] = spec
	}
}

// probeGen generates the program of one probe.
type probeGen struct {
	*gen
	emitter
	probe       *providers.Probe
	clause      *check.Clause
	stmtNum     int // the clause's statement number, as DTrace's dt_clause_N
	env         *check.Env
	depth       int // temporaries in use on the stack
	scratch     int // scratch bytes in use by the current clause
	scratchUsed int
	allocaArea  int // state offset of the clause's alloca( ) space (0: none)
	actions     int // actions so far in the current clause
	record      *Record
	recOff      int    // next free byte in the record
	recMoved    bool   // recWindow has moved regRecord in the current clause
	fault       string // where a fault in the current clause jumps
	drop        string // where speculate( ) on no active speculation drops the clause
	lastLabel   string // made by labelNext
	pinned      int    // scratch addresses stored in variables so far
	raised      map[string]bool
	epid        uint32
	mayExit     bool              // a clause generated so far on this probe calls exit( )
	subprogs    asm.Instructions  // callbacks, after the program's exit
	callbacks   map[string]string // callback names by key
}

func (pg *probeGen) isDTrace() bool { return pg.probe.Provider == "dtrace" }

// program generates the program of one probe. filtered says a
// dispatcher tail-calls it only for its own events.
func (pg *probeGen) program(pr *providers.Probe, filtered bool, epid *uint32) (*Program, error) {
	pg.raised = map[string]bool{}
	pg.emit(asm.Mov.Reg(regCtx, asm.R1))
	if err := pg.section(pr, filtered, epid); err != nil {
		return nil, err
	}
	pg.label("exit")
	pg.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	pg.insns = longJumps(pg.insns)
	spec := &ebpf.ProgramSpec{
		Name:         progName(pr),
		Type:         pr.ProgType,
		AttachType:   pr.AttachType,
		AttachTo:     pr.AttachTo,
		Instructions: pg.withSubprogs(progName(pr)),
		License:      "GPL",
	}
	return &Program{Probe: pr, Probes: []*providers.Probe{pr}, Spec: spec}, nil
}

// dispatcher generates the program attached for a shared attach point: it
// reads the event's key and tail-calls the program of the probe with that
// key, through a program array; events of no probe end there.
func (g *gen) dispatcher(grp *group) (*Program, error) {
	var pg probeGen
	pg.gen = g
	pg.emit(asm.Mov.Reg(regCtx, asm.R1))
	pro := &providers.Prologue{Ctx: regCtx, State: regState, Skip: "exit", Scratch: stackTemps}
	if err := grp.d.LoadKey(grp.name, pro); err != nil {
		return nil, err
	}
	pg.emit(pro.Insns...)
	pg.emit(asm.Mov.Reg(asm.R3, asm.R0), asm.Mov.Reg(asm.R1, regCtx))
	pg.mapPtr(asm.R2, grp.tailMap())
	pg.call(asm.FnTailCall)
	pg.emit(asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"), asm.Return())
	first := grp.probes[0]
	spec := &ebpf.ProgramSpec{
		Name: "d_" + grp.name, Type: first.ProgType, AttachType: first.AttachType,
		Instructions: pg.insns, License: "GPL",
	}
	maxKey := int64(0)
	for _, pr := range grp.probes {
		maxKey = max(maxKey, grp.d.Key(pr))
	}
	g.out.Maps[grp.tailMap()] = &ebpf.MapSpec{
		Name: grp.tailMap(), Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4,
		MaxEntries: uint32(maxKey + 1),
	}
	return &Program{Probe: first, Probes: grp.probes, Spec: spec}, nil
}

func (grp *group) tailMap() string { return "tail_" + grp.name }

// section generates one probe's part of a program: the setup, the
// provider's prologue, and the probe's clauses in program order.
func (pg *probeGen) section(pr *providers.Probe, filtered bool, epid *uint32) error {
	pg.probe = pr
	pg.env = &check.Env{Probe: pr}
	// The setup the provider places after its filter: the state, the
	// globals, and the gate.
	var setup probeGen
	setup.gen = pg.gen
	setup.emit(storeImm(asm.RFP, stackKey, 0, asm.DWord))
	setup.lookupZero(StateMap, "exit")
	setup.emit(asm.Mov.Reg(regState, asm.R0))
	setup.lookupZero(GlobalsMap, "exit")
	setup.emit(asm.Mov.Reg(regGlob, asm.R0))
	if !pg.isDTrace() {
		// Probes fire only while tracing is active: not before BEGIN has
		// run, and not after exit() or END.
		setup.emit(asm.LoadMem(asm.R1, regGlob, GlActivity, asm.DWord))
		setup.emit(asm.JNE.Imm(asm.R1, Active, "exit"))
		if pg.opts.OnCPU {
			// -x cpu: DTrace traces on that CPU only.
			setup.call(asm.FnGetSmpProcessorId)
			setup.emit(asm.JNE.Imm(asm.R0, int32(pg.opts.CPU), "exit"))
		}
	}
	pro := &providers.Prologue{
		Ctx: regCtx, State: regState,
		ArgOffset:   func(i int) int16 { return int16(StArgs + 8*i) },
		ErrnoOffset: StErrno,
		Skip:        "exit",
		Setup:       setup.insns,
		Scratch:     stackTemps,
		Unused:      pg.unusedArgs(),
		Filtered:    filtered,
	}
	if err := pg.opts.Providers.Prologue(pr, pro); err != nil {
		return fmt.Errorf("probe %s: %w", pr, err)
	}
	pg.emit(pro.Insns...)
	if pg.strtok != 0 {
		// Each firing starts with nothing to tokenize: a position past
		// any string's end, which strtok(NULL, ...) faults on.
		pg.emit(storeImm(regState, int16(pg.strtok+pg.opts.StrSize), int64(pg.opts.StrSize+1), asm.DWord))
	}
	if pg.tstamp != 0 {
		pg.emit(storeImm(regState, int16(pg.tstamp), 0, asm.DWord))
	}
	for i, cl := range pg.in.ClausesOf[pr.ID] {
		pg.epid = *epid
		*epid++
		pg.stmtNum = pg.in.StmtsOf[pr.ID][i]
		if err := pg.genClause(cl); err != nil {
			return err
		}
	}
	return nil
}

// unusedArgs tells the prologue which of arg0..arg9 and errno no clause
// on this probe reads, so it need not fetch them.
func (pg *probeGen) unusedArgs() uint32 {
	unused := uint32(1<<providers.NumArgs-1) | providers.UnusedErrno
	for _, cl := range pg.in.ClausesOf[pg.probe.ID] {
		visit := func(e ast.Expr) {
			if id, ok := e.(*ast.Ident); ok {
				if n := check.ArgIndex(id.Name); n >= 0 {
					unused &^= 1 << n
				} else if id.Name == "errno" {
					unused &^= providers.UnusedErrno
				}
			}
			if m, ok := e.(*ast.Member); ok && m.Arrow {
				// A field the prologue leaves in an arg slot.
				if id, ok := m.X.(*ast.Ident); ok && id.Name == "args" {
					if f := check.ArgField(pg.probe, m.Name); f != nil && f.Slot > 0 {
						unused &^= 1 << (f.Slot - 1)
					}
				}
			}
			if ix, ok := e.(*ast.Index); ok {
				if id, ok := ix.X.(*ast.Ident); ok && id.Name == "args" && len(ix.Keys) == 1 {
					if n, ok := pg.in.ConstInt(ix.Keys[0]); ok && n >= 0 && n < providers.NumArgs {
						unused &^= 1 << n
					}
				}
			}
		}
		ast.Inspect(cl.Pred, visit)
		ast.InspectStmts(cl.Body, visit)
	}
	return unused
}

// progName is a kernel-acceptable name for a probe's program.
func progName(p *providers.Probe) string {
	b := []byte(fmt.Sprintf("d%d_%s", p.ID, p.Name))
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	if len(b) > 15 {
		b = b[:15]
	}
	return string(b)
}

// lookupZero looks up key 0 of an array map into R0, jumping to fail when
// the lookup fails (it cannot for arrays, but the verifier wants the check).
func (pg *probeGen) lookupZero(m, fail string) {
	pg.mapPtr(asm.R1, m)
	pg.addrOf(asm.R2, asm.RFP, stackKey)
	pg.call(asm.FnMapLookupElem)
	pg.emit(asm.JEq.Imm(asm.R0, 0, fail))
}

// genClause generates one clause: predicate, record reservation, actions.
func (pg *probeGen) genClause(cl *check.Clause) error {
	pg.clause = cl
	pg.file = cl.File
	pg.scratch = 0
	pg.allocaArea = 0
	pg.actions = 0
	end := pg.newLabel("clause_end")
	pfault := pg.newLabel("pred_fault")
	pg.fault = pfault
	if pg.mayExit {
		pg.exitGate()
	}
	if usesAlloca(cl) {
		pg.allocaSpace()
	}
	if cl.Pred != nil {
		if err := pg.expr(cl.Pred); err != nil {
			return err
		}
		pg.emit(asm.JEq.Imm(asm.R0, 0, end))
	}
	rec, err := pg.layoutRecord(cl)
	if err != nil {
		return err
	}
	pg.record = rec
	bfault := pg.newLabel("body_fault")
	pg.drop = pg.newLabel("clause_drop")
	if rec != nil {
		pg.reserve(rec.Size, end)
		pg.fault = bfault
	}
	for i, s := range cl.Body {
		pg.actions = i + 1
		if err := pg.stmts([]ast.Stmt{s}); err != nil {
			return err
		}
	}
	if rec != nil {
		flags := int32(1) // BPF_RB_NO_WAKEUP: the consumer polls
		if hasExit(rec) {
			flags = 2 // BPF_RB_FORCE_WAKEUP: stop promptly
		}
		pg.emit(asm.Mov.Reg(asm.R1, regRecord), asm.Mov.Imm(asm.R2, flags))
		pg.call(asm.FnRingbufSubmit)
	}
	// Faults: drop the clause's record, report the fault, go on with the
	// next clause. Handlers nothing jumps to are left out: the verifier
	// rejects unreachable code.
	if pg.raised[bfault] || pg.raised[pfault] || pg.raised[pg.drop] {
		pg.emit(asm.Ja.Label(end))
	}
	if pg.raised[pg.drop] {
		// speculate( ) found no active speculation: as in DTrace, the
		// clause ends there and records nothing.
		pg.label(pg.drop)
		if pg.recMoved {
			pg.emit(asm.LoadMem(regRecord, asm.RFP, stackRecord, asm.DWord))
		}
		pg.emit(asm.Mov.Reg(asm.R1, regRecord), asm.Mov.Imm(asm.R2, 0))
		pg.call(asm.FnRingbufDiscard)
		pg.emit(asm.Ja.Label(end))
	}
	if pg.raised[bfault] {
		pg.label(bfault)
		if pg.recMoved {
			pg.emit(asm.LoadMem(regRecord, asm.RFP, stackRecord, asm.DWord))
		}
		pg.emit(asm.Mov.Reg(asm.R1, regRecord), asm.Mov.Imm(asm.R2, 0))
		pg.call(asm.FnRingbufDiscard)
	}
	if pg.raised[bfault] || pg.raised[pfault] {
		pg.label(pfault)
		pg.faultRecord(end)
	}
	pg.label(end)
	pg.record = nil
	pg.recMoved = false
	pg.scratchUsed = max(pg.scratchUsed, pg.scratch+pg.keyMax+pg.valMax)
	if need := pg.scratchBase + pg.scratchUsed; need > maxState {
		// The kernel refuses a larger per-CPU value with E2BIG.
		return pg.errorf(cl.Pos, "%s needs %d bytes of per-CPU scratch space, more than the %d the kernel allows: lower strsize (%d)", pg.probe, need, maxState, pg.opts.StrSize-1)
	}
	return nil
}

// maxState is the largest per-CPU map value the kernel allocates
// (PCPU_MIN_UNIT_SIZE): the state, with its scratch space, must fit.
const maxState = 32 << 10

// exitGate skips the rest of the probe's clauses once an earlier one has
// called exit( ), as dtrace runs a clause only while the activity is the
// probe's own: Inactive for BEGIN, Draining for END (whose clauses all
// run), Active for the others. ERROR's clauses always run.
func (pg *probeGen) exitGate() {
	want := int32(Active)
	if pg.isDTrace() {
		switch pg.probe.Name {
		case "BEGIN":
			want = Inactive
		case "END":
			want = Draining
		default:
			return
		}
	}
	pg.emit(asm.LoadMem(asm.R1, regGlob, GlActivity, asm.DWord))
	pg.emit(asm.JNE.Imm(asm.R1, want, "exit"))
}

// Wakes reports whether writing r wakes the consumer (BPF_RB_FORCE_WAKEUP):
// a record that calls exit(). Others are written without a wake-up and
// found by polling.
func (r *Record) Wakes() bool { return hasExit(r) }

func hasExit(r *Record) bool {
	for _, a := range r.Actions {
		if a.Kind == ActExit {
			return true
		}
	}
	return false
}

// reserve reserves size bytes of ring buffer into R7 and writes the
// header; on failure it counts a drop and skips to end.
func (pg *probeGen) reserve(size int, end string) {
	pg.reserveRecord(size, int64(pg.epid), end)
}

// reserveRecord reserves a record of size bytes into R7 and writes its
// header with epid; when the buffer is full it counts a drop and jumps to
// end.
func (pg *probeGen) reserveRecord(size int, epid int64, end string) {
	ok := pg.newLabel("reserved")
	pg.mapPtr(asm.R1, EventsMap)
	pg.emit(asm.Mov.Imm(asm.R2, int32(size)), asm.Mov.Imm(asm.R3, 0))
	pg.call(asm.FnRingbufReserve)
	pg.emit(asm.JNE.Imm(asm.R0, 0, ok))
	pg.count(StDrops)
	pg.emit(asm.Ja.Label(end))
	pg.label(ok)
	pg.emit(asm.Mov.Reg(regRecord, asm.R0))
	if size > math.MaxInt16 {
		// Kept for recWindow, which moves regRecord through the record.
		pg.emit(asm.StoreMem(asm.RFP, stackRecord, regRecord, asm.DWord))
	}
	pg.header(epid)
}

// recWindow makes the size bytes at off in the record reachable by an
// instruction's 16-bit offset: past 32K, regRecord moves to off. It
// returns the offset to use from regRecord, and what puts it back. A fault
// in between finds it put back by the clause's fault handler.
func (pg *probeGen) recWindow(off, size int) (int, func()) {
	if off+size <= math.MaxInt16 {
		return off, func() {}
	}
	pg.recMoved = true
	pg.emit(asm.Add.Imm(regRecord, int32(off)))
	return 0, func() { pg.emit(asm.LoadMem(regRecord, asm.RFP, stackRecord, asm.DWord)) }
}

// header writes a record header at R7.
func (pg *probeGen) header(epid int64) {
	pg.emit(storeImm(regRecord, HdrEPID, epid, asm.Word))
	pg.call(asm.FnGetSmpProcessorId)
	pg.emit(asm.StoreMem(regRecord, HdrCPU, asm.R0, asm.Word))
	pg.call(asm.FnKtimeGetNs)
	pg.emit(asm.StoreMem(regRecord, HdrTimestamp, asm.R0, asm.DWord))
	pg.call(asm.FnGetCurrentPidTgid)
	pg.emit(asm.RSh.Imm(asm.R0, 32))
	pg.emit(asm.StoreMem(regRecord, HdrPID, asm.R0, asm.Word))
	pg.emit(storeImm(regRecord, HdrSpec, 0, asm.Word))
}

// count adds one to the per-CPU counter at state offset off.
func (pg *probeGen) count(off int16) {
	pg.emit(asm.LoadMem(asm.R1, regState, off, asm.DWord))
	pg.emit(asm.Add.Imm(asm.R1, 1))
	pg.emit(asm.StoreMem(regState, off, asm.R1, asm.DWord))
}

// faultRecord writes a fault record from the state's fault fields.
func (pg *probeGen) faultRecord(end string) {
	pg.reserveRecord(FltSize, -1, end)
	pg.emit(storeImm(regRecord, FltEPID, int64(pg.epid), asm.DWord))
	for _, f := range [][2]int16{{StFaultCode, FltCode}, {StFaultInsnPC, FltInsnPC}, {StFaultAddr, FltAddr}} {
		pg.emit(asm.LoadMem(asm.R1, regState, f[0], asm.DWord))
		pg.emit(asm.StoreMem(regRecord, f[1], asm.R1, asm.DWord))
	}
	pg.emit(asm.Mov.Reg(asm.R1, regRecord), asm.Mov.Imm(asm.R2, 2))
	pg.call(asm.FnRingbufSubmit)
}

// raise records a fault of code, with the address in register addr (or
// none) and the index of the instruction that raises it (the "BPF pc"
// dtrace reports; long jumps added later may shift it by a few), and jumps
// to the clause's fault handler.
func (pg *probeGen) raise(code int, addr asm.Register, hasAddr bool) {
	if hasAddr {
		pg.emit(asm.StoreMem(regState, StFaultAddr, addr, asm.DWord))
	} else {
		pg.emit(storeImm(regState, StFaultAddr, 0, asm.DWord))
	}
	pg.emit(storeImm(regState, StFaultCode, int64(code), asm.DWord))
	pg.emit(storeImm(regState, StFaultInsnPC, int64(len(pg.insns)), asm.DWord))
	pg.emit(asm.Ja.Label(pg.fault))
	pg.raised[pg.fault] = true
}

// releaseScratch gives back the scratch allocated since mark, noting the
// most the clause has used.
func (pg *probeGen) releaseScratch(mark int) {
	pg.scratchUsed = max(pg.scratchUsed, pg.scratch+pg.keyMax+pg.valMax)
	pg.scratch = mark
}

// allocScratch reserves n bytes of state scratch for the current clause.
func (pg *probeGen) allocScratch(n int) int {
	off := pg.scratchBase + pg.keyMax + pg.valMax + pg.scratch
	pg.scratch += align8(n)
	return off
}

// push spills R0 to a new stack temporary and returns its offset.
func (pg *probeGen) push() (int16, error) {
	if pg.depth >= maxTemps {
		return 0, fmt.Errorf("expression too complex")
	}
	off := int16(stackTemps - 8*pg.depth)
	pg.depth++
	pg.emit(asm.StoreMem(asm.RFP, off, asm.R0, asm.DWord))
	return off, nil
}

// pop releases the newest stack temporary, loading it into r.
func (pg *probeGen) pop(r asm.Register) {
	pg.depth--
	off := int16(stackTemps - 8*pg.depth)
	pg.emit(asm.LoadMem(r, asm.RFP, off, asm.DWord))
}

func (pg *probeGen) stmts(list []ast.Stmt) error {
	for _, s := range list {
		switch s := s.(type) {
		case *ast.ExprStmt:
			mark, pinned := pg.scratch, pg.pinned
			if err := pg.stmt(s.X); err != nil {
				return err
			}
			// What the statement took from scratch serves the next one,
			// unless a pointer to it may live on in a variable.
			if !pointsIntoScratch(s.X) && pg.pinned == pinned {
				pg.releaseScratch(mark)
			}
		case *ast.IfStmt:
			els, end := pg.newLabel("else"), pg.newLabel("endif")
			if err := pg.expr(s.Cond); err != nil {
				return err
			}
			pg.emit(asm.JEq.Imm(asm.R0, 0, els))
			if err := pg.stmts(s.Then); err != nil {
				return err
			}
			pg.emit(asm.Ja.Label(end))
			pg.label(els)
			if err := pg.stmts(s.Else); err != nil {
				return err
			}
			pg.label(end)
		}
	}
	return nil
}

// usesIdent reports whether any clause names identifier name.
func usesIdent(clauses []*check.Clause, name string) bool {
	found := false
	see := func(e ast.Expr) {
		if id, ok := e.(*ast.Ident); ok && id.Name == name {
			found = true
		}
	}
	for _, cl := range clauses {
		ast.Inspect(cl.Pred, see)
		ast.InspectStmts(cl.Body, see)
	}
	return found
}

// usesStrtok reports whether any clause calls strtok( ).
func usesStrtok(clauses []*check.Clause) bool {
	found := false
	see := func(e ast.Expr) {
		if c, ok := e.(*ast.Call); ok && c.Fn == "strtok" {
			found = true
		}
	}
	for _, cl := range clauses {
		ast.Inspect(cl.Pred, see)
		ast.InspectStmts(cl.Body, see)
	}
	return found
}
