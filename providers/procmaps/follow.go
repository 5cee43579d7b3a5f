package procmaps

// This file follows a process's new mappings as the kernel makes them,
// through perf's side-band mmap records (what perf record uses): a
// program that runs for a millisecond has loaded its libraries and exited
// before anyone polling /proc/PID/maps would see them, but each mmap of
// an executable file is recorded, with its address, length, file offset
// and path, at the moment it happens, and outlives the process. Unlike
// holding the process at its exit with ptrace, this does not change how
// the process runs (a ptraced process no longer discards ignored signals).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Follower collects the executable mappings a process (and the processes
// it forks) makes from the moment it is created. It is safe for
// concurrent use.
type Follower struct {
	mu    sync.Mutex
	rings []*mmapRing
}

// mmapRing is one CPU's perf event and its ring buffer.
type mmapRing struct {
	fd   int
	mem  []byte // the metadata page, then the data pages
	data []byte
}

// ringPages is each CPU's buffer, in pages (a power of two): a mapping's
// record is some 100 bytes, so this holds hundreds of mappings between
// two drains.
const ringPages = 16

// Follow starts following the mappings process pid makes from now on.
func Follow(pid int) (*Follower, error) {
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, err
	}
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_DUMMY,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		// mmap2: executable mappings with inode; inherit: the
		// process's children too.
		Bits: unix.PerfBitMmap | unix.PerfBitMmap2 | unix.PerfBitInherit,
	}
	f := &Follower{}
	page := os.Getpagesize()
	for _, cpu := range cpus {
		fd, err := unix.PerfEventOpen(&attr, pid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("following the mappings of process %d: perf_event_open: %w", pid, err)
		}
		mem, err := unix.Mmap(fd, 0, (1+ringPages)*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			unix.Close(fd)
			f.Close()
			return nil, fmt.Errorf("following the mappings of process %d: mmap: %w", pid, err)
		}
		f.rings = append(f.rings, &mmapRing{fd: fd, mem: mem, data: mem[page:]})
	}
	return f, nil
}

// Read returns the mappings recorded since the last Read, each with the
// process that made it, in the order each CPU recorded them.
func (f *Follower) Read() []PidMapping {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []PidMapping
	for _, r := range f.rings {
		out = r.read(out)
	}
	return out
}

// Close stops following and releases the kernel's buffers.
func (f *Follower) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rings {
		unix.Munmap(r.mem)
		unix.Close(r.fd)
	}
	f.rings = nil
}

// PidMapping is a mapping and the process that made it.
type PidMapping struct {
	Pid int
	Mapping
}

// perf_event_mmap_page: where data_head and data_tail are.
const (
	dataHeadOffset = 1024
	dataTailOffset = 1032
)

// read appends the ring's new mmap2 records to out.
func (r *mmapRing) read(out []PidMapping) []PidMapping {
	head := atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.mem[dataHeadOffset])))
	tailp := (*uint64)(unsafe.Pointer(&r.mem[dataTailOffset]))
	tail := atomic.LoadUint64(tailp)
	size := uint64(len(r.data))
	var rec []byte
	for tail+8 <= head {
		hdr := r.copy(nil, tail, 8, size)
		typ, n := binary.NativeEndian.Uint32(hdr), uint64(binary.NativeEndian.Uint16(hdr[6:]))
		if n < 8 || tail+n > head {
			break
		}
		if typ == unix.PERF_RECORD_MMAP2 {
			rec = r.copy(rec[:0], tail, n, size)
			if m, ok := parseMmap2(rec[8:]); ok {
				out = append(out, m)
			}
		}
		tail += n
	}
	atomic.StoreUint64(tailp, tail)
	return out
}

// copy appends n bytes of the ring from position pos to b, unwrapping.
func (r *mmapRing) copy(b []byte, pos, n, size uint64) []byte {
	for n > 0 {
		i := pos % size
		k := min(n, size-i)
		b = append(b, r.data[i:i+k]...)
		pos, n = pos+k, n-k
	}
	return b
}

// parseMmap2 parses PERF_RECORD_MMAP2's body: pid, tid, addr, len, pgoff,
// maj, min, ino, ino_generation, prot, flags, filename.
func parseMmap2(b []byte) (PidMapping, bool) {
	const fixed = 4 + 4 + 8 + 8 + 8 + 4 + 4 + 8 + 8 + 4 + 4
	if len(b) < fixed {
		return PidMapping{}, false
	}
	ne := binary.NativeEndian
	addr, length := ne.Uint64(b[8:]), ne.Uint64(b[16:])
	name := b[fixed:]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	prot := ne.Uint32(b[56:])
	perms := []byte("---p")
	if prot&unix.PROT_READ != 0 {
		perms[0] = 'r'
	}
	if prot&unix.PROT_WRITE != 0 {
		perms[1] = 'w'
	}
	if prot&unix.PROT_EXEC != 0 {
		perms[2] = 'x'
	}
	m := Mapping{
		Start: addr, End: addr + length, Perms: string(perms), Offset: ne.Uint64(b[24:]),
		Dev:   fmt.Sprintf("%02x:%02x", ne.Uint32(b[32:]), ne.Uint32(b[36:])),
		Inode: ne.Uint64(b[40:]), Path: string(name),
	}
	if p, ok := strings.CutSuffix(m.Path, " (deleted)"); ok {
		m.Path, m.Deleted = p, true
	}
	return PidMapping{Pid: int(ne.Uint32(b)), Mapping: m}, true
}

// onlineCPUs lists the online CPUs (/sys/devices/system/cpu/online:
// "0-3,6").
func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	var cpus []int
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		z := a
		var err2 error
		if isRange {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("online CPUs %q: malformed", b)
		}
		for c := a; c <= z; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
