package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// The proc, sched and io providers, end to end: real processes, signals
// and block I/O, seen through DTrace's probe names and translated
// arguments.

func TestListStable(t *testing.T) {
	bpftest.Require(t)
	r := dstar(t, 20*time.Second, "-l", "-n", "proc:::")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) != 3 || f[1] != "proc" {
			t.Fatalf("line %q of\n%s", line, r.stdout)
		}
		names = append(names, f[2])
	}
	want := "exec exec-success exec-failure exit create lwp-create lwp-exit start lwp-start signal-send signal-discard signal-handle"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("proc probes: %s, want %s", got, want)
	}

	r = dstar(t, 20*time.Second, "-lv", "-n", "io:::start", "-n", "proc:::exec-success")
	for _, want := range []string{
		"\tArgument Types\n\t\targs[0]: bufinfo_t *\n\t\targs[1]: devinfo_t *\n\t\targs[2]: fileinfo_t *\n",
		"exec-success\n\n\tProbe Description Attributes\n\t\tIdentifier Names: Evolving\n\t\tData Semantics:   Evolving\n\t\tDependency Class: ISA\n",
		"\tArgument Types\n\t\tNone\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("-lv: no %q in\n%s", want, r.stdout)
		}
	}
}

func TestProcExecSuccess(t *testing.T) {
	bpftest.Require(t)
	// -c holds the target after its own exec: the shell it runs execs
	// /bin/true afterwards, in the same process.
	r := dstar(t, 20*time.Second, "-q", "-c", `sh -c "exec /bin/true one 'two three'"`,
		"-n", `proc:::exec /pid == $target/ { printf("exec %s\n", args[0]); }`,
		"-n", `proc:::exec-success /pid == $target/ { printf("exec-success %s %d [%s]\n", curpsinfo->pr_fname, curpsinfo->pr_pid == $target, curpsinfo->pr_psargs); }`)
	if want := "exec /bin/true\nexec-success true 1 [/bin/true one two three]\n\n"; r.stdout != want || r.code != 0 {
		t.Errorf("stdout %q, want %q (exit %d, stderr %s)", r.stdout, want, r.code, r.stderr)
	}
}

func TestProcCreateExit(t *testing.T) {
	bpftest.Require(t)
	// The target forks two children: one exits normally, the other is
	// killed. create (in the parent) names each child; exit gives how it
	// ended; the target's own exit is CLD_EXITED.
	r := dstar(t, 20*time.Second, "-q", "-c", `sh -c "/bin/true; sleep 5 & kill -9 \$!; wait"`,
		"-n", `proc:::create /pid == $target/ { printf("create %d %d\n", args[0]->pr_pid, args[0]->pr_ppid == $target); }`,
		"-n", `proc:::exit /pid == $target || ppid == $target/ { printf("exit %d %d\n", pid, args[0]); }`)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	m := regexp.MustCompile(`^create (\d+) 1\nexit (\d+) 1\ncreate (\d+) 1\nexit (\d+) 2\nexit (\d+) 1\n\n$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	if m[1] != m[2] || m[3] != m[4] || m[1] == m[3] || m[5] == m[1] || m[5] == m[3] {
		t.Errorf("create and exit pids do not pair up:\n%s", r.stdout)
	}
}

func TestProcStartExecFailure(t *testing.T) {
	bpftest.Require(t)
	// The shell forks twice: the first child fails to exec (ENOENT), the
	// second runs /bin/true. start fires in each child, first thing; exec
	// at each attempt.
	r := dstar(t, 20*time.Second, "-q", "-c", `sh -c "/nonexistent/x 2>/dev/null; /bin/true; :"`,
		"-n", `proc:::start /ppid == $target/ { printf("start %d\n", curpsinfo->pr_ppid == $target); }`,
		"-n", `proc:::exec /ppid == $target/ { printf("exec %s\n", args[0]); }`,
		"-n", `proc:::exec-failure /ppid == $target/ { printf("exec-failure %d\n", args[0]); }`,
		"-n", `proc:::exec-success /ppid == $target/ { printf("exec-success %s\n", execname); }`)
	if want := "start 1\nexec /nonexistent/x\nexec-failure 2\nstart 1\nexec /bin/true\nexec-success true\n\n"; r.stdout != want || r.code != 0 {
		t.Errorf("stdout %q, want %q (exit %d, stderr %s)", r.stdout, want, r.code, r.stderr)
	}
}

func TestProcLwp(t *testing.T) {
	bpftest.Require(t)
	// dstar itself is a Go program: its runtime starts threads before it
	// prints its version. Each new thread is created (in its creator),
	// starts (in itself) and exits, as does the main thread. The counts
	// are aggregations, which CPUs update apart, not globals, whose ++
	// loses a count when two threads exit on two CPUs at once; and they
	// are read at END, once the process has gone.
	r := dstar(t, 20*time.Second, "-q", "-c", dstarBin+" -V >/dev/null",
		"-n", `proc:::lwp-create /pid == $target && args[0]->pr_lwpid != pid && args[1]->pr_pid == pid/ { @c = count(); }`,
		"-n", `proc:::lwp-start /pid == $target && tid != pid/ { @s = count(); }`,
		"-n", `proc:::lwp-exit /pid == $target/ { @e = count(); }`,
		"-n", `proc:::exit /pid == $target/ { @x = count(); }`,
		"-n", `END { printa("c %@d\n", @c); printa("s %@d\n", @s); printa("e %@d\n", @e); printa("x %@d\n", @x); }`)
	var c, s, e, x int
	if _, err := fmt.Sscanf(r.stdout, "c %d\ns %d\ne %d\nx %d\n", &c, &s, &e, &x); err != nil || r.code != 0 {
		t.Fatalf("stdout %q: %v (exit %d, stderr %s)", r.stdout, err, r.code, r.stderr)
	}
	if c == 0 || s != c || e != c+1 || x != 1 {
		t.Errorf("%d threads created, %d started, %d exited, %d process exits; want some created, as many started, one more exited (the main thread) and one process exit", c, s, e, x)
	}
}

func TestProcSignal(t *testing.T) {
	bpftest.Require(t)
	// The shell sends itself SIGUSR1 and handles it, then SIGUSR2, which
	// it ignores.
	r := dstar(t, 20*time.Second, "-q", "-c", `sh -c "trap : USR1; trap '' USR2; kill -USR1 \$\$; kill -USR2 \$\$"`,
		"-n", `proc:::signal-send /pid == $target && args[2] != SIGCHLD/ { printf("send %d %d %d %s\n", args[2], args[1]->pr_pid == $target, args[0]->pr_lwpid == $target, args[1]->pr_fname); }`,
		"-n", `proc:::signal-discard /pid == $target/ { printf("discard %d %d\n", args[2], args[1]->pr_pid == $target); }`,
		"-n", `proc:::signal-handle /pid == $target/ { printf("handle %d %d\n", args[0], args[2] != 0); }`)
	if want := "send 10 1 1 sh\nhandle 10 1\nsend 12 1 1 sh\ndiscard 12 1\n\n"; r.stdout != want || r.code != 0 {
		t.Errorf("stdout %q, want %q (exit %d, stderr %s)", r.stdout, want, r.code, r.stderr)
	}
}

func TestSchedOnOffCPU(t *testing.T) {
	bpftest.Require(t)
	// sleep leaves the CPU to sleep and comes back when woken: on-cpu,
	// off-cpu, sleep and enqueue (of the target, by whoever wakes it) each
	// fire at least once; on-cpu and off-cpu run in the target itself.
	r := dstar(t, 20*time.Second, "-q", "-c", "sleep 0.05",
		"-n", `sched:::on-cpu /pid == $target/ { on++; }`,
		"-n", `sched:::off-cpu /pid == $target/ { off++; }`,
		"-n", `sched:::sleep /pid == $target/ { sleep++; }`,
		"-n", `sched:::enqueue /args[1]->pr_pid == $target && args[2]->cpu_id >= 0/ { enq++; }`,
		"-n", `sched:::dequeue /args[1]->pr_pid == $target && args[2]->cpu_id == cpu/ { deq++; }`,
		"-n", `sched:::wakeup /args[1]->pr_pid == $target && args[0]->pr_lwpid == $target/ { wake++; }`,
		"-n", `proc:::exit /pid == $target/ { printf("%d %d %d %d %d %d\n", on > 0, off > 0, sleep > 0, enq > 0, wake > 0, deq > 0); }`)
	if want := "1 1 1 1 1 1\n\n"; r.stdout != want || r.code != 0 {
		t.Errorf("stdout %q, want %q (exit %d, stderr %s)", r.stdout, want, r.code, r.stderr)
	}
}

func TestSchedTick(t *testing.T) {
	bpftest.Require(t)
	// The target spins until a tick interrupts it; dstar then exits and
	// takes the target with it.
	r := dstar(t, 20*time.Second, "-q", "-c", `sh -c "while :; do :; done"`,
		"-n", `sched:::tick /pid == $target/ { printf("%d %d %d\n", args[0]->pr_lwpid == tid, args[1]->pr_pid == pid, curlwpsinfo->pr_state == SONPROC); exit(0); }`)
	if want := "1 1 1\n\n"; r.stdout != want || r.code != 0 {
		t.Errorf("stdout %q, want %q (exit %d, stderr %s)", r.stdout, want, r.code, r.stderr)
	}
}

func TestIOStart(t *testing.T) {
	bpftest.Require(t)
	losetup, err := exec.LookPath("losetup")
	if err != nil {
		t.Skip("no losetup to make a loop device")
	}
	// A loop device of its own makes the I/O exact: one 64 KiB direct
	// write at byte 512 KiB (block 1024), then a 4 KiB direct read at
	// block 24, both issued by the target's children (udev, where it
	// runs, may read a new device too).
	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(losetup, "-f", "--show", img).CombinedOutput()
	if err != nil {
		t.Skipf("losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command(losetup, "-d", dev).Run() })
	name := filepath.Base(dev)
	r := dstar(t, 30*time.Second, "-q", "-c", `sh -c "dd if=/dev/zero of=`+dev+` bs=64k seek=8 count=1 oflag=direct status=none; dd if=`+dev+` of=/dev/null bs=4k skip=3 count=1 iflag=direct status=none"`,
		"-n", `io:::start /args[1]->dev_name == "`+name+`" && progenyof($target)/ { mine[args[0]->b_addr] = 1; printf("start %d %d %s %s %d %s\n", args[0]->b_bcount, args[0]->b_blkno, args[0]->b_flags & B_WRITE ? "W" : args[0]->b_flags & B_READ ? "R" : "?", args[1]->dev_pathname, args[1]->dev_major, args[2]->fi_name); }`,
		"-n", `io:::done /mine[args[0]->b_addr]/ { printf("done %d\n", args[0]->b_bcount); mine[args[0]->b_addr] = 0; }`)
	want := fmt.Sprintf("start 65536 1024 W %s 7 <none>\ndone 65536\nstart 4096 24 R %s 7 <none>\ndone 4096\n\n", dev, dev)
	if r.stdout != want || r.code != 0 {
		t.Errorf("stdout %q, want %q (exit %d, stderr %s)", r.stdout, want, r.code, r.stderr)
	}

	// The two direct transfers make each dd wait for I/O: every wait
	// that starts in them ends.
	r = dstar(t, 30*time.Second, "-q", "-c", `sh -c "dd if=/dev/zero of=`+dev+` bs=64k seek=8 count=1 oflag=direct status=none; dd if=`+dev+` of=/dev/null bs=4k skip=3 count=1 iflag=direct status=none"`,
		// in_iowait, a bit-field of task_struct, is set while a thread waits.
		"-n", `io:::wait-start /progenyof($target) && curthread->in_iowait == 1/ { self->w = 1; @starts = count(); } io:::wait-done /self->w/ { self->w = 0; @dones = count(); }`,
		"-n", `END { printa("%@d", @starts); printa(" %@d\n", @dones); }`)
	var starts, dones int
	if _, err := fmt.Sscanf(strings.TrimSpace(r.stdout), "%d %d", &starts, &dones); err != nil || starts < 2 || starts != dones {
		t.Errorf("waits: stdout %q (exit %d, stderr %s)", r.stdout, r.code, r.stderr)
	}
}

// TestFds checks fds[]: the target's writes name the file they go to,
// with its directory, path, offset, mount point and open flags.
func TestFds(t *testing.T) {
	bpftest.Require(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(sub, "f.txt")
	r := dstar(t, 30*time.Second, "-q", "-c", `sh -c "echo hello > `+file+`; echo more >> `+file+`"`, "-n",
		`syscall::write:entry /pid == $target && fds[arg0].fi_name == "f.txt"/ {
			printf("%s|%s|%s|%d|%s|%o|%s\n", fds[arg0].fi_name, fds[arg0].fi_dirname, fds[arg0].fi_pathname,
			    fds[arg0].fi_offset, fds[arg0].fi_mount, fds[arg0].fi_oflags & 03, fds[arg0].fi_fs == "<none>" ? "?" : "fs");
		}`)
	mount := "/"
	if out, err := exec.Command("stat", "-c", "%m", file).Output(); err == nil {
		mount = strings.TrimSpace(string(out))
	}
	line := func(off int) string { return fmt.Sprintf("f.txt|%s|%s|%d|%s|1|fs\n", sub, file, off, mount) }
	if want := line(0) + line(0) + "\n"; r.code != 0 || r.stdout != want {
		t.Errorf("exit %d, stdout %q, want %q\nstderr:\n%s", r.code, r.stdout, want, r.stderr)
	}
}
