package main

// End-to-end tests of the embedded tools (dstar tool NAME): each starts
// the real binary, waits until the tool says it is tracing (its header),
// causes the events it reports, waits for them in its output, and ends it
// with Ctrl-C as a user would. JSON modes print no header, so their tests
// cause events until the tool reports one.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// runningTool is a `dstar tool` process with its output captured.
type runningTool struct {
	t        *testing.T
	cmd      *exec.Cmd
	out, err bpftest.Buffer
	exited   chan struct{} // closed when the process has exited
	waitErr  error         // Wait's result, once exited is closed
}

// startTool starts dstar tool args...; the test's end kills it if the test
// did not stop it.
func startTool(t *testing.T, args ...string) *runningTool {
	t.Helper()
	rt := &runningTool{t: t, cmd: exec.Command(dstarBin, append([]string{"tool"}, args...)...), exited: make(chan struct{})}
	rt.cmd.Stdout, rt.cmd.Stderr = &rt.out, &rt.err
	if err := rt.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		rt.waitErr = rt.cmd.Wait()
		close(rt.exited)
	}()
	t.Cleanup(func() {
		rt.cmd.Process.Kill()
		<-rt.exited
	})
	return rt
}

// waitMatch waits until the tool's output matches re, and returns the
// first match's submatches. It fails the test when the tool exits first
// or nothing matches in 20 s.
func (rt *runningTool) waitMatch(re string) []string {
	rt.t.Helper()
	return rt.waitMatchWhile(re, nil)
}

// waitMatchWhile is waitMatch calling poke between looks: what causes the
// events, for tools that print nothing before their first one.
func (rt *runningTool) waitMatchWhile(re string, poke func()) []string {
	rt.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := rx.FindStringSubmatch(rt.out.String()); m != nil {
			return m
		}
		if poke != nil {
			poke()
		}
		select {
		case <-rt.exited:
			if m := rx.FindStringSubmatch(rt.out.String()); m != nil {
				return m
			}
			rt.t.Fatalf("dstar exited (%v) before printing a match for %s\nstdout:\n%s\nstderr:\n%s", rt.waitErr, re, rt.out.String(), rt.err.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	rt.t.Fatalf("no match for %s in 20s\nstdout:\n%s\nstderr:\n%s", re, rt.out.String(), rt.err.String())
	return nil
}

// stop ends the tool with Ctrl-C and checks that it exits cleanly, with
// nothing on stderr. It returns the tool's output.
func (rt *runningTool) stop() string {
	rt.t.Helper()
	rt.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-rt.exited:
	case <-time.After(20 * time.Second):
		rt.t.Fatalf("dstar did not exit at Ctrl-C\nstdout:\n%s\nstderr:\n%s", rt.out.String(), rt.err.String())
	}
	if code := exitCode(rt.waitErr); code != 0 || rt.err.String() != "" {
		rt.t.Errorf("exit %d, stderr:\n%s", code, rt.err.String())
	}
	return rt.out.String()
}

// selfComm is the test process's command name, as tools report it.
func selfComm(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// echoer is a cat child the test talks to: every line it writes makes cat
// wake up, read and write, so that it makes known syscalls and scheduler
// events on demand.
type echoer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startEchoer(t *testing.T) *echoer {
	t.Helper()
	cmd := exec.Command("cat")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	return &echoer{cmd, in, bufio.NewReader(out)}
}

// pingPong sends n lines, each after the one before came back.
func (e *echoer) pingPong(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := io.WriteString(e.in, "x\n"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.out.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
}

func TestToolHelpAndBadFlags(t *testing.T) {
	r := dstar(t, 20*time.Second, "tool", "opensnoop", "-h")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: dstar tool opensnoop [-p PID]") || !strings.Contains(r.stdout, "\n  -x            only failed opens\n") {
		t.Errorf("-h: exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = dstar(t, 20*time.Second, "tool", "syscount", "-z")
	if r.code != 1 || !strings.Contains(r.stderr, "syscount: unknown option -z") || !strings.Contains(r.stderr, "Usage: dstar tool syscount") {
		t.Errorf("-z: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = dstar(t, 20*time.Second, "tool")
	for _, name := range []string{"biolatency", "execsnoop", "exitsnoop", "killsnoop", "offcputime", "opensnoop", "profile",
		"runqlat", "stackcount", "syscount", "tcplife"} {
		if !regexp.MustCompile(`(?m)^  ` + name + ` +\S`).MatchString(r.stdout) {
			t.Errorf("tool list has no %s:\n%s", name, r.stdout)
		}
	}
}

func TestToolSyscount(t *testing.T) {
	bpftest.Require(t)
	cat := startEchoer(t)
	pid := cat.cmd.Process.Pid
	rt := startTool(t, "syscount", "-p", strconv.Itoa(pid))
	rt.waitMatch(`Tracing system calls\.\.\. Hit Ctrl-C to end\.\n`)
	cat.pingPong(t, 100)
	out := rt.stop()
	for _, call := range []string{"read", "write"} {
		m := regexp.MustCompile(`(?m)^` + call + ` +(\d+)$`).FindStringSubmatch(out)
		if m == nil {
			t.Errorf("no %s row:\n%s", call, out)
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n < 100 {
			t.Errorf("%s counted %d times, want at least 100:\n%s", call, n, out)
		}
	}
}

func TestToolSyscountByProcessJSON(t *testing.T) {
	bpftest.Require(t)
	cat := startEchoer(t)
	pid := cat.cmd.Process.Pid
	rt := startTool(t, "syscount", "-P", "-j", "-i", "100ms", "-p", strconv.Itoa(pid))
	re := fmt.Sprintf(`\{"comm":"cat","count":(\d+),"pid":%d\}\n`, pid)
	rt.waitMatchWhile(re, func() { cat.pingPong(t, 10) })
	out := rt.stop()
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var row struct {
			PID   int    `json:"pid"`
			Comm  string `json:"comm"`
			Count int    `json:"count"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil || row.PID != pid || row.Count <= 0 {
			t.Errorf("line %q: %+v, %v", line, row, err)
		}
	}
}

func TestToolOpensnoop(t *testing.T) {
	bpftest.Require(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "present")
	os.WriteFile(file, []byte("x"), 0o644)
	missing := filepath.Join(dir, "missing")
	rt := startTool(t, "opensnoop", "-p", strconv.Itoa(os.Getpid()))
	rt.waitMatch(`(?m)^PID +COMM +FD +ERR +PATH\n`)
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	fd := f.Fd()
	f.Close()
	os.Open(missing)
	comm := regexp.QuoteMeta(selfComm(t))
	pid := os.Getpid()
	rt.waitMatch(fmt.Sprintf(`(?m)^%d +%s +%d +0 %s$`, pid, comm, fd, regexp.QuoteMeta(file)))
	rt.waitMatch(fmt.Sprintf(`(?m)^%d +%s +-1 +2 %s$`, pid, comm, regexp.QuoteMeta(missing)))
	rt.stop()
}

func TestToolOpensnoopJSON(t *testing.T) {
	bpftest.Require(t)
	missing := filepath.Join(t.TempDir(), "missing")
	rt := startTool(t, "opensnoop", "-j", "-x", "-p", strconv.Itoa(os.Getpid()))
	line := rt.waitMatchWhile(`\{.*"path":"`+regexp.QuoteMeta(missing)+`".*\}\n`, func() { os.Open(missing) })[0]
	var ev struct {
		PID   int    `json:"pid"`
		Comm  string `json:"comm"`
		FD    int    `json:"fd"`
		Errno int    `json:"errno"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if ev.PID != os.Getpid() || ev.Comm != selfComm(t) || ev.FD != -1 || ev.Errno != 2 || ev.Error != "ENOENT" {
		t.Errorf("%q: %+v", line, ev)
	}
	rt.stop()
}

func TestToolExecsnoop(t *testing.T) {
	bpftest.Require(t)
	rt := startTool(t, "execsnoop", "-x")
	rt.waitMatch(`(?m)^PCOMM +PID +PPID +RET +FILENAME\n`)
	child := exec.Command("/bin/true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nosuchprogram")
	if exec.Command(missing).Run() == nil {
		t.Fatal("a missing program ran")
	}
	rt.waitMatch(fmt.Sprintf(`(?m)^true +%d +%d +0 /bin/true$`, child.Process.Pid, os.Getpid()))
	rt.waitMatch(fmt.Sprintf(`(?m)^%s +\d+ +%d +-2 %s$`, regexp.QuoteMeta(selfComm(t)), os.Getpid(), regexp.QuoteMeta(missing)))
	rt.stop()
}

func TestToolExitsnoop(t *testing.T) {
	bpftest.Require(t)
	rt := startTool(t, "exitsnoop")
	rt.waitMatch(`(?m)^PCOMM +PID +PPID +TID +EXIT\n`)
	code3 := exec.Command("sh", "-c", "exit 3")
	code3.Run()
	term := exec.Command("sleep", "60")
	if err := term.Start(); err != nil {
		t.Fatal(err)
	}
	term.Process.Signal(syscall.SIGTERM)
	term.Wait()
	me := os.Getpid()
	rt.waitMatch(fmt.Sprintf(`(?m)^sh +%d +%d +%d +code 3$`, code3.Process.Pid, me, code3.Process.Pid))
	rt.waitMatch(fmt.Sprintf(`(?m)^\S+ +%d +%d +%d +signal 15 \(SIGTERM\)$`, term.Process.Pid, me, term.Process.Pid))
	rt.stop()
}

func TestToolKillsnoop(t *testing.T) {
	bpftest.Require(t)
	rt := startTool(t, "killsnoop")
	rt.waitMatch(`(?m)^PID +COMM +TPID +TCOMM +SIGNAL +RESULT\n`)
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	target := sleeper.Process.Pid
	sleeper.Process.Signal(syscall.SIGUSR1) // kills it
	sleeper.Wait()
	// target is reaped: a kill now fails with ESRCH, unless the pid was
	// reused in between, which the test would notice.
	if err := syscall.Kill(target, syscall.SIGKILL); err != syscall.ESRCH {
		t.Fatalf("kill of a reaped child: %v", err)
	}
	me, comm := os.Getpid(), regexp.QuoteMeta(selfComm(t))
	rt.waitMatch(fmt.Sprintf(`(?m)^%d +%s +%d +\S+ +SIGUSR1 +delivered$`, me, comm, target))
	rt.waitMatch(fmt.Sprintf(`(?m)^%d +%s +%d +SIGKILL +ESRCH$`, me, comm, target))
	rt.stop()
}

func TestToolRunqlat(t *testing.T) {
	bpftest.Require(t)
	cat := startEchoer(t)
	rt := startTool(t, "runqlat", "-p", strconv.Itoa(cat.cmd.Process.Pid))
	rt.waitMatch(`Tracing run queue latency \(usecs\)\.\.\. Hit Ctrl-C to end\.\n`)
	// Each line wakes cat up, almost always from its sleep in read: cat
	// has gone back to read before the test has the echo and writes again.
	cat.pingPong(t, 100)
	out := rt.stop()
	if n := quantizeTotal(t, out); n < 50 {
		t.Errorf("%d wakeups timed, want about 100:\n%s", n, out)
	}
}

func TestToolRunqlatJSON(t *testing.T) {
	bpftest.Require(t)
	cat := startEchoer(t)
	rt := startTool(t, "runqlat", "-j", "-i", "100ms", "-p", strconv.Itoa(cat.cmd.Process.Pid))
	line := rt.waitMatchWhile(`\{"buckets":.*\}\n`, func() { cat.pingPong(t, 10) })[0]
	var h struct {
		Unit    string `json:"unit"`
		Total   int    `json:"total"`
		Buckets []struct {
			Value int `json:"value"`
			Count int `json:"count"`
		} `json:"buckets"`
	}
	if err := json.Unmarshal([]byte(line), &h); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	sum := 0
	for _, b := range h.Buckets {
		sum += b.Count
		if b.Value != 0 && b.Value&(b.Value-1) != 0 {
			t.Errorf("bucket %d is not a power of two", b.Value)
		}
	}
	if h.Unit != "usecs" || h.Total <= 0 || sum != h.Total {
		t.Errorf("%q: %+v", line, h)
	}
	rt.stop()
}

// quantizeTotal adds up the counts of the quantize tables in out, checking
// their layout on the way.
func quantizeTotal(t *testing.T, out string) int {
	t.Helper()
	if !strings.Contains(out, "           value  ------------- Distribution ------------- count    \n") {
		t.Errorf("no quantize header:\n%s", out)
	}
	total := 0
	for _, m := range regexp.MustCompile(`(?m)^ +(-?\d+) \|(@*) *(\d+) *$`).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[3])
		total += n
	}
	return total
}

// loopDevice attaches a 4 MiB file to a free loop device and returns the
// device's path and number, or "" when the machine has none to give.
func loopDevice(t *testing.T) (string, uint64) {
	t.Helper()
	img := filepath.Join(t.TempDir(), "loop.img")
	if err := os.WriteFile(img, make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "-f", "--show", img).Output()
	if err != nil {
		return "", 0
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", dev).Run() })
	var st syscall.Stat_t
	if err := syscall.Stat(dev, &st); err != nil {
		t.Fatal(err)
	}
	return dev, st.Rdev
}

// directWrites writes n 4 KiB blocks to path with O_DIRECT, so that each
// is a request to the device, complete when the write returns.
func directWrites(t *testing.T, path string, flags, n int) {
	t.Helper()
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_DIRECT|flags, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	raw := make([]byte, 2*4096)
	off := 4096 - int(uintptr(unsafe.Pointer(&raw[0]))&4095)
	buf := raw[off%4096 : off%4096+4096]
	for i := 0; i < n; i++ {
		if _, err := syscall.Pwrite(fd, buf, int64(i)*4096); err != nil {
			t.Fatal(err)
		}
	}
}

func TestToolBiolatency(t *testing.T) {
	bpftest.Require(t)
	if _, err := os.Stat("/sys/kernel/tracing/events/block/block_rq_issue"); err != nil {
		bpftest.Skip(t, "no block:block_rq_issue tracepoint")
	}
	dev, rdev := loopDevice(t)
	rt := startTool(t, "biolatency", "-D")
	rt.waitMatch(`Tracing block device I/O \(usecs\)\.\.\. Hit Ctrl-C to end\.\n`)
	if dev == "" {
		// No loop device: write to a file on the test's file system; the
		// request goes to whatever disk holds it.
		t.Log("no loop device: direct I/O to a temporary file instead")
		directWrites(t, filepath.Join(t.TempDir(), "data"), syscall.O_CREAT, 50)
		if out := rt.stop(); quantizeTotal(t, out) < 50 {
			t.Errorf("fewer than 50 requests:\n%s", out)
		}
		return
	}
	directWrites(t, dev, 0, 50)
	out := rt.stop()
	label := fmt.Sprintf("\n  disk %d,%d\n", unix.Major(rdev), unix.Minor(rdev))
	i := strings.Index(out, label)
	if i < 0 {
		t.Fatalf("no histogram for %s (%s):\n%s", dev, strings.TrimSpace(label), out)
	}
	table := out[i+len(label):]
	if j := strings.Index(table, "\n\n"); j >= 0 {
		table = table[:j+1]
	}
	if n := quantizeTotal(t, table); n < 50 {
		t.Errorf("%d requests to %s, want at least 50:\n%s", n, dev, out)
	}
}

func TestToolTcplife(t *testing.T) {
	bpftest.Require(t)
	ln := localListener(t)
	port := ln.Addr().(*net.TCPAddr).Port
	me := os.Getpid()
	rt := startTool(t, "tcplife", "-p", strconv.Itoa(me))
	rt.waitMatch(`(?m)^PID +COMM +IP +LADDR +LPORT +RADDR +RPORT +MS\n`)
	client, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	client.Write([]byte("hello"))
	io.ReadFull(server, make([]byte, 5))
	cport := client.LocalAddr().(*net.TCPAddr).Port
	client.Close()
	io.ReadAll(server) // until the client's FIN
	server.Close()
	comm := regexp.QuoteMeta(selfComm(t))
	rt.waitMatch(fmt.Sprintf(`(?m)^%d +%s +4 +127\.0\.0\.1 +%d +127\.0\.0\.1 +%d +\d+\.\d\d$`, me, comm, cport, port))
	rt.waitMatch(fmt.Sprintf(`(?m)^%d +%s +4 +127\.0\.0\.1 +%d +127\.0\.0\.1 +%d +\d+\.\d\d$`, me, comm, port, cport))
	rt.stop()
}
