package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dstar-trace/dstar/providers/bpftest"
)

// replPiped runs `dstar repl` with input on a pipe.
func replPiped(t *testing.T, input string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, dstarBin, "repl")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(input)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("dstar repl did not finish\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

func TestREPLPipedStarlark(t *testing.T) {
	r := replPiped(t, "print(1+1)\n")
	if r.stdout != "2\n" || r.stderr != "" || r.code != 0 {
		t.Fatalf("print(1+1): stdout %q, stderr %q, exit %d", r.stdout, r.stderr, r.code)
	}
	r = replPiped(t, `def double(x):
    if x > 0:
        return x * 2
    return 0
print(double(21))
1 / 0
xs = [1,
      2]
xs
"still here"
`)
	if r.stdout != "42\n[1, 2]\n\"still here\"\n" || r.code != 0 {
		t.Errorf("stdout %q, exit %d", r.stdout, r.code)
	}
	if !strings.Contains(r.stderr, "Traceback (most recent call last):\n  <stdin>:1:3: in <expr>\nError: floating-point division by zero") {
		t.Errorf("no backtrace: %q", r.stderr)
	}
}

func TestREPLPipedCommands(t *testing.T) {
	r := replPiped(t, ":help\n:nosuch\n:attached\n:quit\nprint('not reached')\n")
	if !strings.Contains(r.stdout, ":detach N") || !strings.Contains(r.stdout, "nothing is attached\n") || strings.Contains(r.stdout, "not reached") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	if r.stderr != "dstar: unknown command :nosuch (:help lists them)\n" || r.code != 0 {
		t.Errorf("stderr %q, exit %d", r.stderr, r.code)
	}
}

func TestREPLPipedDClauses(t *testing.T) {
	bpftest.Require(t)
	r := replPiped(t, `BEGIN { printf("hello from D\n"); @calls["begin"] = count(); }
:agg
:attached
syscall::getppid:entry,
syscall::getpid:entry
/pid == 0/
{
	@[probefunc] = count(); /* } in a comment */
}
:attached
:detach 1
:attached
:detach 1
session.aggregations()["@calls"]
BEGIN { printf("x" }
print("still here")
`)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, re := range []string{
		`(?m):BEGIN hello from D$`,
		`(?m)^  begin +1$`,
		`(?m)^ +ID  PROBES\n +1  dtrace:::BEGIN\n +ID  PROBES\n +1  dtrace:::BEGIN\n +2  syscall:vmlinux:getpid:entry\n +syscall:vmlinux:getppid:entry\n +ID  PROBES\n +2  syscall:vmlinux:getpid:entry\n +syscall:vmlinux:getppid:entry\n`,
		`(?m)^\{\("begin",\): 1\}$`,
		`(?m)^still here$`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stdout) {
			t.Errorf("no %s in stdout:\n%s", re, r.stdout)
		}
	}
	for _, s := range []string{
		"dstar: enabling 1 matched 1 probe\n",
		"dstar: enabling 2 matched 2 probes\n",
		"dstar: no enabling 1 is attached (:attached lists them)\n",
		"syntax error near \"}\"",
	} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("no %q in stderr:\n%s", s, r.stderr)
		}
	}
}

// screen is what a program wrote to a pseudo-terminal, and a way to wait
// for what it has yet to write.
type screen struct {
	mu      sync.Mutex
	b       []byte
	changed chan struct{} // closed at the next write
	seen    int           // how far expect has read
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	close(s.changed)
	s.changed = make(chan struct{})
	return len(p), nil
}

// expect waits until want appears after what earlier calls matched, and
// moves past it.
func (s *screen) expect(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		s.mu.Lock()
		i := bytes.Index(s.b[s.seen:], []byte(want))
		if i >= 0 {
			s.seen += i + len(want)
			s.mu.Unlock()
			return
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			s.mu.Lock()
			defer s.mu.Unlock()
			t.Fatalf("no %q after %q", want, s.b[:s.seen])
		}
	}
}

// openPTY opens a pseudo-terminal: the master side, and the terminal a
// program runs on.
func openPTY(t *testing.T) (master, tty *os.File) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("TIOCGPTN: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pty: %v", err)
	}
	// liner needs a width to edit in.
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120}); err != nil {
		t.Fatal(err)
	}
	return master, tty
}

func TestREPLTerminal(t *testing.T) {
	bpftest.Require(t)
	master, tty := openPTY(t)
	defer master.Close()
	home := t.TempDir()
	// No arguments on a terminal is the REPL.
	cmd := exec.Command(dstarBin)
	cmd.Env = append(os.Environ(), "HOME="+home, "TERM=xterm")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	defer cmd.Process.Kill()
	scr := &screen{changed: make(chan struct{})}
	go io.Copy(scr, master)
	send := func(s string) {
		if _, err := master.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}

	scr.expect(t, "dstar> ")
	// A multi-line statement: the continuation prompt, then the value.
	send("def f(x):\r")
	scr.expect(t, "...> ")
	send("    return x * 2\r")
	scr.expect(t, "...> ")
	send("\r")
	scr.expect(t, "dstar> ")
	send("f(21)\r")
	scr.expect(t, "42")
	scr.expect(t, "dstar> ")

	// Tab completes a global.
	send("dtra\t")
	scr.expect(t, "dtrace")
	send(".args\r")
	scr.expect(t, "[]")
	scr.expect(t, "dstar> ")

	// Ctrl-C at the prompt drops the line.
	// liner prints the prompt before it turns ISIG off, so a Ctrl-C sent
	// at once could reach the tty driver as SIGINT; the echo of the line
	// shows liner is reading.
	send("nosuch_name")
	scr.expect(t, "nosuch_name")
	send("\x03")
	scr.expect(t, "^C")
	scr.expect(t, "dstar> ")

	// A D clause, then :run until Ctrl-C: the records show while :run
	// runs, and the enabling is still attached afterwards.
	send(`tick-20ms { printf("tock\n"); }` + "\r")
	scr.expect(t, "enabling 1 matched 1 probe")
	scr.expect(t, "dstar> ")
	send(":run\r")
	scr.expect(t, ":run")
	scr.expect(t, "tock")
	send("\x03")
	scr.expect(t, "dstar> ")
	send(":attached\r")
	scr.expect(t, "1  profile:::tick-20ms")
	scr.expect(t, "dstar> ")

	// Ctrl-D leaves, with status 0.
	send("\x04")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("dstar: %v\n%s", err, scr.b)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("dstar did not exit after Ctrl-D:\n%s", scr.b)
	}
	history, _ := os.ReadFile(filepath.Join(home, ".dstar_history"))
	if !strings.Contains(string(history), "def f(x):\n") || !strings.Contains(string(history), ":attached\n") {
		t.Errorf("history: %q", history)
	}
}
