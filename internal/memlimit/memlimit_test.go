package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// fake writes files under a temporary root: name -> content.
func fake(t *testing.T, files map[string]string) FS {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return FS{Root: root, ProcSelfCgroup: filepath.Join(root, "proc/self/cgroup")}
}

func TestLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
		ok    bool
	}{
		{"v2 in a container's own namespace", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "178257920\n",
		}, 178257920, true},
		{"v2 unlimited", map[string]string{
			"proc/self/cgroup":         "0::/\n",
			"sys/fs/cgroup/memory.max": "max\n",
		}, 0, false},
		{"v2 nested: the lowest of the cgroup and its parents", map[string]string{
			"proc/self/cgroup": "0::/kubepods/burstable/pod1/ctr\n",
			"sys/fs/cgroup/kubepods/burstable/pod1/ctr/memory.max": "max\n",
			"sys/fs/cgroup/kubepods/burstable/pod1/memory.max":     "356515840\n",
			"sys/fs/cgroup/kubepods/memory.max":                    "8589934592\n",
		}, 356515840, true},
		{"v1", map[string]string{
			"proc/self/cgroup":                           "12:pids:/\n11:memory:/\n10:cpu,cpuacct:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "178257920\n",
		}, 178257920, true},
		{"v1 unlimited", map[string]string{
			"proc/self/cgroup":                           "11:memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
		}, 0, false},
		{"no memory controller", map[string]string{
			"proc/self/cgroup": "12:pids:/\n",
		}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := fake(t, tc.files).Limit()
			if err != nil || got != tc.want || ok != tc.ok {
				t.Errorf("Limit() = %d, %v, %v; want %d, %v", got, ok, err, tc.want, tc.ok)
			}
		})
	}
}

func TestLimitMalformed(t *testing.T) {
	f := fake(t, map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "lots\n"})
	if _, _, err := f.Limit(); err == nil {
		t.Error("a memory.max of \"lots\" was read as a limit")
	}
}

func TestApply(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	f := fake(t, map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "100000000\n"})

	// The operator's GOMEMLIMIT stands: the runtime read it at start.
	debug.SetMemoryLimit(math.MaxInt64)
	if msg := f.Apply(func(k string) string { return map[string]string{"GOMEMLIMIT": "50MiB"}[k] }); !strings.Contains(msg, "set by the environment") {
		t.Errorf("with GOMEMLIMIT set: %q", msg)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set, the limit became %d", got)
	}

	msg := f.Apply(func(string) string { return "" })
	if got := debug.SetMemoryLimit(-1); got != 90000000 {
		t.Errorf("soft limit %d, want 90%% of 100000000 (%s)", got, msg)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	none := fake(t, map[string]string{"proc/self/cgroup": "0::/\n", "sys/fs/cgroup/memory.max": "max\n"})
	if msg := none.Apply(func(string) string { return "" }); debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("without a cgroup limit a soft limit was set (%s)", msg)
	}
}
