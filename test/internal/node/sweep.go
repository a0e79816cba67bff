//go:build linux

package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	hostfootprint "github.com/coredns-mcs/coredns-mcs/test/internal/footprint"
)

// sweep undoes everything a node of layout l leaves on the machine, whether
// it stopped or was killed: it kills the node's remaining processes
// (containerd shims and containers outlive a killed test), restores the
// sysctls kubelet changed, removes the cgroup root and the node's
// directory. Node processes are recognised by their cgroup (under the
// layout's cgroup) or by the node's directory in their command line:
// nothing else has either. The caller holds l's lock.
func sweep(l Layout) error {
	var errs []error
	if err := l.footprint().Kill(); err != nil {
		errs = append(errs, err)
	}
	if err := restoreSysctls(l); err != nil {
		errs = append(errs, err)
	}
	if err := l.footprint().RemoveCgroups(); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(l.dir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", l.dir, err))
	}
	return errors.Join(errs...)
}

// sweepIdle sweeps what killed runs left of the clusters whose lock nobody
// holds, so that a killed multi-cluster run is cleaned up by the next node,
// whatever its index. A cluster that runs holds its lock and is left alone,
// and so is one whose watch lock a test holds (TestStartAfterKilledRun).
func sweepIdle() error {
	var errs []error
	for i := range MaxClusters {
		l := mustLayout(i)
		if _, err := os.Stat(l.dir); err != nil {
			if procs := l.footprint().Processes(); len(procs) == 0 {
				continue // nothing left of it
			}
		}
		watch, err := tryLock(l.watch)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if watch == nil {
			continue // a test watches what a killed node of it left
		}
		f, err := tryLock(l.lock)
		if err == nil && f != nil {
			errs = append(errs, sweep(l))
			f.Close()
		} else if err != nil {
			errs = append(errs, err)
		} // else it runs
		watch.Close()
	}
	return errors.Join(errs...)
}

// tryLock takes the exclusive lock on the file at path if nobody holds it:
// it returns the locked file, or nil when the lock is held.
func tryLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// footprint names the node's processes (and so its containers' and shims')
// and cgroups.
func (l Layout) footprint() hostfootprint.Footprint {
	return hostfootprint.Footprint{Cgroup: l.cgroup, Markers: []string{l.dir + "/"}}
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

// saveSysctls records the values kubelet may change, before it starts. The
// sysctls are the machine's, shared by every cluster: when another
// cluster's kubelet may have changed them already, its record (the values
// from before any kubelet) is copied, so that every record holds the
// machine's own values and restoring any of them, in any order, is right.
// A record is removed only after its values were written back.
func saveSysctls(l Layout) error {
	var saved map[string]string
	for i := range MaxClusters {
		if other := mustLayout(i); other.Index != l.Index {
			if s, err := readSysctls(other); err == nil && s != nil {
				saved = s
				break
			}
		}
	}
	if saved == nil {
		saved = map[string]string{}
		for _, name := range kubeletSysctls {
			data, err := os.ReadFile(filepath.Join("/proc/sys", name))
			if err != nil {
				return fmt.Errorf("read sysctl %s: %w", name, err)
			}
			saved[name] = strings.TrimSpace(string(data))
		}
	}
	data, err := json.Marshal(saved)
	if err != nil {
		return err
	}
	f, err := os.Create(l.sysctlFile())
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

// readSysctls returns what saveSysctls recorded for l, or nil.
func readSysctls(l Layout) (map[string]string, error) {
	data, err := os.ReadFile(l.sysctlFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("restore sysctls: %w", err)
	}
	var saved map[string]string
	if err := json.Unmarshal(data, &saved); err != nil {
		return nil, fmt.Errorf("restore sysctls from %s: %w", l.sysctlFile(), err)
	}
	return saved, nil
}

// restoreSysctls writes back the values saveSysctls recorded, if any.
func restoreSysctls(l Layout) error {
	saved, err := readSysctls(l)
	if err != nil || saved == nil {
		return err
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
		errs = append(errs, os.Remove(l.sysctlFile()))
	}
	return errors.Join(errs...)
}
