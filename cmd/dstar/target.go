package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/dstar-trace/dstar/providers/elfsym"
	"github.com/dstar-trace/dstar/providers/procmaps"
	"golang.org/x/sys/unix"
)

// child is a process started with -c: it is held stopped (by ptrace) at
// exec, or further on (advance), until every probe is attached, so that no
// event of the program's is missed.
type child struct {
	cmd    *exec.Cmd
	line   string        // the command line, for messages
	exited chan struct{} // closed once state is set
	state  *os.ProcessState
}

// startHeld starts command line cmdline (run by the shell, as dtrace(1)
// does with -c) and holds it at exec, before the dynamic linker runs, so
// that its very first system call can be traced. advance moves it on.
func startHeld(cmdline string) (*child, error) {
	if err := checkExecutable(cmdline); err != nil {
		return nil, err
	}
	// The tracer of a ptraced child is the thread that forked it; lock it
	// until the child is released.
	runtime.LockOSThread()
	cmd := exec.Command("/bin/sh", "-c", "exec "+cmdline)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("failed to execute %s: %v", cmdline, err)
	}
	// The shell execs the command, so the process stops twice: at the
	// shell's exec and at the command's.
	pid := cmd.Process.Pid
	for stops := 0; stops < 2; stops++ {
		var ws unix.WaitStatus
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
			runtime.UnlockOSThread()
			return nil, fmt.Errorf("failed to wait for %s: %v", cmdline, err)
		}
		if ws.Exited() || ws.Signaled() {
			runtime.UnlockOSThread()
			return nil, fmt.Errorf("failed to execute %s: process exited", cmdline)
		}
		if stops == 0 {
			unix.PtraceCont(pid, 0)
		}
	}
	return &child{cmd: cmd, line: cmdline, exited: make(chan struct{})}, nil
}

// checkExecutable reports a command that cannot be run as dtrace does
// ("failed to execute FILE: No such file or directory"), before the shell
// would in its own words. A first word the shell would expand is left to
// the shell.
func checkExecutable(cmdline string) error {
	f := strings.Fields(cmdline)
	if len(f) == 0 || strings.ContainsAny(f[0], "$`\"'\\=(){}<>|&;*?[~") {
		return nil
	}
	file := f[0]
	path := file
	if !strings.Contains(file, "/") {
		p, err := exec.LookPath(file)
		if err != nil {
			return fmt.Errorf("failed to execute %s: %s", file, errnoText(syscall.ENOENT))
		}
		path = p
	}
	if err := unix.Access(path, unix.X_OK); err != nil {
		if errno, ok := err.(syscall.Errno); ok {
			return fmt.Errorf("failed to execute %s: %s", file, errnoText(errno))
		}
		return fmt.Errorf("failed to execute %s: %v", file, err)
	}
	return nil
}

// errnoText is an errno's message as strerror(3) words it, capitalized.
func errnoText(e syscall.Errno) string {
	s := e.Error()
	return strings.ToUpper(s[:1]) + s[1:]
}

// advance runs a child held at exec on to where evaltime (DTrace's option)
// says, and holds it there: "exec" (or "") leaves it; "preinit" stops it at its
// executable's entry point, its shared libraries mapped, so that pid
// probes on them can be found; "postinit" and "main" stop it at main,
// every initialiser run. It works on amd64 only: elsewhere the child stays
// at exec, where only its executable's probes can be found. After an error
// the child can only be killed.
func (c *child) advance(evaltime string) error {
	if evaltime == "exec" || evaltime == "" || runtime.GOARCH != "amd64" {
		return nil
	}
	pid := c.cmd.Process.Pid
	err := runToEntry(pid)
	if err == nil && (evaltime == "postinit" || evaltime == "main") {
		err = runToMain(pid)
	}
	if err != nil {
		return fmt.Errorf("failed to hold %s at %s: %v", c.line, evaltime, err)
	}
	return nil
}

// release lets the held child run and watches for its exit.
func (c *child) release() {
	unix.PtraceDetach(c.cmd.Process.Pid)
	runtime.UnlockOSThread()
	go func() {
		c.cmd.Wait()
		c.state = c.cmd.ProcessState
		close(c.exited)
	}()
}

// kill ends a child that never got to run (compile or enable failed).
func (c *child) kill() {
	c.cmd.Process.Kill()
	unix.PtraceDetach(c.cmd.Process.Pid)
	runtime.UnlockOSThread()
	c.cmd.Wait()
}

// exitNotice is what dtrace(1) says when a traced process goes: how it
// ended when dstar started it (state), that it has exited otherwise.
func exitNotice(pid int, state *os.ProcessState) string {
	if state != nil {
		if ws, ok := state.Sys().(syscall.WaitStatus); ok {
			switch {
			case ws.Signaled():
				return fmt.Sprintf("pid %d terminated by %s", pid, unix.SignalName(ws.Signal()))
			case ws.Exited() && ws.ExitStatus() != 0:
				return fmt.Sprintf("pid %d exited with status %d", pid, ws.ExitStatus())
			}
		}
	}
	return fmt.Sprintf("pid %d has exited", pid)
}

// watchPid returns a channel closed when process pid exits.
func watchPid(pid int) (<-chan struct{}, error) {
	done := make(chan struct{})
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if err == unix.ESRCH {
			return nil, fmt.Errorf("failed to grab pid %d: No such process", pid) // dtrace(1)'s words
		}
		return nil, fmt.Errorf("failed to grab pid %d: %v", pid, err)
	}
	go func() {
		defer close(done)
		defer unix.Close(fd)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, int((time.Hour).Milliseconds()))
			if n > 0 || (err != nil && err != unix.EINTR) {
				return
			}
		}
	}()
	return done, nil
}

// mainAddress returns the run-time address of the main function of process
// pid's executable, from its symbols and mappings.
func mainAddress(pid int) (uint64, error) {
	exe, err := procmaps.Executable(pid)
	if err != nil {
		return 0, err
	}
	f, err := elfsym.Open(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return 0, err
	}
	s, ok := f.Lookup("main")
	if !ok {
		return 0, fmt.Errorf("%s has no function main", exe)
	}
	off, err := f.FileOffset(s.Value)
	if err != nil {
		return 0, err
	}
	ms, err := procmaps.Read(pid)
	if err != nil {
		return 0, err
	}
	for _, m := range ms {
		if m.Path == exe && m.Exec() && m.Offset <= off && off < m.Offset+(m.End-m.Start) {
			return m.Start + off - m.Offset, nil
		}
	}
	return 0, fmt.Errorf("main of %s is not mapped", exe)
}
