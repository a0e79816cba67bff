// Package process runs the daemons of the test harnesses (etcd,
// kube-apiserver, the node's containerd and kubelet...): each in a process
// group of its own, its output appended to a log file, killed by the kernel
// if the test binary dies, and stopped with SIGTERM, then SIGKILL.
package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Namespace is a namespace a child can start in: Enter moves the calling,
// locked thread into it (see test/internal/netns).
type Namespace interface {
	Enter() error
}

// Spec says what to start.
type Spec struct {
	// Name is used in errors.
	Name string
	Path string
	Args []string
	// Env is the environment; nil means the test binary's.
	Env []string
	// Dir is the working directory; empty means the test binary's.
	Dir string
	// LogPath is the file that stdout and stderr are appended to. Without
	// one they go to Output (nil discards them).
	LogPath string
	Output  io.Writer
	// NetNS, when set, is the network namespace the child starts in.
	NetNS Namespace
	// NewMountNS starts the child in a new mount namespace whose mounts are
	// private (Linux only).
	NewMountNS bool
}

// Process is one running child.
type Process struct {
	Name    string
	LogPath string
	Pid     int
	// Started is taken right before the fork, for start-up times.
	Started time.Time
	// logStart is the size of the log when this process started; earlier
	// content belongs to an earlier run.
	logStart int64
	// done is closed once the child has exited; err then holds its exit error.
	done chan struct{}
	err  error
}

// Start starts the child described by spec.
func Start(spec Spec) (*Process, error) {
	if spec.NewMountNS && runtime.GOOS != "linux" {
		return nil, fmt.Errorf("start %s: mount namespaces need Linux", spec.Name)
	}
	p := &Process{Name: spec.Name, LogPath: spec.LogPath, done: make(chan struct{})}
	out := spec.Output
	if spec.LogPath != "" {
		logFile, err := os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open %s log: %w", spec.Name, err)
		}
		// The child holds a descriptor of its own once it has started.
		defer logFile.Close()
		info, err := logFile.Stat()
		if err != nil {
			return nil, fmt.Errorf("stat %s log: %w", spec.Name, err)
		}
		p.logStart = info.Size()
		out = logFile
	}
	started := make(chan error, 1)
	go func() {
		// The kernel sends Pdeathsig when the *thread* that forked the child
		// exits, not when the process does. The Go runtime may retire idle
		// threads, so pin this goroutine, and with it the forking thread, for
		// as long as the child runs; the signal then fires only if the whole
		// test binary dies.
		runtime.LockOSThread()
		if spec.NetNS != nil {
			// The thread stays in the namespace and locked: Go ends it with
			// this goroutine.
			if err := spec.NetNS.Enter(); err != nil {
				started <- err
				return
			}
		} else {
			defer runtime.UnlockOSThread()
		}

		cmd := exec.Command(spec.Path, spec.Args...)
		cmd.Env = spec.Env
		cmd.Dir = spec.Dir
		cmd.Stdout = out
		cmd.Stderr = out
		cmd.SysProcAttr = sysProcAttr(spec.NewMountNS)
		p.Started = time.Now()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.Pid = cmd.Process.Pid
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	return p, nil
}

// Exited reports whether the process has already exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} {
	return p.done
}

// Err is the process's exit error, once Done is closed.
func (p *Process) Err() error {
	return p.err
}

// Stop asks the process group to terminate and kills it if it has not exited
// within grace. It is a no-op once the process has exited.
func (p *Process) Stop(grace time.Duration) error {
	if p.Exited() {
		return nil
	}
	// A negative pid addresses the whole process group (see Setpgid).
	if err := syscall.Kill(-p.Pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %s: %w", p.Name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s: %w", p.Name, err)
	}
	select {
	case <-p.done:
		return fmt.Errorf("%s did not stop within %s and was killed", p.Name, grace)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.Name, p.Pid)
	}
}

// WaitReady polls check until it succeeds, the process exits, or the timeout
// or ctx expires. Errors carry the tail of the process log, which is where
// the reason for a failed start is.
func (p *Process) WaitReady(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		checkCtx, checkCancel := context.WithTimeout(ctx, 5*time.Second)
		lastErr = check(checkCtx)
		checkCancel()
		if lastErr == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before becoming ready (%v); log %s ends with:\n%s",
				p.Name, p.err, p.LogPath, LogTail(p.LogPath, 30))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s (last check: %v); log %s ends with:\n%s",
				p.Name, timeout, lastErr, p.LogPath, LogTail(p.LogPath, 30))
		case <-tick.C:
		}
	}
}

// AddressInUse reports whether the process log says a port was taken, which
// happens when another program grabs a port between FreePort and the bind.
func (p *Process) AddressInUse() bool {
	data, err := os.ReadFile(p.LogPath)
	if err != nil || int64(len(data)) < p.logStart {
		return false
	}
	return bytes.Contains(data[p.logStart:], []byte("address already in use"))
}

// LogTail returns the last n lines of the file at path.
func LogTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(port)
}
