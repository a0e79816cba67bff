package controlplane

import (
	"context"
	"time"

	daemon "github.com/coredns-mcs/coredns-mcs/test/internal/process"
)

// process is one running etcd or kube-apiserver child (see
// test/internal/process, which runs it).
type process struct {
	*daemon.Process
}

// startProcess starts path with args, appending its stdout and stderr to
// logPath.
func startProcess(name, path string, args []string, logPath string) (*process, error) {
	return startProcessIn(nil, name, path, args, logPath)
}

// startProcessIn is startProcess inside the network namespace ns (nil: the
// test binary's).
func startProcessIn(ns daemon.Namespace, name, path string, args []string, logPath string) (*process, error) {
	p, err := daemon.Start(daemon.Spec{Name: name, Path: path, Args: args, LogPath: logPath, NetNS: ns})
	if err != nil {
		return nil, err
	}
	return &process{p}, nil
}

func (p *process) exited() bool { return p.Exited() }

func (p *process) stop(grace time.Duration) error { return p.Stop(grace) }

func (p *process) waitReady(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	return p.WaitReady(ctx, timeout, check)
}

func (p *process) addressInUse() bool { return p.AddressInUse() }

func logTail(path string, n int) string { return daemon.LogTail(path, n) }

func freePort() (int, error) { return daemon.FreePort() }
