package main

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// child is a process the benchmark started: coredns, dnsperf or a
// tool. Each runs in its own process group, so that stop reaches anything
// it spawned, and dies with the benchmark even when the benchmark is killed
// (see childAttr).
type child struct {
	name string
	pid  int
	// started is taken right before the fork, for start-up times.
	started time.Time
	// done is closed once the process has exited; err then holds its exit
	// error.
	done chan struct{}
	err  error
}

// startChild starts argv with its output going to stdout and stderr.
func startChild(name string, argv []string, stdout, stderr io.Writer) (*child, error) {
	c := &child{name: name, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The kernel sends the parent-death signal when the thread that
		// forked the child exits. Keeping this goroutine on its thread for
		// the child's lifetime means that only happens when the benchmark
		// itself dies.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		cmd.SysProcAttr = childAttr()
		c.started = time.Now()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		c.pid = cmd.Process.Pid
		started <- nil
		c.err = cmd.Wait()
		close(c.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return c, nil
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop terminates the process group, and kills it after grace. It is safe
// to call more than once.
func (c *child) stop(grace time.Duration) error {
	if c.exited() {
		return nil
	}
	if err := syscall.Kill(-c.pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %s: %w", c.name, err)
	}
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
	}
	if err := syscall.Kill(-c.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s: %w", c.name, err)
	}
	select {
	case <-c.done:
		return fmt.Errorf("%s did not stop within %s and was killed", c.name, grace)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", c.name, c.pid)
	}
}
