// Command loadgen makes the events the benchmarks and tests trace: a tight
// loop of getpid (or getppid) system calls, on one thread or several. It
// prints the mean nanoseconds per call.
package main

import (
	"flag"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"time"
)

func main() {
	n := flag.Int("n", 5_000_000, "system calls to make, in all")
	threads := flag.Int("threads", 1, "threads to share them")
	ppid := flag.Bool("getppid", false, "call getppid, which the Go runtime never does, so that a count can be exact")
	flag.Parse()
	nr := uintptr(syscall.SYS_GETPID)
	if *ppid {
		nr = syscall.SYS_GETPPID
	}
	var wg sync.WaitGroup
	start := time.Now()
	for t := 0; t < *threads; t++ {
		calls := *n / *threads
		if t == 0 {
			calls += *n % *threads
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			for i := 0; i < calls; i++ {
				syscall.RawSyscall(nr, 0, 0, 0)
			}
		}()
	}
	wg.Wait()
	fmt.Printf("%.1f\n", float64(time.Since(start).Nanoseconds())/float64(*n))
}
