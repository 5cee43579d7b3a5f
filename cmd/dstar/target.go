package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// child is a process started with -c: it is held stopped (by ptrace) at its
// executable's entry point, after the dynamic linker has mapped its
// libraries and before its own code runs, until every probe is attached,
// so that no event of the program's is missed.
type child struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startHeld starts command line cmdline (run by the shell, as dtrace(1)
// does with -c) stopped at exec.
func startHeld(cmdline string) (*child, error) {
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
	// Hold it at its entry point rather than at exec, so that its shared
	// libraries are mapped when probes on them are looked up. Where that
	// cannot be done it stays held at exec: only its executable's probes
	// can then be found.
	if err := runToEntry(pid); err != nil && runtime.GOARCH == "amd64" {
		cmd.Process.Kill()
		unix.PtraceDetach(pid)
		runtime.UnlockOSThread()
		cmd.Wait()
		return nil, fmt.Errorf("failed to execute %s: %v", cmdline, err)
	}
	return &child{cmd: cmd, exited: make(chan struct{})}, nil
}

// release lets the held child run and watches for its exit.
func (c *child) release() {
	unix.PtraceDetach(c.cmd.Process.Pid)
	runtime.UnlockOSThread()
	go func() {
		c.cmd.Wait()
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

// watchPid returns a channel closed when process pid exits.
func watchPid(pid int) (<-chan struct{}, error) {
	done := make(chan struct{})
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
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
