package unwind

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"slices"
	"sort"
	"sync"
	"syscall"

	"github.com/cilium/ebpf"

	"github.com/dstar-trace/dstar/providers/cfi"
	"github.com/dstar-trace/dstar/providers/procmaps"
	"github.com/dstar-trace/dstar/providers/vdso"
)

// Tables fills the walker's maps: the rows of every file a known process
// maps, loaded once however many processes map it (files are told apart
// by device, inode, size and modification time), and each process's
// mappings. A file's rows are released when the last process mapping it
// is removed.
type Tables struct {
	mappings, rows *ebpf.Map

	mu    sync.Mutex
	files map[fileKey]*file
	procs map[uint32][]procMapping
	free  []span // free row ranges, sorted
}

// fileKey identifies one version of a file.
type fileKey struct {
	dev, ino   uint64
	size, mtim int64
}

// file is a file whose rows are loaded (or that has none: count 0).
type file struct {
	first, count uint32
	refs         int
	loads        []segment
}

// segment is an executable PT_LOAD: where a range of the file's bytes
// is in its address space.
type segment struct{ off, vaddr, size uint64 }

// address is the file's address of file offset off, the start of an
// executable mapping: page-aligned, so it may lie before the segment's
// first byte, in the page it shares with the segment before (rustc's and
// lld's layouts put the text right after the read-only data, not at a
// page of its own).
func (f *file) address(off uint64) (uint64, bool) {
	page := uint64(os.Getpagesize())
	for _, s := range f.loads {
		if s.off&^(page-1) <= off && off < s.off+s.size {
			return off - s.off + s.vaddr, true
		}
	}
	return 0, false
}

// procMapping is one of a process's entries in Mappings.
type procMapping struct {
	keys [][]byte
	file fileKey
}

type span struct{ first, count uint32 }

// NewTables returns a Tables filling the maps mappings and rows (made
// from MapSpecs).
func NewTables(mappings, rows *ebpf.Map) *Tables {
	return &Tables{mappings: mappings, rows: rows, files: map[fileKey]*file{},
		procs: map[uint32][]procMapping{}, free: []span{{0, rows.MaxEntries()}}}
}

// AddProcess loads the tables of the files process pid maps now, and
// reports whether it maps code it did not when last read. The mappings
// are read under the tables' lock, so that of two calls for one process
// the later always enters the newer mappings.
func (t *Tables) AddProcess(pid int) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms, err := procmaps.Read(pid)
	if err != nil {
		return false, err
	}
	root := fmt.Sprintf("/proc/%d/root", pid)
	return t.addMappings(uint32(pid), ms, func(m procmaps.Mapping) string {
		if m.Deleted {
			return m.MapFile(pid)
		}
		return root + m.Path
	})
}

// AddMappings loads the tables of the executable mappings ms of process
// pid (replacing what it had), its files' paths under root ("" for the
// paths as they are). A file that cannot be read is left out: its code
// gets no mapping, and walks through it end with a marker. What the
// process had is dropped after the new is entered, so files it still maps
// are not loaded again.
func (t *Tables) AddMappings(pid uint32, ms []procmaps.Mapping, root string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, err := t.addMappings(pid, ms, func(m procmaps.Mapping) string { return root + m.Path })
	return err
}

// addMappings enters ms for pid, their files opened at path(m),
// reporting whether any of their keys is new.
func (t *Tables) addMappings(pid uint32, ms []procmaps.Mapping, path func(procmaps.Mapping) string) (bool, error) {
	var errs []error
	var added []procMapping
	keys := map[string]bool{}
	for _, m := range t.order(ms, path) {
		pm, err := t.addMapping(pid, m.Mapping, m.path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, k := range pm.keys {
			keys[string(k)] = true
		}
		added = append(added, pm)
	}
	had := map[string]bool{}
	for _, pm := range t.procs[pid] {
		for _, k := range pm.keys {
			had[string(k)] = true
		}
	}
	grew := false
	for k := range keys {
		grew = grew || !had[k]
	}
	for _, pm := range t.procs[pid] {
		var gone [][]byte
		for _, k := range pm.keys {
			if !keys[string(k)] {
				gone = append(gone, k)
			}
		}
		pm.keys = gone
		t.undo(pm)
	}
	t.procs[pid] = added
	return grew, errors.Join(errs...)
}

// RemoveProcess forgets process pid, releasing the rows of files no
// other process maps.
func (t *Tables) RemoveProcess(pid uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.removeLocked(pid)
}

// Known reports whether process pid's mappings are loaded.
func (t *Tables) Known(pid uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.procs[pid]
	return ok
}

// RowsUsed returns how many rows are loaded.
func (t *Tables) RowsUsed() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, f := range t.files {
		n += int(f.count)
	}
	return n
}

func (t *Tables) removeLocked(pid uint32) {
	for _, pm := range t.procs[pid] {
		t.undo(pm)
	}
	delete(t.procs, pid)
}

// undo removes a mapping's entries and its hold on its file's rows.
func (t *Tables) undo(pm procMapping) {
	for _, k := range pm.keys {
		t.mappings.Delete(k)
	}
	f := t.files[pm.file]
	if f.refs--; f.refs == 0 {
		delete(t.files, pm.file)
		if f.count > 0 {
			t.release(span{f.first, f.count})
		}
	}
}

// fileMapping is a mapping with the path of its file.
type fileMapping struct {
	procmaps.Mapping
	path string
}

// order returns the executable file mappings of ms (and the vDSO's) in
// the order to enter them: first those whose files are loaded (entered
// at once), then the others smallest first, so that walks find as much
// code as they can as soon as they can while a starting program's large
// files load.
func (t *Tables) order(ms []procmaps.Mapping, path func(procmaps.Mapping) string) []fileMapping {
	type cand struct {
		m      fileMapping
		loaded bool
		size   int64
	}
	var cs []cand
	for _, m := range ms {
		if !m.Exec() {
			continue
		}
		c := cand{m: fileMapping{m, path(m)}}
		switch {
		case m.IsFile():
		case m.IsVDSO():
			var ok bool
			if c.m.path, ok = vdso.Path(m.End - m.Start); !ok {
				continue
			}
		default:
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(c.m.path, &st) == nil {
			_, c.loaded = t.files[fileKey{uint64(st.Dev), st.Ino, st.Size, st.Mtim.Nano()}]
			c.size = st.Size
		}
		cs = append(cs, c)
	}
	slices.SortStableFunc(cs, func(a, b cand) int {
		if a.loaded != b.loaded {
			if a.loaded {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.size, b.size)
	})
	out := make([]fileMapping, len(cs))
	for i, c := range cs {
		out[i] = c.m
	}
	return out
}

// addMapping loads m's file (if not yet) and enters m's range.
func (t *Tables) addMapping(pid uint32, m procmaps.Mapping, path string) (procMapping, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return procMapping{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	key := fileKey{uint64(st.Dev), st.Ino, st.Size, st.Mtim.Nano()}
	f, ok := t.files[key]
	if !ok {
		var err error
		if f, err = t.load(path); err != nil {
			return procMapping{}, err
		}
		t.files[key] = f
	}
	f.refs++
	pm := procMapping{file: key}
	vaddr, ok := f.address(m.Offset)
	if !ok {
		t.undo(pm)
		return procMapping{}, fmt.Errorf("%s: file offset %#x is in no loadable segment", path, m.Offset)
	}
	value := make([]byte, valueSize)
	binary.LittleEndian.PutUint64(value, m.Start-vaddr)
	binary.LittleEndian.PutUint32(value[8:], f.first)
	binary.LittleEndian.PutUint32(value[12:], f.count)
	for _, p := range prefixes(m.Start, m.End) {
		k := mappingKey(pid, p.addr, p.bits)
		if err := t.mappings.Put(k, value); err != nil {
			t.undo(pm)
			return procMapping{}, fmt.Errorf("%s: entering its mapping: %w", path, err)
		}
		pm.keys = append(pm.keys, k)
	}
	return pm, nil
}

// load builds the file's table and writes its rows into free rows. A
// file without call-frame information gets none (count 0: frame
// pointers).
func (t *Tables) load(path string) (*file, error) {
	ef, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer ef.Close()
	f := &file{}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			f.loads = append(f.loads, segment{p.Off, p.Vaddr, p.Filesz})
		}
	}
	tab, err := cfi.FromELF(ef)
	if errors.Is(err, cfi.ErrNoCFI) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	n := len(tab.Rows)
	if n == 0 {
		return f, nil
	}
	if n > MaxRows {
		return nil, fmt.Errorf("%s: %d unwind rows, more than the walker searches (%d)", path, n, MaxRows)
	}
	if last := tab.Rows[n-1].PC; last > math.MaxUint32 {
		return nil, fmt.Errorf("%s: code above 4 GiB (%#x) is not supported", path, last)
	}
	s, ok := t.allocate(uint32(n))
	if !ok {
		return nil, fmt.Errorf("%s: %d unwind rows do not fit in the %d left free", path, n, t.freeRows())
	}
	if err := t.enterRows(s.first, tab.Rows); err != nil {
		t.release(s)
		return nil, fmt.Errorf("%s: loading its unwind rows: %w", path, err)
	}
	f.first, f.count = s.first, uint32(n)
	return f, nil
}

// enterRows writes rows into the rows map from index first, through its
// memory (MapSpecs makes it memory-mapped): one copy.
func (t *Tables) enterRows(first uint32, rows []cfi.Row) error {
	mem, err := t.rows.Memory()
	if err != nil {
		return err
	}
	buf := make([]byte, len(rows)*rowSize)
	for i, r := range rows {
		v := buf[i*rowSize : (i+1)*rowSize]
		binary.LittleEndian.PutUint32(v[rowPC:], uint32(r.PC))
		v[rowCFA], v[rowFP] = byte(r.CFA), byte(r.FP)
		binary.LittleEndian.PutUint32(v[rowCFAOff:], uint32(r.CFAOff))
		binary.LittleEndian.PutUint32(v[rowFPOff:], uint32(r.FPOff))
	}
	_, err = mem.WriteAt(buf, int64(first)*rowSize)
	return err
}

// allocate takes n rows from the first free range that holds them.
func (t *Tables) allocate(n uint32) (span, bool) {
	for i, f := range t.free {
		if f.count < n {
			continue
		}
		t.free[i] = span{f.first + n, f.count - n}
		if t.free[i].count == 0 {
			t.free = append(t.free[:i], t.free[i+1:]...)
		}
		return span{f.first, n}, true
	}
	return span{}, false
}

// release returns s to the free ranges, joining neighbours.
func (t *Tables) release(s span) {
	t.free = append(t.free, s)
	sort.Slice(t.free, func(i, j int) bool { return t.free[i].first < t.free[j].first })
	out := t.free[:1]
	for _, f := range t.free[1:] {
		last := &out[len(out)-1]
		if last.first+last.count == f.first {
			last.count += f.count
			continue
		}
		out = append(out, f)
	}
	t.free = out
}

func (t *Tables) freeRows() uint32 {
	var n uint32
	for _, f := range t.free {
		n += f.count
	}
	return n
}

type prefix struct {
	addr uint64
	bits int // of the address
}

// prefixes splits [lo, hi) into aligned power-of-two blocks, each an
// address prefix.
func prefixes(lo, hi uint64) []prefix {
	var out []prefix
	for lo < hi {
		size := uint(63)
		if lo != 0 {
			size = uint(bits.TrailingZeros64(lo))
		}
		for size > 0 && (hi-lo) < 1<<size {
			size--
		}
		out = append(out, prefix{lo, 64 - int(size)})
		lo += 1 << size
	}
	return out
}

// mappingKey is the Mappings key of an address prefix of pid's.
func mappingKey(pid uint32, addr uint64, addrBits int) []byte {
	k := make([]byte, 4+keyBits/8)
	binary.LittleEndian.PutUint32(k, uint32(32+addrBits))
	binary.BigEndian.PutUint32(k[4:], pid)
	binary.BigEndian.PutUint64(k[8:], addr)
	return k
}
