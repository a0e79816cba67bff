package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is one running etcd or kube-apiserver child.
type process struct {
	name    string
	logPath string
	// logStart is the size of the log when this process started; earlier
	// content belongs to an earlier run.
	logStart int64
	pid      int
	// done is closed once the child has exited; err then holds its exit error.
	done chan struct{}
	err  error
}

// startProcess starts path with args, appending its stdout and stderr to
// logPath.
func startProcess(name, path string, args []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	info, err := logFile.Stat()
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("stat %s log: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, logStart: info.Size(), done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The kernel sends Pdeathsig when the *thread* that forked the child
		// exits, not when the process does. The Go runtime may retire idle
		// threads, so pin this goroutine, and with it the forking thread, for
		// as long as the child runs; the signal then fires only if the whole
		// test binary dies.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer logFile.Close()

		cmd := exec.Command(path, args...)
		cmd.Stdout = logFile
		cmd.Stderr = logFile
		cmd.SysProcAttr = sysProcAttr()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.pid = cmd.Process.Pid
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
}

// exited reports whether the process has already exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks the process group to terminate and kills it if it has not exited
// within grace.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	// A negative pid addresses the whole process group (see Setpgid).
	if err := syscall.Kill(-p.pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	if err := syscall.Kill(-p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return fmt.Errorf("%s did not stop within %s and was killed", p.name, grace)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.pid)
	}
}

// waitReady polls check until it succeeds, the process exits, or the timeout
// or ctx expires. Errors carry the tail of the process log, which is where
// the reason for a failed start is.
func (p *process) waitReady(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
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
				p.name, p.err, p.logPath, logTail(p.logPath, 30))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s (last check: %v); log %s ends with:\n%s",
				p.name, timeout, lastErr, p.logPath, logTail(p.logPath, 30))
		case <-tick.C:
		}
	}
}

// addressInUse reports whether the process log says a port was taken, which
// happens when another program grabs a port between freePort and the bind.
func (p *process) addressInUse() bool {
	data, err := os.ReadFile(p.logPath)
	if err != nil || int64(len(data)) < p.logStart {
		return false
	}
	return bytes.Contains(data[p.logStart:], []byte("address already in use"))
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
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

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
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
