package procmaps

// This file finds the shared libraries a process will map but has not
// yet: a command started with -c is held at exec, before the dynamic
// linker has loaded anything, and probes on its libraries (pid, USDT) must
// be found then. Uprobes are placed by file, so they fire once the library
// is mapped.

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Load returns the modules of process pid: those it has mapped (Modules),
// then, while only its executable and the dynamic linker are mapped (the
// process is held at exec), the libraries the executable needs (Needed)
// as modules without mappings. Once the linker has loaded anything, the
// mappings say all and nothing is added: a library resolved here could
// differ from the one the process chose (another mount namespace, a
// LD_PRELOAD). A process that does not exist gives an error wrapping
// ErrNoProcess.
func Load(pid int) ([]*Module, error) {
	ms, err := Read(pid)
	if err != nil {
		return nil, err
	}
	exe, err := Executable(pid)
	if err != nil {
		return nil, err
	}
	mods := Modules(ms)
	others := 0
	seen := map[string]bool{}
	for _, m := range mods {
		seen[canonical(m.Path)] = true
		if m.Path != exe {
			others++
		}
	}
	if others > 1 {
		return mods, nil
	}
	for _, lib := range Needed(pid, exe) {
		p := canonical(lib)
		var st syscall.Stat_t
		if seen[p] || syscall.Stat(p, &st) != nil {
			continue
		}
		seen[p] = true
		mods = append(mods, &Module{Path: p, Inode: st.Ino})
	}
	return mods, nil
}

// canonical resolves the symbolic links in path, so that a library found
// as /lib/x86_64-linux-gnu/libc.so.6 is the module the kernel will show as
// /usr/lib/x86_64-linux-gnu/libc.so.6.
func canonical(path string) string {
	if c, err := filepath.EvalSymlinks(path); err == nil {
		return c
	}
	return path
}

// Needed resolves the DT_NEEDED closure of executable exe as the dynamic
// linker of process pid would, roughly: DT_RPATH, LD_LIBRARY_PATH (from
// the process's environment), DT_RUNPATH, /etc/ld.so.conf.d, then the
// default directories. A library it cannot find is left out.
func Needed(pid int, exe string) []string {
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
