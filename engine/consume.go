package engine

import (
	"encoding/binary"
	"math"
	"os/exec"
	"strings"

	"github.com/dstar-trace/dstar/dcompiler/codegen"
	"github.com/dstar-trace/dstar/dcompiler/ktypes"
	"github.com/dstar-trace/dstar/dcompiler/printf"
	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/engine/output"
	"github.com/dstar-trace/dstar/providers"
)

var ne = binary.NativeEndian

// handle decodes one ring-buffer record into events and delivers them.
func (e *Enabling) handle(raw []byte) {
	if len(raw) < codegen.HdrSize {
		return
	}
	epid := ne.Uint32(raw[codegen.HdrEPID:])
	cpu := int(ne.Uint32(raw[codegen.HdrCPU:]))
	ts := ne.Uint64(raw[codegen.HdrTimestamp:])
	pid := int(ne.Uint32(raw[codegen.HdrPID:]))
	if epid == codegen.FaultEPID {
		e.fault(raw, cpu, pid, ts)
		return
	}
	if epid == codegen.UnwindEPID {
		if e.unwind != nil {
			e.unwind.notice(uint32(pid))
		}
		return
	}
	rec := e.Prog.Code.Records[epid]
	if rec == nil || len(raw) < rec.Size {
		return
	}
	if spec := ne.Uint32(raw[codegen.HdrSpec:]); spec != 0 {
		e.speculate(spec&0x7fffffff, raw)
		return
	}
	s := e.s
	s.mu.Lock()
	defer s.mu.Unlock()
	// The last action whose record prints: commit( ) and discard( ) store
	// no data in DTrace, and speculate( ) only marks the record, so a
	// clause of nothing else prints no probe line (one that only
	// speculates does, once committed).
	last := -1
	for i, act := range rec.Actions {
		switch act.Kind {
		case codegen.ActCommit, codegen.ActDiscard, codegen.ActSpeculate:
		default:
			last = i
		}
	}
	silent := last < 0 && len(rec.Actions) > 0 && (len(rec.Actions) != 1 || rec.Actions[0].Kind != codegen.ActSpeculate)
	prefix := ""
	switch {
	case silent:
	case s.opts.FlowIndent:
		// dtrace(1) prints flow lines even in quiet mode.
		if !s.headerOut {
			prefix = output.FlowHeader()
			s.headerOut = true
		}
		prefix += s.flowLine(e, epid, cpu, rec.Probe)
	case !s.opts.Quiet:
		if !s.headerOut {
			prefix = output.ProbeHeader()
			s.headerOut = true
		}
		prefix += output.ProbeLine(cpu, rec.Probe.ID, rec.Probe.Function, rec.Probe.Name)
	}
	if len(rec.Actions) == 0 || last < 0 && !silent {
		// A clause with no records ends its line, out of quiet mode.
		if !s.opts.Quiet {
			prefix += "\n"
		}
		if prefix != "" {
			s.deliver(&Event{Kind: KindProbe, Probe: rec.Probe, EPID: epid, CPU: cpu, PID: pid, Timestamp: ts, Text: prefix})
		}
		return
	}
	for i, act := range rec.Actions {
		if act.Kind == codegen.ActSpeculate {
			continue // the probe line stays for the next record
		}
		vals := make([]printf.Value, len(act.Args))
		for j, d := range act.Args {
			vals[j] = datum(raw, d, !s.opts.NoInline)
		}
		ev := &Event{Probe: rec.Probe, EPID: epid, CPU: cpu, PID: pid, Timestamp: ts, Values: vals}
		var text strings.Builder
		text.WriteString(prefix)
		prefix = ""
		switch act.Kind {
		case codegen.ActPrintf:
			ev.Kind = KindPrintf
			text.WriteString(act.Format.Sprint(nameAddresses(act.Format, vals, pid)))
		case codegen.ActTrace:
			ev.Kind = KindTrace
			if d := act.Args[0]; d.Type.Kind == types.Struct || s.opts.RawBytes && d.Type.IsString() {
				// A struct's bytes, and with -x rawbytes a string's as
				// stored, as dtrace dumps them.
				text.WriteString(output.RawBytes(raw[d.Off : d.Off+min(d.Size, d.Type.Size)]))
				break
			}
			text.WriteString(output.Trace(vals[0], s.opts.Quiet))
		case codegen.ActExit:
			ev.Kind = KindExit
			ev.Status = int(int32(vals[0].Bits))
		case codegen.ActSetopt, codegen.ActFreopen, codegen.ActFtruncate:
			if act.Kind == codegen.ActFreopen {
				// The file's name, formatted.
				vals = []printf.Value{{Str: act.Format.Sprint(nameAddresses(act.Format, vals, pid))}}
			}
			if err := s.outputAction(act.Kind, vals); err != nil {
				s.deliver(&Event{Kind: KindError, Probe: rec.Probe, Text: e.libraryFault(rec, err), Stderr: true})
			}
			if text.Len() == 0 {
				continue
			}
		case codegen.ActPrint:
			ev.Kind = KindTrace
			v := act.Args[1]
			// DTrace indents the value one past the header's width.
			text.WriteString(ktypes.Print(vals[0].Bits, v.Type, raw[v.Off:v.Off+min(v.Size, s.opts.PrintSize)], len(output.ProbeHeader())))
		case codegen.ActStack:
			ev.Kind = KindTrace
			text.WriteString(output.Stack(vals[0].Frames))
		case codegen.ActSym:
			ev.Kind = KindTrace
			text.WriteString(output.Symbol(vals[0].Str))
		case codegen.ActTraceMem:
			ev.Kind = KindTrace
			d := act.Args[0]
			n := d.Size
			// tracemem(addr, size, count) prints count bytes, when that is
			// from 0 to size, as dtrace does.
			if len(vals) > 1 && vals[1].Int64() >= 0 && vals[1].Int64() < int64(n) {
				n = int(vals[1].Int64())
			}
			text.WriteString(output.RawBytes(raw[d.Off : d.Off+n]))
		case codegen.ActSystem:
			// The consumer runs the command, as dtrace(1) does, its
			// output going where dstar's does.
			ev.Kind = KindPrintf
			s.mu.Unlock()
			out := runSystem(act.Format.Sprint(nameAddresses(act.Format, vals, pid)))
			s.mu.Lock()
			text.WriteString(out)
		case codegen.ActCommit, codegen.ActDiscard:
			id := uint32(vals[0].Bits)
			s.mu.Unlock()
			e.settle(id, act.Kind == codegen.ActCommit)
			s.mu.Lock()
			if text.Len() == 0 {
				continue
			}
		default:
			ev.Kind = KindPrinta
			s.mu.Unlock()
			out, err := e.aggAction(&act, vals)
			s.mu.Lock()
			if err != nil {
				s.deliver(&Event{Kind: KindError, Probe: rec.Probe, Text: s.opts.Prog + ": " + err.Error() + "\n", Stderr: true})
			}
			text.WriteString(out)
			if act.Kind != codegen.ActPrinta && text.Len() == 0 {
				continue
			}
		}
		// Out of quiet mode each record ends its line, as dtrace(1) does.
		if !s.opts.Quiet && i == last {
			text.WriteString("\n")
		}
		ev.Text = text.String()
		s.deliver(ev)
		if act.Kind == codegen.ActExit {
			s.mu.Unlock()
			s.exited(ev.Status)
			s.mu.Lock()
		}
	}
}

// datum reads one recorded value; inline says whether user stacks show
// inlined functions.
func datum(raw []byte, d codegen.Datum, inline bool) printf.Value {
	b := raw[d.Off : d.Off+d.Size]
	if d.Type.Kind == types.Stack {
		v := printf.Stack(nil)
		v.Frames, v.PCs, v.PID = stackFrames(b, d.Type, inline)
		v.User = d.Type.User
		return v
	}
	if d.Type.Kind == types.Sym {
		return symbol(b, d.Type)
	}
	if d.Type.Kind == types.Struct && d.Type.Size < len(b) {
		b = b[:d.Type.Size] // without the record's padding
	}
	if d.Type.Kind == types.Void || d.Type.Kind == types.Struct || d.Type.Kind == types.Array || len(b) < 8 {
		return printf.Str(string(b)) // raw bytes: tracemem's, or the value print( ) shows
	}
	if d.Type.Kind == types.String {
		if i := strings.IndexByte(string(b), 0); i >= 0 {
			b = b[:i]
		}
		return printf.Str(string(b))
	}
	if d.Type.Kind == types.Float {
		// The value's bits, as the kernel or a variable holds them.
		if d.Type.Size == 4 {
			return printf.Float(float64(math.Float32frombits(uint32(ne.Uint64(b)))))
		}
		return printf.Float(math.Float64frombits(ne.Uint64(b)))
	}
	size := d.Type.Size
	if d.Type.Kind == types.Pointer {
		size = 8
	}
	return printf.Sized(ne.Uint64(b), size, d.Type.Signed)
}

// fault reports a runtime fault as DTrace does and fires ERROR.
func (e *Enabling) fault(raw []byte, cpu, pid int, ts uint64) {
	if len(raw) < codegen.FltSize {
		return
	}
	epid := ne.Uint64(raw[codegen.FltEPID:])
	code := ne.Uint64(raw[codegen.FltCode:])
	pc := ne.Uint64(raw[codegen.FltInsnPC:])
	addr := ne.Uint64(raw[codegen.FltAddr:])
	probe, clause := e.clauseOfEPID(uint32(epid))
	f := output.ProbeFault{Clause: clause, Fault: output.Fault(code), Addr: addr, PC: int(pc)}
	text := e.s.opts.Prog + ": " + output.ProbeError(probeFault(f, probe)) + "\n"
	e.s.mu.Lock()
	e.s.deliver(&Event{Kind: KindError, Probe: probe, EPID: uint32(epid), CPU: cpu, PID: pid, Timestamp: ts,
		Values: []printf.Value{printf.Uint(code), printf.Uint(addr)}, Text: text, Stderr: true})
	e.s.mu.Unlock()
	// ERROR's arguments, as Oracle's DTrace defines them: arg1 the
	// probe's ID, arg2 the clause's index, arg3 the BPF pc, arg4 the
	// fault, arg5 the address.
	var id uint64
	if probe != nil {
		id = uint64(probe.ID)
	}
	e.fire("ERROR", 0, id, uint64(clause), pc, code, addr)
}

// probeFault fills in f's probe.
func probeFault(f output.ProbeFault, p *providers.Probe) output.ProbeFault {
	if p != nil {
		f.ProbeID = uint32(p.ID)
		f.Provider, f.Module, f.Function, f.Name = p.Provider, p.Module, p.Function, p.Name
	}
	return f
}

// libraryFault words an error of an action the consumer carries out
// (setopt( ), freopen( )) as dtrace's dt_handle_liberr does.
func (e *Enabling) libraryFault(rec *codegen.Record, err error) string {
	f := output.ProbeFault{Clause: rec.Clause, Fault: output.FaultLibrary, PC: -1, Msg: err.Error()}
	return e.s.opts.Prog + ": " + output.ProbeError(probeFault(f, rec.Probe)) + "\n"
}

// clauseOfEPID finds the probe and the clause's index in the program of
// an enabled probe id, whether or not it records.
func (e *Enabling) clauseOfEPID(epid uint32) (*providers.Probe, int) {
	if rec := e.Prog.Code.Records[epid]; rec != nil {
		return rec.Probe, rec.Clause
	}
	n := uint32(1)
	for _, p := range e.Prog.Info.Probes {
		for _, stmt := range e.Prog.Info.StmtsOf[p.ID] {
			if n == epid {
				return p, stmt
			}
			n++
		}
	}
	return nil, 0
}

// aggAction carries out printa(), clear(), trunc(), normalize() and
// denormalize() as the consumer reads them, and returns what printa
// prints.
func (e *Enabling) aggAction(act *codegen.Action, vals []printf.Value) (string, error) {
	n := int64(0)
	if len(vals) > 0 {
		n = vals[0].Int64()
	}
	switch act.Kind {
	case codegen.ActClear:
		return "", e.Clear(act.Aggs[0])
	case codegen.ActTrunc:
		return "", e.Trunc(act.Aggs[0], int(n))
	case codegen.ActNormalize:
		e.setNormal(act.Aggs[0], uint64(n))
		return "", nil
	case codegen.ActDenormalize:
		e.setNormal(act.Aggs[0], 0)
		return "", nil
	}
	snap := e.rated
	if snap == nil || !e.reading() {
		var err error
		if snap, err = e.Snapshot(); err != nil {
			return "", err
		}
	}
	var aggs []*output.Aggregation
	for _, name := range act.Aggs {
		for _, a := range snap.Aggs {
			if a.Name() == name {
				aggs = append(aggs, e.output(a))
			}
		}
		e.printed[name] = true
	}
	var b strings.Builder
	if act.Format == nil {
		for _, a := range aggs {
			output.WritePrinta(&b, a)
		}
	} else {
		output.WritePrintaFormat(&b, act.Format, aggs)
	}
	return b.String(), nil
}

// speculate keeps a speculative record until its speculation is committed
// or discarded; what does not fit in specsize is dropped and reported as
// DTrace reports speculative drops.
func (e *Enabling) speculate(id uint32, raw []byte) {
	e.stateMu.Lock()
	defer e.stateMu.Unlock()
	if e.specs == nil {
		e.specs = map[uint32]*specBuf{}
	}
	if id == 0 || int(id) > e.Prog.Code.NSpec {
		return // the program drops such a clause before it records
	}
	b := e.specs[id]
	if b == nil {
		b = &specBuf{}
		e.specs[id] = b
	}
	if b.size+len(raw) > e.s.opts.SpecSize {
		e.specDrops++
		return
	}
	b.size += len(raw)
	b.records = append(b.records, append([]byte(nil), raw...))
}

// specBuf is one speculation's records, in the order they came.
type specBuf struct {
	records [][]byte
	size    int
}

// settle commits (handles as if never speculative) or discards a
// speculation's records. The program freed its buffer for speculation( )
// as it committed or discarded it.
func (e *Enabling) settle(id uint32, commit bool) {
	e.stateMu.Lock()
	b := e.specs[id]
	delete(e.specs, id)
	e.stateMu.Unlock()
	if b != nil && commit {
		for _, raw := range b.records {
			ne.PutUint32(raw[codegen.HdrSpec:], 0)
			e.handle(raw)
		}
	}
}

// runSystem runs a system() action's command with the shell and returns
// what it printed.
func runSystem(cmdline string) string {
	out, _ := exec.Command("/bin/sh", "-c", cmdline).CombinedOutput()
	return string(out)
}
