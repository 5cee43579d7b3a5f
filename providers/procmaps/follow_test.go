package procmaps

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// childEnv makes the test binary the process TestFollow follows: it maps
// a page range of itself when told to, on its main thread.
const childEnv = "PROCMAPS_FOLLOW_CHILD"

func init() {
	if os.Getenv(childEnv) == "" {
		return
	}
	// Follow watches the main thread (and the threads it makes after):
	// the mapping must be made there, and init runs on it.
	runtime.LockOSThread()
	in := bufio.NewReader(os.Stdin)
	in.ReadByte()
	if err := mapSelf(); err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("mapped\n")
	in.ReadByte() // until the test closes stdin
	os.Exit(0)
}

// mapSelf maps two pages of the executable, from its second page, as
// executable code.
func mapSelf() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	f, err := os.Open(exe)
	if err != nil {
		return err
	}
	page := os.Getpagesize()
	_, err = unix.Mmap(int(f.Fd()), int64(page), 2*page, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
	return err
}

// TestFollow: an executable mapping a process makes after Follow is read
// back with its address, length, file offset and path.
func TestFollow(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("following mappings (perf_event_open) needs root")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(exe)
	child.Env = append(os.Environ(), childEnv+"=1")
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		child.Wait()
	}()
	fo, err := Follow(child.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	stdin.Write([]byte{1})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "mapped\n" {
		t.Fatalf("child: %q, %v", line, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(exe, &st); err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()
	for _, m := range fo.Read() {
		if m.Pid == child.Process.Pid && m.Inode == st.Ino && m.Offset == uint64(page) && m.End-m.Start == uint64(2*page) {
			if !m.Exec() || !m.IsFile() {
				t.Errorf("mapping %+v", m)
			}
			return
		}
	}
	t.Errorf("the mapping of %s by process %d was not recorded", exe, child.Process.Pid)
}
