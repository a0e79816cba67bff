//go:build !linux

package multicluster

import "time"

// cpuTime returns how long f takes: where the CPU time of a thread cannot
// be read, the time that passes.
func cpuTime(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}
