package controlplane

import (
	"context"
	"time"
)

// Daemon is a long-running process started by StartDaemon, handled like the
// control plane's own etcd and kube-apiserver: in a process group of its own,
// with its output appended to a log file, and killed by the kernel if the
// test binary dies. Harnesses that run more servers next to a control plane
// (Karmada's, for one) use it.
type Daemon struct {
	p *process
}

// StartDaemon starts the binary at path with args, appending its stdout and
// stderr to logPath; name is used in errors.
func StartDaemon(name, path string, args []string, logPath string) (*Daemon, error) {
	p, err := startProcess(name, path, args, logPath)
	if err != nil {
		return nil, err
	}
	return &Daemon{p: p}, nil
}

// StartDaemonIn is StartDaemon with the process in the network namespace
// ns (nil: this process's).
func StartDaemonIn(ns Namespace, name, path string, args []string, logPath string) (*Daemon, error) {
	if ns == nil {
		return StartDaemon(name, path, args, logPath)
	}
	p, err := startProcessIn(ns, name, path, args, logPath)
	if err != nil {
		return nil, err
	}
	return &Daemon{p: p}, nil
}

// WaitReady polls check every 100 ms until it succeeds, the daemon exits, or
// timeout or ctx expires. Errors carry the tail of the daemon's log.
func (d *Daemon) WaitReady(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	return d.p.waitReady(ctx, timeout, check)
}

// Stop sends SIGTERM to the daemon's process group, and SIGKILL if it has not
// exited within grace. It is a no-op once the daemon has exited.
func (d *Daemon) Stop(grace time.Duration) error {
	return d.p.stop(grace)
}

// Exited reports whether the daemon has exited.
func (d *Daemon) Exited() bool {
	return d.p.exited()
}

// AddressInUse reports whether the daemon's log, since it started, says that
// a port it was given was taken meanwhile; the caller may retry on another.
func (d *Daemon) AddressInUse() bool {
	return d.p.addressInUse()
}

// LogTail returns the last n lines of the file at path.
func LogTail(path string, n int) string {
	return logTail(path, n)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	return freePort()
}
