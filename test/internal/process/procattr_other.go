//go:build !linux

package process

import "syscall"

// sysProcAttr puts the child in its own process group so Stop can signal it
// and anything it spawned at once. Only Linux can also tie the child's life
// to its parent; elsewhere a killed test binary may leave it running.
// Mount namespaces (newMountNS) are Linux only; Start refuses them here.
func sysProcAttr(newMountNS bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
