package tracefs

import (
	"runtime"
	"sync"
)

// FormatsOf returns the formats of evs, in order, reading the ones not yet
// cached in parallel: a script on syscall:::entry needs hundreds of format
// files, and each read is a system call's worth of kernel work.
func FormatsOf(evs []Event) ([]*Format, error) {
	out := make([]*Format, len(evs))
	errs := make([]error, len(evs))
	workers := min(len(evs), 4*runtime.GOMAXPROCS(0), 16)
	if workers <= 1 {
		for i, e := range evs {
			if out[i], errs[i] = FormatOf(e.Group, e.Name); errs[i] != nil {
				return nil, errs[i]
			}
		}
		return out, nil
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = FormatOf(evs[i].Group, evs[i].Name)
			}
		}()
	}
	for i := range evs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
