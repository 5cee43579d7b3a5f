package usym

import (
	"strings"
	"sync"

	"github.com/ianlancetaylor/demangle"
)

// Demangle returns the name a C++ or Rust symbol was written as, in the
// form perf prints a frame's function: without parameters or clone
// suffixes (std::vector<int, std::allocator<int> >::push_back), Rust's
// without its hash (core::ptr::drop_in_place); any other name as it is.
func Demangle(name string) string {
	if !mangled(name) {
		return name
	}
	names.Lock()
	d, ok := names.m[name]
	names.Unlock()
	if ok {
		return d
	}
	d = demangle.Filter(name, demangle.NoParams, demangle.NoClones)
	names.Lock()
	// A profile names the same few thousand functions again and again;
	// a session meeting more starts the cache again rather than grow it.
	if len(names.m) >= maxNames {
		clear(names.m)
	}
	names.m[name] = d
	names.Unlock()
	return d
}

// names caches Demangle's answers: demangling a template-heavy name
// costs microseconds, and a stack of twenty frames names twenty.
var names = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

const maxNames = 1 << 14

// mangled reports whether name is in the Itanium C++ ABI's mangling
// (_Z, which Rust's legacy mangling uses too) or Rust's v0 (_R): the
// others are left alone without being parsed.
func mangled(name string) bool {
	return strings.HasPrefix(name, "_Z") || strings.HasPrefix(name, "_R")
}
