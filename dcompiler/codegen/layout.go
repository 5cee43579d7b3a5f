package codegen

import (
	"github.com/dstar-trace/dstar/dcompiler/check"
	"github.com/dstar-trace/dstar/dcompiler/printf"
	"github.com/dstar-trace/dstar/dcompiler/quant"
	"github.com/dstar-trace/dstar/dcompiler/types"
	"github.com/dstar-trace/dstar/providers"
)

// Map names the generated code refers to.
const (
	StateMap   = "state"   // per-CPU machine state (arguments, counters, scratch)
	GlobalsMap = "globals" // one value: activity, clock offset, global variables
	EventsMap  = "events"  // ring buffer of output records
	// CPUInfoMap is a per-CPU array of one cpuinfo_t each (sched.d), which
	// curcpu points into; user space fills it before tracing starts. Only
	// a program that uses curcpu has it.
	CPUInfoMap = "cpuinfo"
)

// CPUInfoSize is the size of sched.d's cpuinfo_t: four 32-bit IDs.
const CPUInfoSize = 16

// AggMap is the name of aggregation id's map.
func AggMap(id int) string { return "agg_" + itoa(id) }

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// The machine state, one per CPU.
const (
	StArgs        = 0  // arg0..arg9
	StErrno       = 80 // errno of the current syscall return
	StDrops       = 88 // ring buffer reservations that failed
	StAggDrops    = 96 // aggregation updates that found the map full
	StFaultCode   = 104
	StFaultAddr   = 112
	StFaultInsnPC = 120 // instruction index of the faulting check
	StDynDrops    = 128 // associative array and thread-local stores that found the map full
	stSelf        = 136 // the state's own address, stored to be read back as a number
	stLocals      = 144 // clause-locals, then scratch for keys, values and strings
)

// The globals value.
const (
	GlActivity   = 0  // Inactive, Active or Draining
	GlWallOffset = 8  // CLOCK_REALTIME - CLOCK_MONOTONIC, in ns
	GlSpecFailed = 16 // speculation( ) calls that found no free buffer
	GlSpecs      = 24 // one u64 per speculation buffer: 1 while in use

)

// Activity states, as DTrace names them.
const (
	Inactive = 0
	Active   = 1
	Draining = 2
)

// Record header: every ring-buffer record starts with these.
const (
	HdrEPID      = 0  // u32 enabled-probe id, or FaultEPID
	HdrCPU       = 4  // u32
	HdrTimestamp = 8  // u64
	HdrPID       = 16 // u32 process id of the thread that fired
	HdrSpec      = 20 // u32: 0, or SpecMark | the speculation the record belongs to
	HdrSize      = 24
)

// SpecMark marks a speculative record.
const SpecMark = -0x80000000

// FaultEPID marks a fault record. Its body is FaultBody.
const FaultEPID = 0xffffffff

// Fault record body offsets (after the header).
const (
	FltEPID   = HdrSize + 0  // u64 enabled-probe id that faulted
	FltCode   = HdrSize + 8  // u64 DTrace fault code
	FltInsnPC = HdrSize + 16 // u64 instruction index of the faulting check
	FltAddr   = HdrSize + 24 // u64 address involved
	FltSize   = HdrSize + 32
)

// DTrace's fault codes.
const (
	FaultBadAddr   = 1
	FaultIllOp     = 3
	FaultDivZero   = 4
	FaultNoScratch = 5
	FaultBadSize   = 10
	FaultBadIndex  = 11 // Oracle's: an array index out of bounds
)

// Datum is one value in a record.
type Datum struct {
	Off  int
	Size int
	Type *types.Type
}

// ActionKind is a data-recording action.
type ActionKind int

const (
	ActPrintf ActionKind = iota
	ActTrace
	ActExit
	// Aggregation actions, carried out by the consumer when it reads the
	// record: Aggs names the aggregations, Args holds trunc's and
	// normalize's number.
	ActPrinta
	ActClear
	ActTrunc
	ActNormalize
	ActDenormalize
	// Speculations: the consumer keeps speculative records until the
	// speculation's commit (prints them) or discard (drops them).
	ActCommit
	ActDiscard
	ActSpeculate // marks the record; nothing to print
	ActSystem    // the consumer runs the formatted command
	ActTraceMem  // Args[0] holds the bytes read
	ActPrint     // Args[0] holds the address, Args[1] the bytes there, typed
	ActStack     // Args[0] holds a stack (types.StackT's layout)
	ActSym       // Args[0] holds an address to print by name (types.SymT's layout)
	// Output actions the consumer carries out: Args hold their strings.
	ActSetopt
	ActFreopen
	ActFtruncate
)

// aggActions maps the D names of the aggregation actions to their kinds.
var aggActions = map[string]ActionKind{
	"printa": ActPrinta, "clear": ActClear, "trunc": ActTrunc,
	"normalize": ActNormalize, "denormalize": ActDenormalize,
}

// Action is a recording action and where its data sits in the record.
type Action struct {
	Kind   ActionKind
	Index  int // 1-based position among the clause's actions
	Format *printf.Format
	Args   []Datum
	Aggs   []string // aggregation names, for the aggregation actions
}

// Record is the layout of the records one enabled probe (a clause on a
// probe) writes.
type Record struct {
	EPID    uint32
	Probe   *providers.Probe
	Clause  int // the statement number, as DTrace's dt_clause_N
	Size    int
	Actions []Action
}

// AggLayout says how an aggregation is stored.
type AggLayout struct {
	*check.Agg
	Map       string
	Keys      []Datum // offsets within the key
	KeySize   int
	ValueSize int  // value[0] is the number of updates, then the function's data
	Array     bool // no keys: a one-entry per-CPU array
	Buckets   int  // quantize, lquantize, llquantize: buckets after value[0], then the values' weighted sum
}

// BucketValue returns how a distribution aggregation labels its buckets:
// the value a bucket counts, by index.
func (l *AggLayout) BucketValue() func(int) int64 {
	switch l.Func {
	case "lquantize":
		return l.Lquantize().Value
	case "llquantize":
		return l.Llquantize().Value
	}
	return quant.QuantizeBucketValue
}

// BucketOf returns how a distribution aggregation sorts values into
// buckets: the index of the bucket that counts a value.
func (l *AggLayout) BucketOf() func(int64) int {
	switch l.Func {
	case "lquantize":
		return l.Lquantize().Bucket
	case "llquantize":
		return l.Llquantize().Bucket
	}
	return quant.QuantizeBucket
}

// Lquantize returns an lquantize aggregation's bucket layout.
func (l *AggLayout) Lquantize() quant.Lquantize {
	if l.Func != "lquantize" {
		return quant.Lquantize{}
	}
	base, limit, step := l.Params[0], l.Params[1], l.Params[2]
	return quant.Lquantize{Base: int32(base), Step: uint16(step), Levels: uint16((limit - base) / step)}
}

// Llquantize returns an llquantize aggregation's bucket layout.
func (l *AggLayout) Llquantize() quant.Llquantize {
	if l.Func != "llquantize" {
		return quant.Llquantize{}
	}
	p := l.Params
	return quant.Llquantize{Factor: uint16(p[0]), Lmag: uint16(p[1]), Hmag: uint16(p[2]), Steps: uint16(p[3])}
}

// Var is a variable's place: Off in the globals value (global scalars) or
// in the state (clause-locals), or a hash map (associative arrays and
// thread-locals, keyed by the tuple or by thread id).
type Var struct {
	*check.Var
	Off     int
	Map     string
	Keys    []Datum
	KeySize int
}
