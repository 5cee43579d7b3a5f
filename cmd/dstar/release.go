package main

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"github.com/dstar-trace/dstar/providers/tracefs"
)

// The kernel releases a tracepoint's perf event only after a grace
// period, under a global mutex: about 27 ms each here, one after another
// whoever closes them, so 1,584 tracepoints take 43 s, and a process that
// exits holding them waits that long in exit. dstar detaches their
// programs at once (nothing fires any more), writes its output, and then
// hands the events to a releaser, a process of its own in a session of
// its own that closes them and exits, so that neither the user nor a
// script waiting on dstar waits on the kernel's clean-up. Every object is
// gone once the releaser is (a kill of either closes what it holds).

// releaseEnv, set to a count N, makes dstar a releaser: it closes file
// descriptors 3 to N+2 and exits.
const releaseEnv = "DSTAR_RELEASE_FILES"

// releaseInline is how many files are closed in dstar itself rather than
// by a releaser: a few grace periods cost less than starting a process.
const releaseInline = 4

// releaser gathers the files the session hands over (engine
// Options.Release).
type releaser struct {
	mu    sync.Mutex
	files []*os.File
}

func (r *releaser) add(fs []*os.File) {
	r.mu.Lock()
	r.files = append(r.files, fs...)
	r.mu.Unlock()
}

// handOff closes the files gathered, through a releaser when they are
// many. It is called when the output is complete.
func (r *releaser) handOff() {
	r.mu.Lock()
	fs := r.files
	r.files = nil
	r.mu.Unlock()
	releaseNow(fs)
}

// releaseNow closes fs, through a releaser when they are many: what
// scripts and the REPL do at each detach, their output being complete.
func releaseNow(fs []*os.File) {
	if len(fs) > releaseInline {
		if self, err := os.Executable(); err == nil {
			cmd := exec.Command(self)
			cmd.Args = []string{"dstar (releasing perf events)"}
			cmd.Env = []string{releaseEnv + "=" + strconv.Itoa(len(fs))}
			cmd.ExtraFiles = fs
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if cmd.Start() == nil {
				// Not waited for: once dstar exits, init reaps it.
				cmd.Process.Release()
			}
		}
	}
	// The releaser holds its own copies; closing these is quick.
	for _, f := range fs {
		f.Close()
	}
}

// releaseFiles is the releaser: it closes the n files it was given, each
// while no session is attaching (tracefs.ClosePerfEvents).
func releaseFiles(n string) int {
	count, err := strconv.Atoi(n)
	if err != nil {
		return exitUsage
	}
	fds := make([]int, count)
	for i := range fds {
		fds[i] = 3 + i
	}
	tracefs.ClosePerfEvents(fds)
	return exitOK
}
