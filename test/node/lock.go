//go:build linux

package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// lockPath is the lock one node at a time holds. The kernel releases it
// when the process holding it dies, however it dies.
var lockPath = filepath.Join(os.TempDir(), "coredns-mcs-node.lock")

// acquireLock waits until no other node runs on this machine.
func acquireLock(ctx context.Context) (*os.File, error) {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("node lock: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("node lock %s: %w", lockPath, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("another node runs on this machine (lock %s): %w", lockPath, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
