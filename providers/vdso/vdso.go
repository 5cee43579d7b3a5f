// Package vdso gives the kernel's virtual shared object (the code the
// kernel maps into every process, [vdso] in its maps, where
// clock_gettime and gettimeofday run) as a file that ELF readers can
// open: a memory file holding dstar's own copy. Every native process of
// one kernel maps the same image, so dstar's copy serves to unwind and to
// name frames in any of them; a mapping of another size (a 32-bit
// process's) is not it.
package vdso

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Name is how /proc/PID/maps names the mapping.
const Name = "[vdso]"

var image = sync.OnceValues(load)

// Path returns a path at which the vDSO a process maps over size bytes
// can be opened, or false when dstar has no vDSO of that size.
func Path(size uint64) (string, bool) {
	im, err := image()
	if err != nil || im.size != size {
		return "", false
	}
	return im.path, true
}

type img struct {
	path string
	size uint64
}

// load copies this process's vDSO into a memory file, which lives as long
// as the process (its descriptor is never closed).
func load() (img, error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return img{}, err
	}
	var lo, hi uint64
	for _, line := range strings.Split(string(maps), "\n") {
		if !strings.HasSuffix(line, " "+Name) {
			continue
		}
		r, _, _ := strings.Cut(line, " ")
		a, b, _ := strings.Cut(r, "-")
		lo, _ = strconv.ParseUint(a, 16, 64)
		hi, _ = strconv.ParseUint(b, 16, 64)
	}
	if hi <= lo {
		return img{}, fmt.Errorf("vdso: this process maps none")
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		return img{}, err
	}
	defer mem.Close()
	buf := make([]byte, hi-lo)
	if _, err := mem.ReadAt(buf, int64(lo)); err != nil {
		return img{}, fmt.Errorf("vdso: reading it: %w", err)
	}
	if _, err := elf.NewFile(bytes.NewReader(buf)); err != nil {
		return img{}, fmt.Errorf("vdso: %w", err)
	}
	fd, err := unix.MemfdCreate("dstar-vdso", unix.MFD_CLOEXEC)
	if err != nil {
		return img{}, err
	}
	f := os.NewFile(uintptr(fd), "vdso")
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return img{}, err
	}
	// f is kept open (and reachable) for the process's life.
	keep = f
	return img{path: "/proc/self/fd/" + strconv.Itoa(fd), size: hi - lo}, nil
}

var keep *os.File
