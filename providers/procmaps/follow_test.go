package procmaps

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFollow: an executable mapping this process makes after Follow is
// read back with its address, length, file offset and path.
func TestFollow(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("following mappings (perf_event_open) needs root")
	}
	fo, err := Follow(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := os.Getpagesize()
	mem, err := unix.Mmap(int(f.Fd()), int64(page), 2*page, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	var st unix.Stat_t
	unix.Fstat(int(f.Fd()), &st)
	for _, m := range fo.Read() {
		if m.Pid == os.Getpid() && m.Inode == st.Ino && m.Offset == uint64(page) {
			if m.End-m.Start != uint64(2*page) || !m.Exec() || !m.IsFile() {
				t.Errorf("mapping %+v", m)
			}
			return
		}
	}
	t.Errorf("the mapping of %s was not recorded", exe)
}
