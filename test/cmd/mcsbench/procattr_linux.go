//go:build linux

package main

import "syscall"

// childAttr gives the child its own process group and has the kernel kill
// it when the benchmark dies, so no coredns or dnsperf outlives a run.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
