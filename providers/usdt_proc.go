package providers

// TODO(merge): use providers/procmaps and providers/elfsym. This file holds
// the least of /proc/PID/maps parsing, shared-library resolution and ELF
// symbol lookup that the usdt provider needs until those packages land.

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// procObjects returns the ELF files process pid has mapped executable, the
// main executable first, followed by the libraries it needs that are not
// mapped yet: a process started with -c is held at exec, before the dynamic
// linker has loaded anything, and its libraries' probes must be attachable
// then (uprobes are set on the file, so they fire once it is mapped).
func procObjects(pid int) ([]string, error) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return nil, fmt.Errorf("failed to examine process %d: %w", pid, err)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, fmt.Errorf("failed to examine process %d: %w", pid, err)
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if c, err := filepath.EvalSymlinks(p); err == nil {
			p = c
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	add(exe)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// address perms offset dev inode path
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.Contains(f[1], "x") || !strings.HasPrefix(f[5], "/") || len(f) > 6 {
			continue // anonymous, [vdso], or "(deleted)"
		}
		add(f[5])
	}
	for _, lib := range neededLibs(exe, pid) {
		add(lib)
	}
	return out, nil
}

// neededLibs resolves the DT_NEEDED closure of exe as the dynamic linker
// would, roughly: DT_RPATH, LD_LIBRARY_PATH (from the process's
// environment), DT_RUNPATH, /etc/ld.so.conf.d, then the default
// directories. A library it cannot find is left out.
func neededLibs(exe string, pid int) []string {
	f, err := elf.Open(exe)
	if err != nil {
		return nil
	}
	class, machine := f.Class, f.Machine
	f.Close()
	var ldPath []string
	if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil {
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("LD_LIBRARY_PATH=")); ok {
				ldPath = filepath.SplitList(string(v))
			}
		}
	}
	system := systemLibDirs()
	var out []string
	seen := map[string]bool{}
	queue := []string{exe}
	for len(queue) > 0 && len(out) < 256 {
		obj := queue[0]
		queue = queue[1:]
		f, err := elf.Open(obj)
		if err != nil {
			continue
		}
		needed, _ := f.ImportedLibraries()
		rpath, _ := f.DynString(elf.DT_RPATH)
		runpath, _ := f.DynString(elf.DT_RUNPATH)
		f.Close()
		origin := filepath.Dir(obj)
		expand := func(ps []string) []string {
			var dirs []string
			for _, p := range ps {
				for _, d := range filepath.SplitList(p) {
					d = strings.NewReplacer("$ORIGIN", origin, "${ORIGIN}", origin).Replace(d)
					dirs = append(dirs, d)
				}
			}
			return dirs
		}
		var dirs []string
		if len(runpath) == 0 {
			dirs = append(dirs, expand(rpath)...)
		}
		dirs = append(dirs, ldPath...)
		dirs = append(dirs, expand(runpath)...)
		dirs = append(dirs, system...)
		for _, name := range needed {
			if seen[name] {
				continue
			}
			seen[name] = true
			if p := findLib(name, dirs, class, machine); p != "" {
				out = append(out, p)
				queue = append(queue, p)
			}
		}
	}
	return out
}

// findLib looks for library name in dirs, taking the first ELF file of the
// executable's class and machine.
func findLib(name string, dirs []string, class elf.Class, machine elf.Machine) string {
	cands := []string{name}
	if !strings.Contains(name, "/") {
		cands = nil
		for _, d := range dirs {
			if d != "" {
				cands = append(cands, filepath.Join(d, name))
			}
		}
	}
	for _, c := range cands {
		f, err := elf.Open(c)
		if err != nil {
			continue
		}
		ok := f.Class == class && f.Machine == machine
		f.Close()
		if ok {
			return c
		}
	}
	return ""
}

// systemLibDirs lists /etc/ld.so.conf.d's directories and the defaults.
func systemLibDirs() []string {
	var dirs []string
	confs, _ := filepath.Glob("/etc/ld.so.conf.d/*.conf")
	sort.Strings(confs)
	for _, c := range confs {
		data, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			line, _, _ = strings.Cut(line, "#")
			if line = strings.TrimSpace(line); strings.HasPrefix(line, "/") {
				dirs = append(dirs, line)
			}
		}
	}
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// elfFuncs finds the function symbol containing an address.
type elfFuncs []elf.Symbol

// funcSymbols returns f's function symbols (symtab, else dynsym), sorted.
func funcSymbols(f *elf.File) elfFuncs {
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	var out elfFuncs
	for _, s := range append(syms, dyn...) {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && s.Section != elf.SHN_UNDEF {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	return out
}

// at returns the name of the function containing addr, or "".
func (fs elfFuncs) at(addr uint64) string {
	i := sort.Search(len(fs), func(i int) bool { return fs[i].Value > addr })
	// Aliases share addresses: look at a few symbols below addr.
	for j := i - 1; j >= 0 && j >= i-16; j-- {
		if s := fs[j]; addr < s.Value+s.Size || s.Value == addr {
			return s.Name
		}
	}
	return ""
}

// symbolValues maps f's defined symbols to their values.
func symbolValues(f *elf.File) map[string]uint64 {
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	m := map[string]uint64{}
	for _, s := range append(dyn, syms...) {
		if s.Section != elf.SHN_UNDEF && s.Name != "" {
			m[s.Name] = s.Value
		}
	}
	return m
}

// fileOffset converts a virtual address of f to the offset in the file
// where its byte lies, through the loadable segments.
func fileOffset(f *elf.File, vaddr uint64) (uint64, error) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Vaddr <= vaddr && vaddr < p.Vaddr+p.Filesz {
			return vaddr - p.Vaddr + p.Off, nil
		}
	}
	return 0, fmt.Errorf("address %#x is in no loadable segment", vaddr)
}

// pidExists reports whether process pid exists.
func pidExists(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}
