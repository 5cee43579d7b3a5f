// Package procmaps reads a process's memory mappings from /proc/PID/maps:
// which files (executable, shared libraries) are mapped where, and, for a
// process held at exec, which libraries it will map (Load). The pid and
// usdt providers use it to find a process's modules; user-stack
// symbolisation uses it to turn run-time addresses into file offsets.
package procmaps

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Mapping is one line of /proc/PID/maps.
type Mapping struct {
	Start, End uint64 // run-time addresses, End exclusive
	Perms      string // "r-xp": read, write, execute, private/shared
	Offset     uint64 // offset in the file of Start
	Dev        string // "fe:00"
	Inode      uint64 // 0 for anonymous mappings
	// Path is the mapped file, or a pseudo-path ("[heap]", "[vdso]"), or
	// "" for an anonymous mapping. A " (deleted)" suffix, which the kernel
	// adds for files removed since mapping, is cut off and Deleted set.
	Path    string
	Deleted bool
}

// Exec reports whether the mapping is executable.
func (m Mapping) Exec() bool { return len(m.Perms) > 2 && m.Perms[2] == 'x' }

// IsFile reports whether the mapping is backed by a file (not anonymous,
// not a pseudo-path such as [heap] or [vdso]).
func (m Mapping) IsFile() bool { return m.Inode != 0 && strings.HasPrefix(m.Path, "/") }

// MapFile is where process pid's mapping m opens as a file, whether or
// not its path still names it: a file deleted since it was mapped (a
// program upgraded while it runs, or run from a memfd) is read there,
// while the process lives.
func (m Mapping) MapFile(pid int) string {
	return fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.Start, m.End)
}

// IsVDSO reports whether the mapping is the kernel's virtual shared
// object (see package vdso).
func (m Mapping) IsVDSO() bool { return m.Path == "[vdso]" }

// FileOffset translates run-time address addr within m to an offset in the
// mapped file.
func (m Mapping) FileOffset(addr uint64) uint64 { return addr - m.Start + m.Offset }

// ErrNoProcess is returned (wrapped) by Read when the process does not
// exist.
var ErrNoProcess = errors.New("no such process")

// Read returns the mappings of process pid, in address order. A process
// that does not exist gives an error wrapping ErrNoProcess.
func Read(pid int) ([]Mapping, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return nil, fmt.Errorf("process %d: %w", pid, ErrNoProcess)
		}
		return nil, err
	}
	defer f.Close()
	ms, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("/proc/%d/maps: %w", pid, err)
	}
	return ms, nil
}

// Parse parses text in the format of /proc/PID/maps.
func Parse(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20) // paths can be long
	for n := 1; sc.Scan(); n++ {
		m, err := parseLine(sc.Bytes())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// parseLine parses "start-end perms offset dev inode   path".
func parseLine(line []byte) (Mapping, error) {
	var m Mapping
	var f [5]string
	rest := line
	for i := range f {
		rest = bytes.TrimLeft(rest, " ")
		j := bytes.IndexByte(rest, ' ')
		if j < 0 {
			if i < 4 {
				return m, fmt.Errorf("malformed mapping %q", line)
			}
			j = len(rest)
		}
		f[i] = string(rest[:j])
		rest = rest[j:]
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	var err [4]error
	m.Start, err[0] = strconv.ParseUint(lo, 16, 64)
	m.End, err[1] = strconv.ParseUint(hi, 16, 64)
	m.Offset, err[2] = strconv.ParseUint(f[2], 16, 64)
	m.Inode, err[3] = strconv.ParseUint(f[4], 10, 64)
	if !ok || errors.Join(err[:]...) != nil {
		return m, fmt.Errorf("malformed mapping %q", line)
	}
	m.Perms, m.Dev = f[1], f[3]
	// The path is the rest after the padding; it may contain spaces.
	m.Path = string(bytes.TrimLeft(rest, " "))
	if p, ok := strings.CutSuffix(m.Path, " (deleted)"); ok {
		m.Path, m.Deleted = p, true
	}
	return m, nil
}

// Module is one file mapped into a process, with all its mappings, or one
// the process will map (Load): then Mappings is empty.
type Module struct {
	Path     string
	Inode    uint64
	Mappings []Mapping
}

// FilePath is where the kernel and dstar can open module m of process pid:
// its path, unless that names another file here (the process lives in
// another mount namespace), in which case the path under /proc/PID/root.
func FilePath(pid int, m *Module) string {
	var st syscall.Stat_t
	if err := syscall.Stat(m.Path, &st); err == nil && st.Ino == m.Inode {
		return m.Path
	}
	return filepath.Join(fmt.Sprintf("/proc/%d/root", pid), m.Path)
}

// Name is the module's name as DTrace spells it: the file's basename
// ("libc.so.6").
func (m *Module) Name() string { return filepath.Base(m.Path) }

// Modules groups the file-backed mappings of ms by file, in order of first
// mapping, keeping only files with at least one executable mapping (the
// ones that can hold code).
func Modules(ms []Mapping) []*Module {
	var out []*Module
	byKey := map[string]*Module{}
	for _, m := range ms {
		if !m.IsFile() || m.Deleted {
			continue
		}
		key := m.Dev + ":" + strconv.FormatUint(m.Inode, 10) + ":" + m.Path
		mod := byKey[key]
		if mod == nil {
			mod = &Module{Path: m.Path, Inode: m.Inode}
			byKey[key] = mod
			out = append(out, mod)
		}
		mod.Mappings = append(mod.Mappings, m)
	}
	exec := out[:0]
	for _, mod := range out {
		for _, m := range mod.Mappings {
			if m.Exec() {
				exec = append(exec, mod)
				break
			}
		}
	}
	return exec
}

// Find returns the mapping of ms containing run-time address addr.
func Find(ms []Mapping, addr uint64) (Mapping, bool) {
	for _, m := range ms {
		if m.Start <= addr && addr < m.End {
			return m, true
		}
	}
	return Mapping{}, false
}

// Exists reports whether process pid exists.
func Exists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}

// Executable returns the path of process pid's executable, as the kernel
// resolves /proc/PID/exe.
func Executable(pid int) (string, error) {
	p, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return "", fmt.Errorf("process %d: %w", pid, ErrNoProcess)
		}
		return "", err
	}
	return strings.TrimSuffix(p, " (deleted)"), nil
}
