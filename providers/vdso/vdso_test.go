package vdso

import (
	"debug/elf"
	"testing"
)

// TestPath: the copy is an ELF shared object with clock_gettime in its
// dynamic symbols and call-frame information, and another size is not it.
func TestPath(t *testing.T) {
	im, err := image()
	if err != nil {
		t.Skipf("no vDSO here: %v", err)
	}
	p, ok := Path(im.size)
	if !ok {
		t.Fatal("no path for its own size")
	}
	if _, ok := Path(im.size + 4096); ok {
		t.Error("a path for another size")
	}
	f, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Type != elf.ET_DYN {
		t.Errorf("type %v", f.Type)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range syms {
		found = found || s.Name == "__vdso_clock_gettime" || s.Name == "__kernel_clock_gettime"
	}
	if !found {
		t.Errorf("no clock_gettime among %d symbols", len(syms))
	}
	if f.Section(".eh_frame") == nil {
		t.Error("no .eh_frame")
	}
}
