// Command loadgen makes the events the benchmarks trace: a tight loop of
// getpid system calls. It prints the mean nanoseconds per call.
package main

import (
	"flag"
	"fmt"
	"runtime"
	"syscall"
	"time"
)

func main() {
	n := flag.Int("n", 5_000_000, "system calls to make")
	flag.Parse()
	runtime.LockOSThread()
	start := time.Now()
	for i := 0; i < *n; i++ {
		syscall.RawSyscall(syscall.SYS_GETPID, 0, 0, 0)
	}
	fmt.Printf("%.1f\n", float64(time.Since(start).Nanoseconds())/float64(*n))
}
