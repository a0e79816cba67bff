//go:build linux

package node

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"golang.org/x/sys/unix"

	"github.com/coredns-mcs/coredns-mcs/internal/ociimage"
	"github.com/coredns-mcs/coredns-mcs/test/internal/flock"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
)

// killedChildEnv makes the test binary start a node, run a pod and wait to
// be killed (see TestStartAfterKilledRun) instead of running tests.
const killedChildEnv = "COREDNS_MCS_NODE_KILLED_CHILD"

// killedRunIndex is the cluster index of TestStartAfterKilledRun, which no
// other test uses: its killed node's leftovers are what the test looks at,
// and it holds the index's watch lock meanwhile, so that no other node's
// start-up sweeps them first.
const killedRunIndex = MaxClusters - 1

func TestMain(m *testing.M) {
	if os.Getenv(killedChildEnv) != "" {
		os.Exit(runKilledChild())
	}
	os.Exit(m.Run())
}

// runKilledChild starts a node with a running pod, says so on stdout and
// waits for SIGKILL.
func runKilledChild() int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n, err := Start(ctx, Options{Index: killedRunIndex})
	if err != nil {
		fmt.Println("start:", err)
		return 1
	}
	if err := runPod(ctx, n.Client, "sleeper", "sleep 3600"); err != nil {
		fmt.Println("pod:", err)
		return 1
	}
	fmt.Println("NODE-RUNNING")
	// The test kills this process; should the test end first, its end of
	// stdin closes, and this process goes too.
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 1
}

// runPod creates a pod from the dnsutils image running script and waits
// until it runs.
func runPod(ctx context.Context, client kubernetes.Interface, name, script string) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: name, Image: DNSUtilsImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", script},
			}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return err
	}
	return poll.Until(ctx, "pod "+name+" running", func() (bool, string) {
		p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning, "phase " + string(p.Status.Phase)
	})
}

// machineState is what a node changes on the machine.
type machineState struct {
	sysctls   map[string]string
	processes []int
	cgroups   []string
	dir       bool
}

func readMachineState(t *testing.T) machineState { return readLayoutState(t, mustLayout(0)) }

// readLayoutState reads what a node of layout l changes on the machine,
// while no node runs: it holds every cluster's lock, in index order, as
// StartClusters takes them, so that the nodes of other tests (other
// packages run at the same time) are neither seen nor counted.
// A lock not released within ten minutes is a node of ours left running.
func readLayoutState(t *testing.T, l Layout) machineState {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	for i := range MaxClusters {
		f, err := flock.Acquire(ctx, mustLayout(i).lock, fmt.Sprintf("node of cluster %d", i))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	return readLayoutStateNow(t, l)
}

// readLayoutStateNow reads the state without waiting for any lock: while a
// node of the test runs.
func readLayoutStateNow(t *testing.T, l Layout) machineState {
	t.Helper()
	s := machineState{sysctls: map[string]string{}, processes: l.footprint().Processes()}
	for _, name := range kubeletSysctls {
		data, err := os.ReadFile(filepath.Join("/proc/sys", name))
		if err != nil {
			t.Fatal(err)
		}
		s.sysctls[name] = strings.TrimSpace(string(data))
	}
	cgroups, err := l.footprint().Cgroups()
	if err != nil {
		t.Fatal(err)
	}
	s.cgroups = cgroups
	_, err = os.Stat(l.dir)
	s.dir = err == nil
	return s
}

// checkMachineRestored fails t unless the machine is as it was before
// any node ran: sysctls as in before, and no node process, cgroup,
// directory or lock.
func checkMachineRestored(t *testing.T, before machineState) {
	t.Helper()
	checkLayoutRestored(t, mustLayout(0), before)
}

func checkLayoutRestored(t *testing.T, l Layout, before machineState) {
	t.Helper()
	now := readLayoutState(t, l)
	for name, value := range before.sysctls {
		if now.sysctls[name] != value {
			t.Errorf("sysctl %s is %s, was %s before the node", name, now.sysctls[name], value)
		}
	}
	if len(now.processes) > 0 {
		t.Errorf("node processes left: %v", now.processes)
	}
	if len(now.cgroups) > 0 {
		t.Errorf("cgroups left: %v", now.cgroups)
	}
	if now.dir {
		t.Errorf("%s left", l.dir)
	}
	// readLayoutState took every lock: none is still held.
}

// TestNodeRunsPods starts a node and runs a pod from the dnsutils image;
// its log comes back through kube-apiserver and kubelet. Stop leaves the
// machine as it was.
func TestNodeRunsPods(t *testing.T) {
	Require(t)
	before := readMachineState(t)
	n := ForTest(t, Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	if err := runPod(ctx, n.Client, "hello", "echo hello from $(hostname); cat /etc/resolv.conf; sleep 3600"); err != nil {
		t.Fatal(err)
	}
	var out []byte
	if err := poll.Until(ctx, "a log from the pod", func() (bool, string) {
		var err error
		out, err = n.Client.CoreV1().Pods("default").GetLogs("hello", &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(string(out), "hello from hello"), fmt.Sprintf("log %q", out)
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("pod log %.1fs after its creation:\n%s", time.Since(start).Seconds(), out)
	if !strings.Contains(string(out), "nameserver "+ClusterDNS) {
		t.Errorf("the pod's resolv.conf does not name %s", ClusterDNS)
	}
	checkMultiPlatformImport(t, ctx, n)
	if during := readLayoutStateNow(t, mustLayout(0)); len(during.processes) == 0 || len(during.cgroups) == 0 || !during.dir {
		t.Errorf("the running node shows no processes, cgroups or directory: %+v", during)
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	checkMachineRestored(t, before)
}

// TestStartAfterKilledRun kills (SIGKILL) a test binary whose node runs a
// pod, which leaves the pod's containers, their containerd shims, the
// cgroups and kubelet's sysctls behind; the next Start removes all of it,
// and its Stop leaves the machine as it was.
func TestStartAfterKilledRun(t *testing.T) {
	Require(t)
	layout := mustLayout(killedRunIndex)
	watch, err := flock.Acquire(t.Context(), layout.watch, "watch of cluster "+fmt.Sprint(killedRunIndex))
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	before := readLayoutState(t, layout)
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), killedChildEnv+"=1")
	child.Stderr = os.Stderr
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := child.StdinPipe() // open until the child is killed
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	running := false
	for lines.Scan() {
		if lines.Text() == "NODE-RUNNING" {
			running = true
			break
		}
		t.Log("child: " + lines.Text())
	}
	if !running {
		_ = child.Process.Kill()
		_ = child.Wait()
		t.Fatal("the child's node did not run its pod")
	}
	// The processes the child started itself die with it (the kernel
	// kills them: Pdeathsig); the pod's processes and shims survive it.
	own := childrenOf(child.Process.Pid)
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	poll.Eventually(t, 30*time.Second, "the processes the killed run started gone with it", func() (bool, string) {
		left := slices.DeleteFunc(slices.Clone(own), func(pid int) bool { return !alive(pid) })
		return len(left) == 0, fmt.Sprintf("still running: %v", left)
	})

	// What the killed run left.
	left := readLayoutStateNow(t, layout)
	t.Logf("left by the killed run: processes %v, cgroups %d, sysctls %v", left.processes, len(left.cgroups), left.sysctls)
	if len(left.processes) == 0 || len(left.cgroups) == 0 || !left.dir {
		t.Errorf("the killed run left no processes, cgroups or directory: the test shows nothing")
	}

	n := ForTest(t, Options{Index: killedRunIndex})
	for _, pid := range left.processes {
		if err := unix.Kill(pid, 0); err == nil {
			t.Errorf("process %d of the killed run still runs", pid)
		}
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	checkLayoutRestored(t, layout, before)
}

// checkMultiPlatformImport imports a multi-platform archive of
// internal/ociimage (as make image IMAGE_PLATFORMS=... writes it) the way
// ImportImage does, and finds both platforms in containerd.
func checkMultiPlatformImport(t *testing.T, ctx context.Context, n *Node) {
	t.Helper()
	const ref = "coredns-mcs.test/multi:local"
	var images []v1.Image
	for _, arch := range []string{"amd64", "arm64"} {
		layer, err := ociimage.Layer([]ociimage.File{ociimage.Regular("/hello", 0o644, []byte(arch))}, ociimage.LayerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		img, err := ociimage.Image(ociimage.Config{Platform: v1.Platform{OS: "linux", Architecture: arch}}, layer)
		if err != nil {
			t.Fatal(err)
		}
		images = append(images, img)
	}
	idx, err := ociimage.Index(images...)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "multi.tar")
	if err := ociimage.WriteIndexArchive(archive, ref, idx); err != nil {
		t.Fatal(err)
	}
	if err := n.ImportImage(ctx, archive); err != nil {
		t.Fatal(err)
	}
	out, err := n.ctr(ctx, nil, "images", "ls", "name=="+ref)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "linux/amd64,linux/arm64") {
		t.Errorf("containerd lists the multi-platform image as:\n%s", out)
	}
}

// childrenOf returns the processes whose parent is pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, ok := procStat(child); ok && ppid == pid {
			pids = append(pids, child)
		}
	}
	return pids
}

// alive reports whether pid is a process that has not ended: neither gone
// nor a zombie.
func alive(pid int) bool {
	_, state, ok := procStat(pid)
	return ok && state != "Z"
}

// procStat reads the parent and the state of pid from /proc/PID/stat.
func procStat(pid int) (ppid int, state string, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", false
	}
	// PID (COMM) STATE PPID ...; COMM may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, "", false
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 2 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(fields[1])
	return ppid, fields[0], err == nil
}
