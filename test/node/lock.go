//go:build linux

package node

import (
	"os"
	"path/filepath"
)

// lockPath is the lock one node at a time holds (test/internal/flock).
var lockPath = filepath.Join(os.TempDir(), "coredns-mcs-node.lock")
