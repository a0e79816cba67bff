//go:build !linux

package main

import "syscall"

// childAttr gives the child its own process group. The benchmark reads
// /proc and pins CPUs with taskset, so it only runs on Linux; this keeps the
// package compiling elsewhere.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
