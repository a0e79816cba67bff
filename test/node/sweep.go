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

	hostfootprint "github.com/coredns-mcs/coredns-mcs/test/internal/footprint"
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

// footprint names the node's processes (and so its containers' and shims')
// and cgroups.
var footprint = hostfootprint.Footprint{Cgroup: cgroupName, Markers: []string{baseDir + "/"}}

func nodeProcesses() []int { return footprint.Processes() }

func killNodeProcesses() error { return footprint.Kill() }

// createCgroups creates the cgroup kubelet puts pods under (its
// cgroupRoot) in every hierarchy: kubelet requires it to exist in each.
func createCgroups() error { return footprint.CreateCgroups() }

func removeCgroups() error { return footprint.RemoveCgroups() }

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
