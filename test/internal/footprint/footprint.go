//go:build linux

// Package footprint finds and removes what a harness that runs containers
// (a node's containerd, a Docker engine) leaves on the machine outside its
// own namespaces: processes that outlive the test binary (containerd
// shims, containers), and cgroups.
package footprint

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Footprint names a harness's processes and cgroups: its processes are in
// the cgroup Cgroup (in any hierarchy, at any depth below it) or name one
// of Markers (directories only the harness uses) in their command line.
type Footprint struct {
	Cgroup  string
	Markers []string
}

// Processes returns the pids of the harness's processes, other than this
// one.
func (f Footprint) Processes() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if f.inCgroup(pid) || f.named(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (f Footprint) inCgroup(pid int) bool {
	if f.Cgroup == "" {
		return false
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return false
	}
	// Lines are ID:CONTROLLERS:PATH.
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && (parts[2] == "/"+f.Cgroup || strings.HasPrefix(parts[2], "/"+f.Cgroup+"/")) {
			return true
		}
	}
	return false
}

func (f Footprint) named(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return slices.ContainsFunc(f.Markers, func(m string) bool { return strings.Contains(string(data), m) })
}

// Kill SIGKILLs the harness's processes until none is left.
func (f Footprint) Kill() error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		pids := f.Processes()
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes still running after SIGKILL: %v", pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// CgroupMounts returns the mount points of the cgroup hierarchies (v1
// controllers, named hierarchies, or the v2 unified one).
func CgroupMounts() ([]string, error) {
	file, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var mounts []string
	s := bufio.NewScanner(file)
	for s.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
		fields := strings.Fields(s.Text())
		sep := slices.Index(fields, "-")
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if fstype := fields[sep+1]; (fstype == "cgroup" || fstype == "cgroup2") && fields[3] == "/" {
			if !slices.Contains(mounts, fields[4]) {
				mounts = append(mounts, fields[4])
			}
		}
	}
	return mounts, s.Err()
}

// Cgroups returns the harness's top cgroup in each hierarchy where it
// exists.
func (f Footprint) Cgroups() ([]string, error) {
	mounts, err := CgroupMounts()
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, m := range mounts {
		if _, err := os.Stat(filepath.Join(m, f.Cgroup)); err == nil {
			dirs = append(dirs, filepath.Join(m, f.Cgroup))
		}
	}
	return dirs, nil
}

// CreateCgroups creates the cgroup in every hierarchy. A new cpuset cgroup
// gets its parent's CPUs and memory nodes (it has none otherwise).
func (f Footprint) CreateCgroups() error {
	mounts, err := CgroupMounts()
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	if len(mounts) == 0 {
		return errors.New("no cgroup file system is mounted")
	}
	for _, m := range mounts {
		dir := filepath.Join(m, f.Cgroup)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			data, err := os.ReadFile(filepath.Join(m, file))
			if err != nil {
				continue // not the cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
				return fmt.Errorf("cgroup %s: %w", filepath.Join(dir, file), err)
			}
		}
	}
	return nil
}

// RemoveCgroups removes the cgroup and those below it, innermost first, in
// every hierarchy. Their processes must be gone.
func (f Footprint) RemoveCgroups() error {
	roots, err := f.Cgroups()
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	var errs []error
	for _, root := range roots {
		var dirs []string
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		slices.Reverse(dirs)
		for _, d := range dirs {
			// A cgroup whose last process just died may be busy for a
			// moment.
			var rmErr error
			for range 50 {
				if rmErr = syscall.Rmdir(d); rmErr == nil || errors.Is(rmErr, syscall.ENOENT) {
					rmErr = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if rmErr != nil {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, rmErr))
			}
		}
	}
	return errors.Join(errs...)
}
