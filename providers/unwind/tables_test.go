package unwind

import (
	"os"
	"testing"
)

// TestAddressSharedPage: rustc's and lld's layout starts the text in
// the page where the read-only data ends, so the executable mapping's
// page-aligned file offset lies before the text segment's first byte:
// its address is the one that page has in the text segment, not in the
// segment before (which would shift every row by a page).
func TestAddressSharedPage(t *testing.T) {
	page := uint64(os.Getpagesize())
	// Only executable segments are kept (see load): the text segment at
	// file offset page*18+0xdb0, address page*19+0xdb0.
	f := &file{loads: []segment{{off: 18*page + 0xdb0, vaddr: 19*page + 0xdb0, size: 0x3d5a3}}}
	for _, c := range []struct {
		off, want uint64
		ok        bool
	}{
		{18 * page, 19 * page, true},
		{18*page + 0xdb0, 19*page + 0xdb0, true},
		{20 * page, 21 * page, true},
		{17 * page, 0, false},
		{18*page + 0xdb0 + 0x3d5a3, 0, false},
	} {
		got, ok := f.address(c.off)
		if ok != c.ok || got != c.want {
			t.Errorf("address(%#x) = %#x, %v; want %#x, %v", c.off, got, ok, c.want, c.ok)
		}
	}
}
