package release

import "syscall"

// umask sets the process's file mode creation mask, which the commands it
// starts inherit, and returns the previous one.
func umask(mask int) int { return syscall.Umask(mask) }
