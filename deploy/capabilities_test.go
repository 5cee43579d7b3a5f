package deploy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dstar-trace/dstar/providers/bpftest"
	"github.com/dstar-trace/dstar/providers/tracefs"
)

// dstarBin is the binary TestCapabilities runs, built once.
var dstarBin string

func TestMain(m *testing.M) { bpftest.MainWithDstar(m, "../cmd/dstar", &dstarBin) }

// nobody is the user the traced process runs as: not dstar's, so reading
// its /proc files takes CAP_SYS_PTRACE, and its private directory takes
// CAP_DAC_READ_SEARCH.
const nobody = 65534

// victimSrc blocks until its standard input closes, in main.main.
const victimSrc = `package main

import (
	"io"
	"os"
)

func main() { io.Copy(io.Discard, os.Stdin) }
`

// capCheck is one thing dstar does on a node; run returns why it failed.
type capCheck struct {
	name string
	run  func(ctx context.Context, caps []string) error
}

// TestCapabilities runs dstar as root with exactly the DaemonSet's
// capabilities (its bounding set, so that root keeps no others) and
// checks that they suffice for what dstar does on a node, and that
// without any one of them something fails. It is the container without
// the container: host PID namespace and mounts are this machine's own.
func TestCapabilities(t *testing.T) {
	setpriv := requirePod(t)
	m := loadManifests(t)
	ds, c := m.daemonSet(t)
	caps, noNewPrivs := capabilities(c.SecurityContext)
	if !ds.Spec.Template.Spec.HostPID {
		t.Fatal("the DaemonSet has no hostPID: this test, run in the host's PID namespace, would not show what the pod can do")
	}
	dstar := func(ctx context.Context, caps []string, args ...string) *exec.Cmd {
		return withCapabilities(ctx, setpriv, caps, noNewPrivs, dstarBin, args...)
	}
	victim := startVictim(t)
	kernelNames := kallsymsShown()

	checks := []capCheck{
		{"load and attach a program with a perf event", func(ctx context.Context, caps []string) error {
			return expect(dstar(ctx, caps, "-q", "-n", `tick-1ms /++n == 3/ { printf("ticked\n"); exit(0); }`), "ticked")
		}},
		{"place a pid probe in another user's process", func(ctx context.Context, caps []string) error {
			return expect(dstar(ctx, caps, "-q", "-n", fmt.Sprintf(
				`pid%d:victim:main.main:entry { } BEGIN { printf("attached\n"); exit(0); }`, victim)), "attached")
		}},
	}
	if kernelNames == hiddenAlways {
		t.Log("kernel.kptr_restrict=2 hides kernel addresses from every process: stack() names are not checked")
	} else {
		checks = append(checks, capCheck{"name kernel functions in stack()", func(ctx context.Context, caps []string) error {
			return kernelStack(ctx, dstar(ctx, caps, "-q", "-n", fmt.Sprintf(
				`BEGIN { printf("ready\n"); } syscall::getppid:entry /pid == %d/ { stack(); exit(0); }`, os.Getpid())))
		}})
	}
	run := func(caps []string) (failed []string) {
		for _, ch := range checks {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			err := ch.run(ctx, caps)
			cancel()
			if err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", ch.name, err))
			}
		}
		return failed
	}

	for _, f := range run(caps) {
		t.Errorf("with the DaemonSet's capabilities %v, cannot %s", caps, f)
	}
	for i, c := range caps {
		without := append(append([]string{}, caps[:i]...), caps[i+1:]...)
		failed := run(without)
		if len(failed) == 0 {
			if c == "syslog" && kernelNames == shownToAll {
				t.Logf("without syslog: nothing fails, as this kernel shows kernel addresses to all (kptr_restrict=0, perf_event_paranoid<=1)")
				continue
			}
			t.Errorf("without %s dstar does all it does with it: the DaemonSet grants more than dstar needs", c)
			continue
		}
		t.Logf("without %s: cannot %s", c, strings.Join(failed, "; "))
	}
}

// requirePod skips t unless this machine can run dstar as the
// DaemonSet's pod does, and returns setpriv's path: root (for BPF), setpriv
// (to keep only the container's capabilities) and tracefs mounted (the
// pod has the node's: without CAP_SYS_ADMIN dstar could not mount it).
func requirePod(t *testing.T) string {
	t.Helper()
	bpftest.Require(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		bpftest.Skip(t, "setpriv (util-linux) is not installed: it runs dstar with the DaemonSet's capabilities only")
	}
	if _, err := tracefs.Dir(); err != nil {
		bpftest.Skip(t, err.Error())
	}
	return setpriv
}

// capabilities returns the capabilities a container adds, named as
// setpriv names them, and whether it runs with no_new_privs.
func capabilities(sc *corev1.SecurityContext) (caps []string, noNewPrivs bool) {
	for _, cp := range sc.Capabilities.Add {
		caps = append(caps, strings.ToLower(strings.TrimPrefix(string(cp), "CAP_")))
	}
	return caps, sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation
}

// withCapabilities runs a program as root with capabilities caps and no
// others, as a container that drops all and adds caps runs it: caps is
// its bounding set, so root gets only those at exec.
func withCapabilities(ctx context.Context, setpriv string, caps []string, noNewPrivs bool, name string, args ...string) *exec.Cmd {
	set := "-all"
	for _, c := range caps {
		set += ",+" + c
	}
	pre := []string{"--bounding-set", set, "--inh-caps", "-all"}
	if noNewPrivs {
		pre = append(pre, "--no-new-privs")
	}
	return exec.CommandContext(ctx, setpriv, append(append(pre, "--", name), args...)...)
}

// expect runs cmd and checks that it prints want alone on a line.
func expect(cmd *exec.Cmd, want string) error {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	for line := range strings.Lines(stdout.String()) {
		if strings.TrimSpace(line) == want && err == nil {
			return nil
		}
	}
	return fmt.Errorf("%v: %s%s", err, stdout.String(), firstLine(stderr.String()))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// kernelStack runs cmd, a program that prints ready, then the kernel
// stack of this process's next getppid call, and checks that the stack's
// frames are named (vmlinux`func+0x1f), not hex addresses.
func kernelStack(ctx context.Context, cmd *exec.Cmd) error {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		cmd.Wait()
		return fmt.Errorf("no ready: %s", firstLine(stderr.String()))
	}
	// getppid until dstar, having printed the stack, exits.
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			default:
				syscall.Getppid()
			}
		}
	}()
	var frames []string
	for sc.Scan() {
		if f := strings.TrimSpace(sc.Text()); f != "" {
			frames = append(frames, f)
		}
	}
	close(done)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%v: %s", err, firstLine(stderr.String()))
	}
	if len(frames) == 0 {
		return errors.New("an empty stack")
	}
	for _, f := range frames {
		if !strings.HasPrefix(f, "vmlinux`") {
			return fmt.Errorf("unnamed kernel frames: %s", strings.Join(frames, " "))
		}
	}
	return nil
}

// How this kernel shows /proc/kallsyms' addresses.
const (
	hiddenUnlessSyslog = iota // to CAP_SYSLOG only
	shownToAll                // kptr_restrict=0 and perf_event_paranoid<=1
	hiddenAlways              // kptr_restrict=2
)

// kallsymsShown says to whom this kernel shows /proc/kallsyms' addresses,
// by the rule of the kernel's kallsyms_show_value.
func kallsymsShown() int {
	read := func(name string) (int, bool) {
		b, err := os.ReadFile("/proc/sys/kernel/" + name)
		if err != nil {
			return 0, false
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		return n, err == nil
	}
	kptr, ok1 := read("kptr_restrict")
	paranoid, ok2 := read("perf_event_paranoid")
	switch {
	case ok1 && kptr >= 2:
		return hiddenAlways
	case ok1 && ok2 && kptr == 0 && paranoid <= 1:
		return shownToAll
	}
	return hiddenUnlessSyslog
}

// startVictim starts a Go program as nobody from a directory only nobody
// may enter, and returns its pid; it ends with the test.
func startVictim(t *testing.T) int {
	t.Helper()
	dir := t.TempDir()
	// nobody must reach its directory through the test's.
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	private := filepath.Join(dir, "private")
	if err := os.Mkdir(private, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := bpftest.BuildGo(t, private, "victim", victimSrc)
	if err := filepath.Walk(private, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nobody, nobody)
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	return cmd.Process.Pid
}
