package bpftest

import (
	"os/exec"
	"sync"
	"testing"
)

// ProfileLoad are shell loops that keep a machine busy the way a
// profile test wants: short-lived programs coming and going, and a CPU
// spinning (cpu-clock events barely fire on idle CPUs).
var ProfileLoad = []string{
	"while :; do ls /usr/bin >/dev/null; sed -n 1p /etc/passwd >/dev/null; done",
	"while :; do :; done",
}

// StartLoad runs each shell script in the background until the returned
// stop is called, or the test ends.
func StartLoad(t testing.TB, scripts ...string) (stop func()) {
	t.Helper()
	var cmds []*exec.Cmd
	var once sync.Once
	stop = func() {
		once.Do(func() {
			for _, c := range cmds {
				c.Process.Kill()
				c.Wait()
			}
		})
	}
	t.Cleanup(stop)
	for _, sh := range scripts {
		c := exec.Command("/bin/sh", "-c", sh)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	return stop
}
