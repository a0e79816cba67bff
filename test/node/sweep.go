//go:build linux

package node

import (
	"bufio"
	"encoding/json"
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

// sweep undoes everything a node leaves on the machine, whether it stopped
// or was killed: it kills the node's remaining processes (containerd shims
// and containers outlive a killed test), restores the sysctls kubelet
// changed, removes the cgroup root and the node's directory. Node
// processes are recognised by their cgroup (under cgroupName) or by the
// node's directory in their command line: nothing else has either.
func sweep() error {
	var errs []error
	if err := killNodeProcesses(); err != nil {
		errs = append(errs, err)
	}
	if err := restoreSysctls(); err != nil {
		errs = append(errs, err)
	}
	if err := removeCgroups(); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(baseDir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", baseDir, err))
	}
	return errors.Join(errs...)
}

// nodeProcesses lists the pids of the node's processes.
func nodeProcesses() []int {
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
		if inNodeCgroup(pid) || cmdlineNamesNode(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func inNodeCgroup(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return false
	}
	// Lines are ID:CONTROLLERS:PATH.
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && (parts[2] == "/"+cgroupName || strings.HasPrefix(parts[2], "/"+cgroupName+"/")) {
			return true
		}
	}
	return false
}

func cmdlineNamesNode(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(data), baseDir+"/")
}

// killNodeProcesses SIGKILLs the node's processes until none is left.
func killNodeProcesses() error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		pids := nodeProcesses()
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node processes still running after SIGKILL: %v", pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cgroupMounts returns the mount points of the cgroup hierarchies (v1
// controllers, named hierarchies, or the v2 unified one).
func cgroupMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mounts []string
	s := bufio.NewScanner(f)
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

// createCgroups creates the cgroup kubelet puts pods under (its
// cgroupRoot) in every hierarchy: kubelet requires it to exist in each.
func createCgroups() error {
	mounts, err := cgroupMounts()
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	if len(mounts) == 0 {
		return errors.Join(ErrPrerequisite, errors.New("no cgroup file system is mounted"))
	}
	for _, m := range mounts {
		dir := filepath.Join(m, cgroupName)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		// A new cpuset cgroup has no CPUs and no memory nodes: give it
		// its parent's.
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

// removeCgroups removes the node's cgroups, innermost first. Their
// processes must be gone.
func removeCgroups() error {
	mounts, err := cgroupMounts()
	if err != nil {
		return fmt.Errorf("cgroups: %w", err)
	}
	var errs []error
	for _, m := range mounts {
		root := filepath.Join(m, cgroupName)
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
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
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

// kubeletSysctls are the global sysctls kubelet sets when they differ from
// what it wants (setupKernelTunables in pkg/kubelet/cm/
// container_manager_linux.go of Kubernetes v1.37.1).
var kubeletSysctls = []string{
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
}

func sysctlFile() string { return filepath.Join(baseDir, "sysctls.json") }

// saveSysctls records the values kubelet may change, before it starts.
func saveSysctls() error {
	saved := map[string]string{}
	for _, name := range kubeletSysctls {
		data, err := os.ReadFile(filepath.Join("/proc/sys", name))
		if err != nil {
			return fmt.Errorf("read sysctl %s: %w", name, err)
		}
		saved[name] = strings.TrimSpace(string(data))
	}
	data, err := json.Marshal(saved)
	if err != nil {
		return err
	}
	f, err := os.Create(sysctlFile())
	if err != nil {
		return fmt.Errorf("save sysctls: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("save sysctls: %w", err)
	}
	// The file must survive a crash of the machine's test run, not just
	// of the test binary.
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("save sysctls: %w", err)
	}
	return f.Close()
}

// restoreSysctls writes back the values saveSysctls recorded, if any.
func restoreSysctls() error {
	data, err := os.ReadFile(sysctlFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("restore sysctls: %w", err)
	}
	var saved map[string]string
	if err := json.Unmarshal(data, &saved); err != nil {
		return fmt.Errorf("restore sysctls from %s: %w", sysctlFile(), err)
	}
	var errs []error
	for name, value := range saved {
		if !slices.Contains(kubeletSysctls, name) {
			continue // only what this package saves, whatever the file says
		}
		if err := os.WriteFile(filepath.Join("/proc/sys", name), []byte(value+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore sysctl %s=%s: %w", name, value, err))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, os.Remove(sysctlFile()))
	}
	return errors.Join(errs...)
}
