package multicluster

import (
	"runtime"
	"syscall"
	"time"
)

// cpuTime returns the CPU time f takes on the thread that runs it: what the
// work costs, not how long it waited for a CPU on a busy machine. Work f
// hands to other goroutines, and the collector's background work, are not
// counted.
func cpuTime(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, okBefore := threadCPU()
	start := time.Now()
	f()
	after, okAfter := threadCPU()
	if !okBefore || !okAfter {
		return time.Since(start)
	}
	return after - before
}

func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
