package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/dstar-trace/dstar/providers/elfsym"
	"github.com/dstar-trace/dstar/providers/procmaps"
	"golang.org/x/sys/unix"
)

// child is a process started with -c: it is held stopped (by ptrace),
// by default at its executable's entry point, after the dynamic linker has
// mapped its libraries and before its own code runs, until every probe is
// attached, so that no event of the program's is missed.
type child struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startHeld starts command line cmdline (run by the shell, as dtrace(1)
// does with -c) and holds it where evaltime says (DTrace's option): "exec"
// at exec, before the dynamic linker runs; "preinit" (the default, "") at
// the executable's entry point, its libraries mapped; "postinit" and
// "main" at main, every initialiser run.
func startHeld(cmdline, evaltime string) (*child, error) {
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
	// Past exec, its shared libraries are mapped when probes on them are
	// looked up. Where that cannot be done it stays held at exec: only its
	// executable's probes can then be found.
	var err error
	if evaltime != "exec" && runtime.GOARCH == "amd64" {
		err = runToEntry(pid)
		if err == nil && (evaltime == "postinit" || evaltime == "main") {
			err = runToMain(pid)
		}
	}
	if err != nil {
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
