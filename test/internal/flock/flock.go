//go:build linux

// Package flock holds machine-wide locks for harnesses with fixed names (a
// node, a Docker engine): one at a time per machine.
package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Acquire waits until it holds the exclusive lock on the file at path, or
// ctx ends. Closing the returned file releases the lock; so does the death
// of the process, however it dies. what names the holder in errors.
func Acquire(ctx context.Context, path, what string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("another %s runs on this machine (lock %s): %w", what, path, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
