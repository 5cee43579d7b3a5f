package unwind

import (
	"golang.org/x/sys/unix"

	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/dstar-trace/dstar/providers/cfi"
)

// Names of the walker's maps.
const (
	MappingsMap = "ustack_mappings"
	RowsMap     = "ustack_rows"
	StopsMap    = "ustack_stops"
	PidsMap     = "ustack_pids"
)

// PidsMapCapacity bounds the processes a session's walks ask for.
var PidsMapCapacity uint32 = 1 << 13

// MaxDepth is the most frames a walk gives (as the kernel's own walker).
const MaxDepth = 127

// MaxRows bounds the rows of one file: the binary search takes
// searchSteps steps.
const (
	searchSteps = 20
	MaxRows     = 1 << searchSteps
)

// Sizes of the maps: RowsCapacity rows in all (16 bytes each: 8 MiB),
// MappingsCapacity prefixes.
var (
	RowsCapacity     uint32 = 1 << 19
	MappingsCapacity uint32 = 1 << 16
)

// The Walk record, in a map value: what a walk starts from, its state
// between frames, and the frames found.
const (
	WalkPC     = 0  // u64: the frame's PC
	WalkSP     = 8  // u64
	WalkFP     = 16 // u64
	WalkFlags  = 24 // u64: flagCaller, flagFPLost
	WalkN      = 32 // u64: frames written
	WalkPid    = 40 // u64: the process (tgid)
	WalkLimit  = 48 // u64: frames wanted (at most MaxDepth)
	WalkStop   = 56 // u64: why the walk ended (cfi.Stop)
	WalkKey    = 64 // 16 bytes: the Mappings key
	WalkBuf    = 80 // 8 bytes: what bpf_probe_read_user reads, or a Rows index
	walkFPKind = 88
	walkFPOff  = 96
	walkBias   = 104
	WalkFrames = 112 // MaxDepth u64 PCs
	WalkSize   = WalkFrames + 8*MaxDepth
)

const (
	flagCaller = 1 // the PC is a return address: look up PC-1
	flagFPLost = 2 // the frame pointer's value is unknown
)

// mappingKey is the Mappings key: a prefix length in bits over pid and
// address, both big-endian so that prefixes are of the high bits.
const (
	keyBits   = 96
	valueSize = 16 // u64 bias, u32 first row, u32 rows
)

// Row layout in Rows.
const (
	rowPC     = 0 // u32, the file's address
	rowCFA    = 4 // u8 cfi.CFAKind
	rowFP     = 5 // u8 cfi.FPKind
	rowCFAOff = 8 // s32
	rowFPOff  = 12
	rowSize   = 16
)

// userTop is the first address above user space (x86-64, 4-level pages
// and 5-level alike are below it for user PCs we can name).
const userTop = 1 << 56

// MapSpecs returns the specifications of the walker's maps.
func MapSpecs() map[string]*ebpf.MapSpec {
	return map[string]*ebpf.MapSpec{
		MappingsMap: {Name: MappingsMap, Type: ebpf.LPMTrie, KeySize: 4 + keyBits/8, ValueSize: valueSize,
			MaxEntries: MappingsCapacity, Flags: 1 /* BPF_F_NO_PREALLOC */},
		// Memory-mapped, so that a file's rows are entered with one copy
		// (BPF_F_MMAPABLE): a batch update of python's 64k rows costs
		// 40 ms, while its first walks wait.
		RowsMap:  {Name: RowsMap, Type: ebpf.Array, KeySize: 4, ValueSize: rowSize, MaxEntries: RowsCapacity, Flags: unix.BPF_F_MMAPABLE},
		StopsMap: {Name: StopsMap, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: uint32(cfi.StopDepth) + 1},
		// The processes whose mappings were asked for, with the time
		// (ktime) before which they are not asked for again: see
		// codegen's notice.
		PidsMap: {Name: PidsMap, Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: PidsMapCapacity},
	}
}

// walker emits the callback with local labels.
type walker struct {
	name  string
	insns asm.Instructions
	label string
}

func (w *walker) emit(list ...asm.Instruction) {
	for _, ins := range list {
		if w.label != "" {
			ins, w.label = ins.WithSymbol(w.label), ""
		}
		w.insns = append(w.insns, ins)
	}
}

func (w *walker) at(l string) {
	if w.label != "" {
		w.emit(asm.Ja.Label(w.l(l)))
	}
	w.label = w.l(l)
}

// l makes label l local to this callback.
func (w *walker) l(l string) string { return w.name + "_" + l }

// Callback returns the bpf_loop callback, long name(u32 i, void **ctx),
// that walks one frame per call: *ctx is the address of a Walk record in
// a map value. Run it with bpf_loop(limit+1, ...) after setting the
// record's PC, SP, FP, pid and limit and zeroing its flags and count; it
// returns 1 (stop) when the walk has ended, WalkStop saying why.
func Callback(name string) asm.Instructions {
	w := &walker{name: name, label: name}
	const rw = asm.R6 // the Walk record
	w.emit(asm.LoadMem(rw, asm.R2, 0, asm.DWord))
	// The end: a zero PC.
	w.emit(asm.LoadMem(asm.R7, rw, WalkPC, asm.DWord))
	w.emit(asm.JEq.Imm(asm.R7, 0, w.l("end")))
	w.appendFrame(asm.R7, "depth")
	w.emit(asm.LoadImm(asm.R1, userTop, asm.DWord))
	w.emit(asm.JGE.Reg(asm.R7, asm.R1, w.l("nomapping")))

	// The mapping: (pid, pc) in the trie.
	w.emit(storeImm(rw, WalkKey, keyBits, asm.Word))
	w.emit(asm.LoadMem(asm.R1, rw, WalkPid, asm.DWord))
	w.emit(asm.HostTo(asm.BE, asm.R1, asm.Word))
	w.emit(asm.StoreMem(rw, WalkKey+4, asm.R1, asm.Word))
	w.emit(asm.Mov.Reg(asm.R1, asm.R7), asm.HostTo(asm.BE, asm.R1, asm.DWord))
	w.emit(asm.StoreMem(rw, WalkKey+8, asm.R1, asm.DWord))
	w.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(MappingsMap))
	w.emit(asm.Mov.Reg(asm.R2, rw), asm.Add.Imm(asm.R2, WalkKey))
	w.emit(asm.FnMapLookupElem.Call())
	w.emit(asm.JEq.Imm(asm.R0, 0, w.l("nomapping")))
	w.emit(asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord))
	w.emit(asm.StoreMem(rw, walkBias, asm.R1, asm.DWord))
	w.emit(asm.LoadMem(asm.R8, asm.R0, 8, asm.Word))  // first row
	w.emit(asm.LoadMem(asm.R9, asm.R0, 12, asm.Word)) // rows
	// The address to look up: the file's, less one for a return address.
	w.emit(asm.Sub.Reg(asm.R7, asm.R1))
	w.emit(asm.LoadMem(asm.R1, rw, WalkFlags, asm.DWord))
	w.emit(asm.And.Imm(asm.R1, flagCaller))
	w.emit(asm.Sub.Reg(asm.R7, asm.R1))
	w.emit(asm.JEq.Imm(asm.R9, 0, w.l("fprule")))

	// The last row at or before R7 among rows [R8, R8+R9).
	w.emit(asm.Add.Reg(asm.R9, asm.R8))
	w.lookupRow(asm.R8)
	w.emit(asm.LoadMem(asm.R1, asm.R0, rowPC, asm.Word))
	w.emit(asm.JGT.Reg(asm.R1, asm.R7, w.l("norule")))
	for i := 0; i < searchSteps; i++ {
		w.emit(asm.Mov.Reg(asm.R1, asm.R9), asm.Sub.Reg(asm.R1, asm.R8))
		w.emit(asm.JLE.Imm(asm.R1, 1, w.l("found")))
		w.emit(asm.RSh.Imm(asm.R1, 1), asm.Add.Reg(asm.R1, asm.R8))
		w.emit(asm.StoreMem(rw, walkFPOff, asm.R1, asm.DWord)) // mid, across the call
		w.lookupRow(asm.R1)
		w.emit(asm.LoadMem(asm.R1, asm.R0, rowPC, asm.Word))
		w.emit(asm.LoadMem(asm.R2, rw, walkFPOff, asm.DWord))
		step := fmt.Sprintf("search%d", i)
		w.emit(asm.JGT.Reg(asm.R1, asm.R7, w.l(step+"_hi")))
		w.emit(asm.Mov.Reg(asm.R8, asm.R2), asm.Ja.Label(w.l(step)))
		w.at(step + "_hi")
		w.emit(asm.Mov.Reg(asm.R9, asm.R2))
		w.at(step)
	}
	w.emit(asm.Mov.Reg(asm.R1, asm.R9), asm.Sub.Reg(asm.R1, asm.R8))
	w.emit(asm.JGT.Imm(asm.R1, 1, w.l("norule")))
	w.at("found")
	w.lookupRow(asm.R8)
	// R7 = CFA kind, R8 = CFA offset; FP kind and offset in the record.
	w.emit(asm.LoadMem(asm.R7, asm.R0, rowCFA, asm.Byte))
	w.emit(asm.LoadMem(asm.R1, asm.R0, rowFP, asm.Byte))
	w.emit(asm.StoreMem(rw, walkFPKind, asm.R1, asm.DWord))
	w.emit(asm.LoadMem(asm.R8, asm.R0, rowCFAOff, asm.Word))
	w.emit(asm.LSh.Imm(asm.R8, 32), asm.ArSh.Imm(asm.R8, 32))
	w.emit(asm.LoadMem(asm.R1, asm.R0, rowFPOff, asm.Word))
	w.emit(asm.LSh.Imm(asm.R1, 32), asm.ArSh.Imm(asm.R1, 32))
	w.emit(asm.StoreMem(rw, walkFPOff, asm.R1, asm.DWord))
	w.emit(asm.Ja.Label(w.l("apply")))

	// A file without call-frame information: its frames by frame pointer.
	w.at("fprule")
	w.emit(asm.Mov.Imm(asm.R7, int32(cfi.CFAFromFP)), asm.Mov.Imm(asm.R8, 16))
	w.emit(storeImm(rw, walkFPKind, int64(cfi.FPAtCFA), asm.DWord))
	w.emit(storeImm(rw, walkFPOff, -16, asm.DWord))

	w.at("apply")
	// From here on the PCs are return addresses (a signal frame says
	// otherwise below).
	w.emit(asm.LoadMem(asm.R1, rw, WalkFlags, asm.DWord))
	w.emit(asm.Or.Imm(asm.R1, flagCaller))
	w.emit(asm.StoreMem(rw, WalkFlags, asm.R1, asm.DWord))
	w.emit(asm.JEq.Imm(asm.R7, int32(cfi.CFAEnd), w.l("end")))
	w.emit(asm.JEq.Imm(asm.R7, int32(cfi.CFASignal), w.l("signal")))
	w.emit(asm.JEq.Imm(asm.R7, int32(cfi.CFAFromFP), w.l("fromfp")))
	w.emit(asm.LoadMem(asm.R9, rw, WalkSP, asm.DWord))
	w.emit(asm.Add.Reg(asm.R9, asm.R8))
	w.emit(asm.JEq.Imm(asm.R7, int32(cfi.CFAFromSP), w.l("cfa")))
	w.emit(asm.JNE.Imm(asm.R7, int32(cfi.CFAPLT), w.l("norule")))
	// PLT: 8 more once the entry's push has run.
	w.emit(asm.LoadMem(asm.R1, rw, WalkPC, asm.DWord))
	w.emit(asm.And.Imm(asm.R1, 15))
	w.emit(asm.JLT.Imm(asm.R1, 11, w.l("cfa")))
	w.emit(asm.Add.Imm(asm.R9, 8))
	w.emit(asm.Ja.Label(w.l("cfa")))
	w.at("fromfp")
	w.emit(asm.LoadMem(asm.R1, rw, WalkFlags, asm.DWord))
	w.emit(asm.And.Imm(asm.R1, flagFPLost))
	w.emit(asm.JNE.Imm(asm.R1, 0, w.l("norule")))
	w.emit(asm.LoadMem(asm.R9, rw, WalkFP, asm.DWord))
	w.emit(asm.JEq.Imm(asm.R9, 0, w.l("norule")))
	w.emit(asm.Add.Reg(asm.R9, asm.R8))

	// R9 = CFA: the return address below it, the frame pointer where the
	// row says.
	w.at("cfa")
	w.read(asm.R9, -8)
	w.emit(asm.LoadMem(asm.R7, rw, WalkBuf, asm.DWord))
	w.emit(asm.LoadMem(asm.R1, rw, walkFPKind, asm.DWord))
	w.emit(asm.JEq.Imm(asm.R1, int32(cfi.FPSame), w.l("step")))
	w.emit(asm.LoadMem(asm.R2, rw, WalkFlags, asm.DWord))
	w.emit(asm.Or.Imm(asm.R2, flagFPLost))
	w.emit(asm.StoreMem(rw, WalkFlags, asm.R2, asm.DWord))
	w.emit(asm.JNE.Imm(asm.R1, int32(cfi.FPAtCFA), w.l("step")))
	w.emit(asm.LoadMem(asm.R1, rw, walkFPOff, asm.DWord))
	w.emit(asm.Add.Reg(asm.R1, asm.R9))
	w.readAt(asm.R1)
	w.emit(asm.LoadMem(asm.R1, rw, WalkBuf, asm.DWord))
	w.emit(asm.StoreMem(rw, WalkFP, asm.R1, asm.DWord))
	w.emit(asm.LoadMem(asm.R2, rw, WalkFlags, asm.DWord))
	w.emit(asm.And.Imm(asm.R2, ^flagFPLost))
	w.emit(asm.StoreMem(rw, WalkFlags, asm.R2, asm.DWord))
	w.at("step")
	w.emit(asm.StoreMem(rw, WalkPC, asm.R7, asm.DWord))
	w.emit(asm.StoreMem(rw, WalkSP, asm.R9, asm.DWord))
	w.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())

	// A signal frame: the interrupted registers are in the ucontext at
	// SP: SP at SP+off, the PC after it, FP at SP+fpoff.
	w.at("signal")
	w.emit(asm.LoadMem(asm.R9, rw, WalkSP, asm.DWord))
	w.emit(asm.Add.Reg(asm.R9, asm.R8))
	w.read(asm.R9, 8)
	w.emit(asm.LoadMem(asm.R7, rw, WalkBuf, asm.DWord))
	w.emit(asm.LoadMem(asm.R1, rw, WalkSP, asm.DWord))
	w.emit(asm.LoadMem(asm.R2, rw, walkFPOff, asm.DWord))
	w.emit(asm.Add.Reg(asm.R1, asm.R2))
	w.readAt(asm.R1)
	w.emit(asm.LoadMem(asm.R1, rw, WalkBuf, asm.DWord))
	w.emit(asm.StoreMem(rw, WalkFP, asm.R1, asm.DWord))
	w.read(asm.R9, 0)
	w.emit(asm.LoadMem(asm.R9, rw, WalkBuf, asm.DWord))
	w.emit(storeImm(rw, WalkFlags, 0, asm.DWord)) // the PC is where the signal came
	w.emit(asm.Ja.Label(w.l("step")))

	// The ends: a clean one, or a cut one with its marker frame.
	w.stop("end", cfi.StopEnd)
	w.stop("depth", cfi.StopDepth)
	w.stop("nomapping", cfi.StopNoMapping)
	w.stop("norule", cfi.StopNoRule)
	w.stop("unreadable", cfi.StopUnreadable)
	w.at("count")
	// Count the stop (R7 holds it) in Stops.
	w.emit(asm.StoreMem(rw, WalkBuf, asm.R7, asm.Word))
	w.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(StopsMap))
	w.emit(asm.Mov.Reg(asm.R2, rw), asm.Add.Imm(asm.R2, WalkBuf))
	w.emit(asm.FnMapLookupElem.Call())
	w.emit(asm.JEq.Imm(asm.R0, 0, w.l("out")))
	w.emit(asm.Mov.Imm(asm.R1, 1))
	w.emit(asm.StoreXAdd(asm.R0, asm.R1, asm.DWord))
	w.at("out")
	w.emit(asm.Mov.Imm(asm.R0, 1), asm.Return())

	w.insns[0] = btf.WithFuncMetadata(w.insns[0], &btf.Func{Name: name, Linkage: btf.StaticFunc, Type: &btf.FuncProto{
		Return: &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed},
		Params: []btf.FuncParam{
			{Name: "i", Type: &btf.Int{Name: "unsigned int", Size: 4}},
			{Name: "ctx", Type: &btf.Pointer{Target: &btf.Void{}}},
		},
	}})
	return w.insns
}

// stop ends the walk for reason s: records it and, for a cut stack,
// appends the marker frame when there is room.
func (w *walker) stop(l string, s cfi.Stop) {
	const rw = asm.R6
	w.at(l)
	w.emit(asm.Mov.Imm(asm.R7, int32(s)))
	w.emit(asm.StoreMem(rw, WalkStop, asm.R7, asm.DWord))
	if s == cfi.StopDepth {
		// Only a walk stopped at MaxDepth is cut short: one that
		// stopped at the frames asked for (ucaller's, ustack(5)'s)
		// is whole, and is counted as ended.
		w.emit(asm.LoadMem(asm.R1, rw, WalkLimit, asm.DWord))
		w.emit(asm.JGE.Imm(asm.R1, MaxDepth, w.l("count")))
		w.emit(asm.Mov.Imm(asm.R7, int32(cfi.StopEnd)))
	}
	if s == cfi.StopEnd || s == cfi.StopDepth {
		w.emit(asm.Ja.Label(w.l("count")))
		return
	}
	w.emit(asm.LoadImm(asm.R3, int64(cfi.Marker(s)), asm.DWord))
	w.appendFrame(asm.R3, "count")
	w.emit(asm.Ja.Label(w.l("count")))
}

// appendFrame appends the PC in pc (not R1 or R2) to the record's frames,
// or goes to full when they are as many as the walk wants (a check the
// verifier needs too).
func (w *walker) appendFrame(pc asm.Register, full string) {
	const rw = asm.R6
	w.emit(asm.LoadMem(asm.R1, rw, WalkN, asm.DWord))
	w.emit(asm.LoadMem(asm.R2, rw, WalkLimit, asm.DWord))
	w.emit(asm.JGE.Reg(asm.R1, asm.R2, w.l(full)))
	w.emit(asm.JGE.Imm(asm.R1, MaxDepth, w.l(full)))
	w.emit(asm.Mov.Reg(asm.R2, asm.R1), asm.Add.Imm(asm.R2, 1))
	w.emit(asm.StoreMem(rw, WalkN, asm.R2, asm.DWord))
	w.emit(asm.LSh.Imm(asm.R1, 3), asm.Add.Reg(asm.R1, rw))
	w.emit(asm.StoreMem(asm.R1, WalkFrames, pc, asm.DWord))
}

// lookupRow sets R0 to row idx of Rows (idx a register other than R0-R2),
// going to norule if there is none.
func (w *walker) lookupRow(idx asm.Register) {
	const rw = asm.R6
	w.emit(asm.StoreMem(rw, WalkBuf, idx, asm.Word))
	w.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(RowsMap))
	w.emit(asm.Mov.Reg(asm.R2, rw), asm.Add.Imm(asm.R2, WalkBuf))
	w.emit(asm.FnMapLookupElem.Call())
	w.emit(asm.JEq.Imm(asm.R0, 0, w.l("norule")))
}

// read reads the user word at base+off into the record's buffer, going
// to unreadable when it cannot.
func (w *walker) read(base asm.Register, off int32) {
	w.emit(asm.Mov.Reg(asm.R3, base))
	if off != 0 {
		w.emit(asm.Add.Imm(asm.R3, off))
	}
	w.readR3()
}

// readAt reads the user word at the address in addr.
func (w *walker) readAt(addr asm.Register) {
	if addr != asm.R3 {
		w.emit(asm.Mov.Reg(asm.R3, addr))
	}
	w.readR3()
}

func (w *walker) readR3() {
	const rw = asm.R6
	w.emit(asm.Mov.Reg(asm.R1, rw), asm.Add.Imm(asm.R1, WalkBuf))
	w.emit(asm.Mov.Imm(asm.R2, 8))
	w.emit(asm.FnProbeReadUser.Call())
	w.emit(asm.JNE.Imm(asm.R0, 0, w.l("unreadable")))
}

// storeImm stores an immediate: asm.StoreImm gives no valid opcode for a
// double word in cilium/ebpf v0.22.
func storeImm(dst asm.Register, off int16, value int64, size asm.Size) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(size), Dst: dst, Offset: off, Constant: value}
}
