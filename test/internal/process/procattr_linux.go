//go:build linux

package process

import "syscall"

// sysProcAttr puts the child in its own process group, so Stop can signal it
// and anything it spawned at once, and asks the kernel to SIGKILL it when the
// thread that started it dies. Together with Start locking that thread
// for the child's lifetime, this means a test binary that is killed (timeout,
// SIGKILL, crash) does not leave a daemon running.
//
// With newMountNS the child starts in a mount namespace of its own, in which
// Go makes every mount private, so the child's mounts stay out of the
// machine's namespace.
func sysProcAttr(newMountNS bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if newMountNS {
		attr.Unshareflags = syscall.CLONE_NEWNS
	}
	return attr
}
