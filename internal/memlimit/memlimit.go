// Package memlimit sets the Go runtime's soft memory limit (GOMEMLIMIT) from
// the memory limit of the process's cgroup, unless the operator set one.
//
// A relist (after the API server restarts, or its watches expire) holds the
// old cache and the new list at once; the garbage of the list, left to the
// collector's default pacing (GOGC=100), can take the heap past a
// container's limit before a collection runs. With a soft limit below the
// cgroup's, the collector runs harder as the heap nears it instead.
package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
)

// Fraction is the part of the cgroup's limit the soft limit takes: the rest
// is for what the Go runtime does not count (the binary's text, memory the
// kernel charges to the cgroup for the process) and for the collector's lag.
const Fraction = 0.9

// System reads the cgroup files of the running process.
var System = FS{Root: "/", ProcSelfCgroup: "/proc/self/cgroup"}

// FS is where the cgroup files are: Root holds sys/fs/cgroup, and
// ProcSelfCgroup lists the process's cgroups. Tests point both at fakes.
type FS struct {
	Root           string
	ProcSelfCgroup string
}

// Limit returns the memory limit of the process's cgroup in bytes: the
// lowest of cgroup v2's memory.max, or v1's memory.limit_in_bytes, of its
// cgroup and every ancestor up to the mount. ok is false when no limit
// applies (none is set, "max", or the files cannot be read).
func (f FS) Limit() (limit int64, ok bool, err error) {
	data, err := os.ReadFile(f.ProcSelfCgroup)
	if err != nil {
		return 0, false, err
	}
	limit = math.MaxInt64
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path (cgroups(7))
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir, file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dir, file = path.Join(f.Root, "sys/fs/cgroup"), "memory.max"
		case hasController(parts[1], "memory"):
			dir, file = path.Join(f.Root, "sys/fs/cgroup/memory"), "memory.limit_in_bytes"
		default:
			continue
		}
		if l, found, err := lowest(dir, parts[2], file); err != nil {
			return 0, false, err
		} else if found && l < limit {
			limit = l
		}
	}
	if limit == math.MaxInt64 {
		return 0, false, nil
	}
	return limit, true, nil
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// lowest reads file in mount/cgroupPath and each of its parents up to
// mount, and returns the lowest limit found. Inside a container with its own
// cgroup namespace the path is "/" and the mount is the container's cgroup.
func lowest(mount, cgroupPath, file string) (int64, bool, error) {
	best, found := int64(math.MaxInt64), false
	p := path.Clean("/" + cgroupPath)
	for {
		l, ok, err := readLimit(path.Join(mount, p, file))
		if err != nil {
			return 0, false, err
		}
		if ok && l < best {
			best, found = l, true
		}
		if p == "/" {
			return best, found, nil
		}
		p = path.Dir(p)
	}
}

// v1NoLimit: cgroup v1 writes no limit as the largest page-aligned int64.
const v1NoLimit = math.MaxInt64 &^ 4095

// readLimit reads one limit file: a number of bytes, or "max". A file that
// does not exist (a parent outside the container's view) is no limit.
func readLimit(name string) (int64, bool, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("%s: %q is not a limit: %w", name, s, err)
	}
	if n <= 0 || n >= v1NoLimit {
		return 0, false, nil
	}
	return n, true, nil
}

// Apply sets the soft memory limit to Fraction of the cgroup's limit, unless
// GOMEMLIMIT is set in the environment (getenv) or no cgroup limit applies.
// It returns what it did, for the log.
func (f FS) Apply(getenv func(string) string) string {
	if v := getenv("GOMEMLIMIT"); v != "" {
		return "GOMEMLIMIT=" + v + " set by the environment"
	}
	limit, ok, err := f.Limit()
	switch {
	case err != nil:
		return fmt.Sprintf("GOMEMLIMIT not set: reading the cgroup memory limit: %v", err)
	case !ok:
		return "GOMEMLIMIT not set: no cgroup memory limit"
	}
	soft := int64(float64(limit) * Fraction)
	debug.SetMemoryLimit(soft)
	return fmt.Sprintf("GOMEMLIMIT=%d (%.0f%% of the cgroup memory limit %d)", soft, Fraction*100, limit)
}
