package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/dstar-trace/dstar/dcompiler"
	"github.com/dstar-trace/dstar/dcompiler/codegen"
	"github.com/dstar-trace/dstar/engine/output"
	"github.com/dstar-trace/dstar/providers"
	"github.com/dstar-trace/dstar/providers/tracefs"
)

// Enabling is one compiled program loaded into the kernel: its maps,
// programs, attachments and consumer.
type Enabling struct {
	s     *Session
	Prog  *dcompiler.Program
	reg   *providers.Registry
	coll  *ebpf.Collection
	progs []*ebpf.Program // as prog.Code.Programs
	links []io.Closer
	rd    *ringbuf.Reader
	// unwind loads the tables user-stack walks need (nil: none walked).
	unwind *unwinder

	consumer sync.WaitGroup
	stopRead chan struct{}
	// wake is what the consumer waits on when every record wakes it
	// (nil: the reader's own blocking wait).
	wake *ringWait

	stateMu  sync.Mutex
	disabled bool
	closed   bool
	drops    []uint64 // per CPU, last reported
	aggDrops []uint64
	dynDrops uint64       // all CPUs, last reported
	last     *AggSnapshot // aggregations as read when disabled
	// rated is the aggregations as last read under -x aggrate, at
	// ratedAt: printa( ) in a clause prints them, as dtrace does.
	rated   *AggSnapshot
	ratedAt time.Time

	printed map[string]bool   // aggregations printed by printa
	normal  map[string]uint64 // normalize() divisors
	// cleared are the stored keys clear() zeroed, by aggregation: they
	// stay rows, with zero values, until trunc() removes them.
	cleared map[string]map[string]bool

	specs      map[uint32]*specBuf // speculative records, by speculation
	specDrops  uint64              // not yet reported
	specFailed uint64              // speculation( ) that found no buffer: all CPUs, last reported
}

// maxProgMaps is the most maps the kernel lets one program use
// (MAX_USED_MAPS).
const maxProgMaps = 64

// mapLimit refuses a program that uses more maps than the kernel allows,
// before any map is made: each aggregation is a map of its own.
func mapLimit(p *codegen.Program) error {
	used := map[string]bool{}
	for _, ins := range p.Spec.Instructions {
		if ins.IsLoadFromMap() && ins.Reference() != "" {
			used[ins.Reference()] = true
		}
	}
	if len(used) > maxProgMaps {
		return fmt.Errorf("the program for %s uses %d maps, more than the %d the kernel allows one program (each aggregation is a map)", p.Probe, len(used), maxProgMaps)
	}
	return nil
}

// load creates prog's maps and loads its programs.
func load(s *Session, prog *dcompiler.Program, reg *providers.Registry) (*Enabling, error) {
	spec := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{}}
	for name, m := range prog.Code.Maps {
		spec.Maps[name] = m.Copy()
	}
	for i, p := range prog.Code.Programs {
		spec.Programs[progKey(i)] = p.Spec.Copy()
		if err := mapLimit(p); err != nil {
			return nil, err
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		Programs: ebpf.ProgramOptions{LogDisabled: false},
	})
	if err != nil {
		return nil, loadError(err)
	}
	e := &Enabling{s: s, Prog: prog, reg: reg, coll: coll, printed: map[string]bool{}}
	for i, p := range prog.Code.Programs {
		e.progs = append(e.progs, coll.Programs[progKey(i)])
		if p.TailOf != "" {
			// A dispatcher reaches this program through its array.
			if err := coll.Maps[p.TailOf].Put(uint32(p.Key), e.progs[i]); err != nil {
				e.Close()
				return nil, fmt.Errorf("program array %s: %w", p.TailOf, err)
			}
		}
	}
	if err := e.initGlobals(); err != nil {
		e.Close()
		return nil, err
	}
	if m := coll.Maps[codegen.CPUInfoMap]; m != nil {
		if err := fillCPUInfo(m); err != nil {
			e.Close()
			return nil, fmt.Errorf("cpuinfo map: %w", err)
		}
	}
	rd, err := ringbuf.NewReader(coll.Maps[codegen.EventsMap])
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("ring buffer reader: %w", err)
	}
	e.rd = rd
	e.unwind = newUnwinder(coll)
	if e.unwind != nil {
		e.unwind.preload = !e.s.opts.NoInline
	}
	return e, nil
}

func progKey(i int) string { return fmt.Sprintf("prog_%d", i) }

// loadError explains a load failure: a verifier rejection shows the end of
// the verifier's log; a permission failure says what is needed.
func loadError(err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		// The log's end says why; its whole can run to megabytes.
		log := ve.Log
		if len(log) > 12 {
			log = log[len(log)-12:]
		}
		return fmt.Errorf("the kernel's BPF verifier rejected the program: %v:\n\t%s", ve.Cause, strings.Join(log, "\n\t"))
	}
	if errors.Is(err, os.ErrPermission) || errors.Is(err, unix.EPERM) {
		return fmt.Errorf("cannot load BPF programs: %w (dstar needs root, or CAP_BPF and CAP_PERFMON)", err)
	}
	return fmt.Errorf("cannot load BPF programs: %w", err)
}

// cpuInfo is sched.d's cpuinfo_t, as curcpu reads it.
type cpuInfo struct {
	ID, Pset, Chip, Lgrp int32
}

// fillCPUInfo writes each processor's cpuinfo_t into the per-CPU map
// curcpu points into: its number, no processor set (-1, as sched.d's
// translator says), its physical package and its NUMA node, as sysfs
// tells them (0 where it does not).
func fillCPUInfo(m *ebpf.Map) error {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	vals := make([]cpuInfo, n)
	for i := range vals {
		dir := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/", i)
		vals[i] = cpuInfo{ID: int32(i), Pset: -1}
		if b, err := os.ReadFile(dir + "topology/physical_package_id"); err == nil {
			if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				vals[i].Chip = int32(v)
			}
		}
		if nodes, _ := filepath.Glob(dir + "node[0-9]*"); len(nodes) > 0 {
			if v, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(nodes[0]), "node")); err == nil {
				vals[i].Lgrp = int32(v)
			}
		}
	}
	return m.Put(uint32(0), vals)
}

// initGlobals writes the clock offset that walltimestamp adds.
func (e *Enabling) initGlobals() error {
	var mono, real unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
	unix.ClockGettime(unix.CLOCK_REALTIME, &real)
	return e.setGlobal(codegen.GlWallOffset, uint64(real.Nano()-mono.Nano()))
}

// setActivity writes the gate every non-dtrace probe checks first.
func (e *Enabling) setActivity(state uint64) error {
	return e.setGlobal(codegen.GlActivity, state)
}

// setGlobal stores one u64 of the globals value through the map's mapped
// memory, leaving the words programs write alone.
func (e *Enabling) setGlobal(off int, v uint64) error {
	mem, err := e.coll.Maps[codegen.GlobalsMap].Memory()
	if err != nil {
		return err
	}
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	_, err = mem.WriteAt(b[:], int64(off))
	return err
}

// activity reads the gate: a program's exit() sets it to Draining.
func (e *Enabling) activity() uint64 {
	m := e.coll.Maps[codegen.GlobalsMap]
	val := make([]byte, m.ValueSize())
	if err := m.Lookup(uint32(0), val); err != nil {
		return codegen.Draining
	}
	return binary.NativeEndian.Uint64(val[codegen.GlActivity:])
}

// global reads one u64 of the globals value (0 if it cannot).
func (e *Enabling) global(off int) uint64 {
	m := e.coll.Maps[codegen.GlobalsMap]
	val := make([]byte, m.ValueSize())
	if err := m.Lookup(uint32(0), val); err != nil {
		return 0
	}
	return binary.NativeEndian.Uint64(val[off:])
}

// ProgramIDs returns the kernel's IDs of the enabling's programs.
func (e *Enabling) ProgramIDs() []ebpf.ProgramID {
	var ids []ebpf.ProgramID
	for _, p := range e.progs {
		if info, err := p.Info(); err == nil {
			if id, ok := info.ID(); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// attach attaches every probe but BEGIN, END and ERROR (which are fired,
// not attached). The programs stay gated off until BEGIN has run.
//
// A user-space probe whose instruction the kernel refuses to probe is
// skipped with a warning, so that a glob over a library's functions still
// traces the rest.
//
// Every probe is tried, so that what the kernel refuses is told at once,
// all of it: refusals cost the kernel nothing, and the attempt takes about
// half a millisecond a probe. Unless -x skiprefused, one refusal fails the
// enabling.
//
// Once every probe is attached, the session leaves the tracefs gate
// (tracefs.Busy), which kept releasers from closing perf events while it
// read formats and opened events.
func (e *Enabling) attach() error {
	defer tracefs.Idle()
	var refused refusals
	for i, p := range e.Prog.Code.Programs {
		if p.Probe.Provider == "dtrace" || p.TailOf != "" {
			continue
		}
		refused.tried++
		l, err := e.reg.AttachWith(p.Probe, e.progs[i], providers.AttachOptions{OnCPU: e.s.opts.OnCPU, CPU: e.s.opts.CPU})
		if errors.Is(err, providers.ErrUnprobeable) {
			e.s.warnf("warning: %s not enabled: %v", p.Probe, err)
			continue
		}
		if err != nil {
			refused.add(p, err)
			continue
		}
		e.links = append(e.links, l)
	}
	switch {
	case len(refused.probes) == 0:
	case !e.s.opts.SkipRefused:
		return refused.error()
	default:
		e.s.warnf("warning: %s", refused.warning())
	}
	return nil
}

// fire runs the clauses of dtrace:::name, if the program has any.
func (e *Enabling) fire(name string, args ...uint64) error {
	for i, p := range e.Prog.Code.Programs {
		if p.Probe.Provider == "dtrace" && p.Probe.Name == name {
			cpu := -1
			if e.s.opts.OnCPU {
				cpu = e.s.opts.CPU
			}
			return providers.FireOn(e.progs[i], cpu, args...)
		}
	}
	return nil
}

// begin fires BEGIN, opens the gate unless BEGIN called exit(), prints
// what BEGIN recorded, and starts the consumer. BEGIN's records are read
// before the gate opens and handled after, as dtrace enables every probe
// before it consumes them: what a system( ) in BEGIN runs is traced.
func (e *Enabling) begin() error {
	if err := e.fire("BEGIN"); err != nil {
		return err
	}
	var recs [][]byte
	var rec ringbuf.Record
	e.rd.SetDeadline(time.Now())
	for e.rd.ReadInto(&rec) == nil {
		recs = append(recs, append([]byte(nil), rec.RawSample...))
	}
	if e.activity() == codegen.Inactive {
		if err := e.setActivity(codegen.Active); err != nil {
			return err
		}
	}
	for _, r := range recs {
		e.handle(r)
	}
	e.reportDrops()
	e.stopRead = make(chan struct{})
	if e.wakesOnly() {
		e.wake = newRingWait(e.coll.Maps[codegen.EventsMap])
	}
	e.consumer.Add(1)
	go e.consume()
	return nil
}

// polled reports whether a probe's record may come without waking the
// reader: BEGIN's and END's are read when they are fired.
func (e *Enabling) polled() bool {
	for _, r := range e.Prog.Code.Records {
		if !r.Wakes() && !(r.Probe.Provider == "dtrace" && (r.Probe.Name == "BEGIN" || r.Probe.Name == "END")) {
			return true
		}
	}
	return false
}

// wakesOnly says the consumer is woken for every record that can come
// (exit, faults, unwind notices) and nothing asks it to read on time
// (-x aggrate): it need not poll.
func (e *Enabling) wakesOnly() bool { return !e.polled() && e.s.opts.AggRate == 0 }

// stopWake interrupts the consumer's wait, once stopRead is closed.
func (e *Enabling) stopWake() {
	if e.wake != nil {
		e.wake.interrupt()
	}
}

// consume reads records until stopped, waking every switch interval:
// records are written without wake-ups, so polling is what delivers them.
func (e *Enabling) consume() {
	defer e.consumer.Done()
	wait := e.s.opts.SwitchRate
	if e.wakesOnly() {
		// Only records that wake the reader (exit, faults, unwind
		// notices) can come, and no -x aggrate asks for reads on time:
		// dtrace's own default rate reports drops in time, and a
		// profile or an agent whose programs only aggregate stays idle.
		wait = max(wait, time.Second)
	}
	var rec ringbuf.Record
	for {
		select {
		case <-e.stopRead:
			return
		default:
		}
		if e.wake != nil {
			e.wake.wait(time.Now().Add(wait), e.stopRead, func() bool { return e.rd.AvailableBytes() > 0 })
			e.rd.SetDeadline(time.Now())
		} else {
			e.rd.SetDeadline(time.Now().Add(wait))
		}
		e.readAggRate(0)
		for {
			err := e.rd.ReadInto(&rec)
			if err != nil {
				break
			}
			e.readAggRate(e.s.opts.SwitchRate)
			e.handle(rec.RawSample)
		}
		e.reportDrops()
	}
}

// readAggRate reads the aggregations when -x aggrate's period has passed
// since they were last read, as dtrace's consumer does when it wakes, at
// most every switchrate. A record is read as it comes, not at the next
// wake: ahead is how far that wake may be, and a read due by then is
// made now, before the record is handled, as dtrace would have.
func (e *Enabling) readAggRate(ahead time.Duration) {
	r := e.s.opts.AggRate
	if r <= 0 {
		return
	}
	if e.ratedAt.IsZero() {
		// The first read is at the consumer's first wake; printa( )
		// before it prints the aggregations as they are.
		e.ratedAt = time.Now().Add(e.s.opts.SwitchRate - r)
	}
	if time.Since(e.ratedAt)+ahead < r {
		return
	}
	if snap, err := e.Snapshot(); err == nil {
		e.rated, e.ratedAt = snap, time.Now()
	}
}

// reading says tracing runs: not yet disabled or closed.
func (e *Enabling) reading() bool {
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	return !e.disabled && !e.closed
}

// drain handles every record already in the ring buffer.
func (e *Enabling) drain() {
	var rec ringbuf.Record
	e.rd.SetDeadline(time.Now())
	for {
		if err := e.rd.ReadInto(&rec); err != nil {
			break
		}
		e.handle(rec.RawSample)
	}
	e.reportDrops()
}

// Disable gates every probe off, fires END, prints what remains, and keeps
// the last aggregation values readable. The kernel objects stay until
// Close.
func (e *Enabling) Disable() error {
	e.stateMu.Lock()
	if e.disabled || e.closed {
		e.stateMu.Unlock()
		return nil
	}
	e.disabled = true
	e.stateMu.Unlock()
	if e.stopRead != nil {
		close(e.stopRead)
		e.rd.Flush()
		e.stopWake()
		e.consumer.Wait()
	}
	if err := e.setActivity(codegen.Draining); err != nil {
		return err
	}
	e.drain()
	err := e.fire("END")
	e.drain()
	if snap, serr := e.Snapshot(); serr == nil {
		e.last = snap
	}
	return err
}

// Close releases every kernel object of the enabling.
func (e *Enabling) Close() error {
	e.stateMu.Lock()
	if e.closed {
		e.stateMu.Unlock()
		return nil
	}
	e.closed = true
	e.stateMu.Unlock()
	if e.stopRead != nil && !e.disabled {
		close(e.stopRead)
		e.rd.Flush()
		e.stopWake()
		e.consumer.Wait()
	}
	err := e.closeLinks()
	e.unwind.close()
	e.s.closedCuts.Add(e.readCuts())
	if e.rd != nil {
		e.rd.Close()
	}
	if e.wake != nil {
		e.wake.close()
	}
	if e.coll != nil {
		e.coll.Close()
	}
	return err
}

// closeLinks releases the links. A perf event's link (providers.Detacher)
// waits for a tasks-trace RCU grace period when closed, outside any lock,
// so those are closed all at once and their waits overlap; the events
// themselves are then released one after another under a global mutex,
// a grace period each, so where the session takes them (Options.Release)
// they are handed over instead. Other links (raw tracepoints) are closed
// one after another, the last made first: their release is serialised
// under the tracepoints' mutex, and 1,585 took 0.57 s one by one, 0.79 s
// on two threads and 1.16 s on 64.
func (e *Enabling) closeLinks() error {
	var detachers []providers.Detacher
	var errs []error
	for i := len(e.links) - 1; i >= 0; i-- {
		if d, ok := e.links[i].(providers.Detacher); ok {
			detachers = append(detachers, d)
			continue
		}
		errs = append(errs, e.links[i].Close())
	}
	release := e.s.opts.Release
	slow := make([]*os.File, len(detachers))
	derrs := make([]error, len(detachers))
	var wg sync.WaitGroup
	for i, d := range detachers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if release != nil {
				slow[i], derrs[i] = d.Detach()
			} else {
				derrs[i] = d.Close()
			}
		}()
	}
	wg.Wait()
	if release != nil && len(slow) > 0 {
		release(slow)
	}
	return errors.Join(append(errs, derrs...)...)
}

// readPerCPU reads the per-CPU u64 at off in the state map.
func (e *Enabling) readPerCPU(off int) []uint64 {
	m := e.coll.Maps[codegen.StateMap]
	var vals [][]byte
	if err := m.Lookup(uint32(0), &vals); err != nil {
		return nil
	}
	out := make([]uint64, len(vals))
	for i, v := range vals {
		out[i] = binary.NativeEndian.Uint64(v[off:])
	}
	return out
}

// reportDrops reports drops counted since the last report, per CPU, in
// DTrace's words.
func (e *Enabling) reportDrops() {
	report := func(now []uint64, last *[]uint64, aggregation bool) {
		if len(*last) < len(now) {
			*last = append(*last, make([]uint64, len(now)-len(*last))...)
		}
		for cpu, n := range now {
			if d := n - (*last)[cpu]; d > 0 {
				text := e.s.opts.Prog + ": " + output.Drops(d, cpu, aggregation) + "\n"
				e.s.mu.Lock()
				e.s.deliver(&Event{Kind: KindDrop, CPU: cpu, Count: d, Text: text, Stderr: true})
				e.s.mu.Unlock()
				(*last)[cpu] = n
			}
		}
	}
	report(e.readPerCPU(codegen.StDrops), &e.drops, false)
	report(e.readPerCPU(codegen.StAggDrops), &e.aggDrops, true)
	failedNow := e.global(codegen.GlSpecFailed)
	e.stateMu.Lock()
	spec, failed := e.specDrops, failedNow-e.specFailed
	e.specDrops, e.specFailed = 0, failedNow
	e.stateMu.Unlock()
	for _, d := range []struct {
		n    uint64
		what string
	}{{spec, "speculative drop%s"}, {failed, "failed speculation%s (no speculative buffer available)"}} {
		if d.n == 0 {
			continue
		}
		text := fmt.Sprintf("%s: %d "+d.what+"\n", e.s.opts.Prog, d.n, plural(d.n))
		e.s.mu.Lock()
		e.s.deliver(&Event{Kind: KindDrop, Count: d.n, Text: text, Stderr: true})
		e.s.mu.Unlock()
	}
	// Dynamic variable drops are reported for all CPUs at once.
	var dyn uint64
	for _, n := range e.readPerCPU(codegen.StDynDrops) {
		dyn += n
	}
	if d := dyn - e.dynDrops; d > 0 {
		e.dynDrops = dyn
		text := fmt.Sprintf("%s: %d dynamic variable drop%s\n", e.s.opts.Prog, d, plural(d))
		e.s.mu.Lock()
		e.s.deliver(&Event{Kind: KindDrop, Count: d, Text: text, Stderr: true})
		e.s.mu.Unlock()
	}
}

func plural(n uint64) string {
	if n == 1 {
		return ""
	}
	return "s"
}
