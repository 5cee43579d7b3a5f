package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// kernelObjects are the BPF programs and links a process holds, by ID,
// read from its /proc fdinfo, and its perf events.
type kernelObjects struct {
	progs, links []uint32
	perfEvents   int
}

func objectsOf(t *testing.T, pid int) kernelObjects {
	t.Helper()
	var o kernelObjects
	dir := "/proc/" + strconv.Itoa(pid)
	fds, err := os.ReadDir(dir + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if target, _ := os.Readlink(filepath.Join(dir, "fd", fd.Name())); target == "anon_inode:[perf_event]" {
			o.perfEvents++
		}
		f, err := os.Open(filepath.Join(dir, "fdinfo", fd.Name()))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ":")
			id, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
			switch k {
			case "prog_id":
				o.progs = append(o.progs, uint32(id))
			case "link_id":
				o.links = append(o.links, uint32(id))
			}
		}
		f.Close()
	}
	return o
}

// gone waits until none of o's programs and links exists any more: the
// kernel frees them after the last reference goes, a little later.
func (o kernelObjects) gone(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, id := range o.progs {
		for {
			p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if err == nil {
				p.Close()
			}
			if time.Now().After(deadline) {
				t.Fatalf("program %d still loaded", id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, id := range o.links {
		for {
			l, err := link.NewFromID(link.ID(id))
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if err == nil {
				l.Close()
			}
			if time.Now().After(deadline) {
				t.Fatalf("link %d still exists", id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// probeEvents is the text of the tracefs files that list uprobes and
// kprobes made through them ("" where the kernel has no such file).
func probeEvents() string {
	var b strings.Builder
	for _, f := range []string{"uprobe_events", "kprobe_events"} {
		data, _ := os.ReadFile("/sys/kernel/tracing/" + f)
		b.WriteString(f + ":\n" + string(data))
	}
	return b.String()
}

// TestNothingLeftBehind: however dstar ends — normally, by an error, at
// Ctrl-C, or killed outright — the programs, links and perf events it
// made are gone from the kernel afterwards, no uprobe or kprobe event is
// left, and the process it traced (with uprobes in it) runs on unharmed.
func TestNothingLeftBehind(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	// The test makes dstar exit (or the script fail) by making a
	// directory of that name.
	stopper := `syscall::mkdirat:entry /basename(copyinstr(arg1)) == "dstar-stop"/ { exit(0); }`
	stop := func(*os.Process) {
		d := filepath.Join(dir, "dstar-stop")
		os.Mkdir(d, 0o755)
		os.Remove(d)
	}
	failing := filepath.Join(dir, "fail.star")
	os.WriteFile(failing, []byte(`
s = dtrace.session()
s.attach("""syscall::getpid:entry { @ = count(); } profile-99 { @p = count(); } tick-10ms { @t = count(); }`+stopper+`""")
print("ready")
s.run()
fail("boom")
`), 0o644)
	probes := `syscall::getpid:entry { @ = count(); } profile-99 { @p = count(); } tick-10ms /n++ == 0/ { printf("ready\n"); }`
	for _, tc := range []struct {
		name string
		args []string
		end  func(p *os.Process) // how dstar is made to stop
	}{
		{"exit", []string{"-q", "-n", probes + stopper}, stop},
		{"error", []string{"run", failing}, stop},
		{"ctrl-c", []string{"-q", "-n", probes}, func(p *os.Process) { p.Signal(os.Interrupt) }},
		{"kill-9", []string{"-q", "-n", probes}, func(p *os.Process) { p.Kill() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := probeEvents()
			traced := exec.Command("sleep", "60")
			if err := traced.Start(); err != nil {
				t.Fatal(err)
			}
			defer traced.Process.Kill()
			args := tc.args
			if args[0] != "run" {
				// And uprobes in the traced process.
				args = append(args, "-n", "pid$target:libc.so.6:clock_nanosleep:entry,pid$target:libc.so.6:getpid:entry { @u = count(); }",
					"-p", strconv.Itoa(traced.Process.Pid))
			}
			cmd := exec.Command(dstarBin, args...)
			var out, errb bpftest.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, &out, "ready")
			objs := objectsOf(t, cmd.Process.Pid)
			if len(objs.progs) == 0 || objs.perfEvents == 0 {
				t.Fatalf("dstar holds no programs or perf events to check: %+v", objs)
			}
			tc.end(cmd.Process)
			err := cmd.Wait()
			switch tc.name {
			case "error":
				if !strings.Contains(errb.String(), "boom") {
					t.Errorf("the script's error was not reported: %v %q", err, errb.String())
				}
			case "kill-9":
			default:
				if err != nil {
					t.Errorf("dstar: %v\n%s", err, errb.String())
				}
			}
			objs.gone(t)
			if after := probeEvents(); after != before {
				t.Errorf("probe events changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			// The traced process runs on, and is not left stopped.
			if err := traced.Process.Signal(syscall.Signal(0)); err != nil {
				t.Fatalf("traced process: %v", err)
			}
			stat, _ := os.ReadFile("/proc/" + strconv.Itoa(traced.Process.Pid) + "/stat")
			if f := strings.Fields(string(stat)); len(f) < 3 || f[2] != "S" {
				t.Errorf("traced process state: %q", stat)
			}
		})
	}
}
