//go:build linux

// Package dockerd runs Debian's Docker engine (package docker.io) for the
// tests that build the Dockerfile and load image archives:
//   - in a network namespace it creates, with only a loopback interface, so
//     builds run offline (whatever a test serves there is all they reach) and
//     the engine touches no network setting or iptables rule of the machine;
//   - in a mount namespace of its own, with an empty /run for its runtime
//     state (/run/docker, containerd's shim sockets), so its mounts and
//     state never show on the machine;
//   - with its containers under the cgroup coredns-mcs-dockerd.
//
// Images and the build cache persist in ~/.cache/coredns-mcs/dockerd, so a
// later run reuses them; everything else goes with Stop, or with the next
// Start after a killed run (processes, cgroups). One engine at a time runs on
// a machine: Start waits for a lock.
package dockerd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/flock"
	"github.com/coredns-mcs/coredns-mcs/test/internal/footprint"
	"github.com/coredns-mcs/coredns-mcs/test/internal/netns"
	"github.com/coredns-mcs/coredns-mcs/test/internal/process"
)

// ErrPrerequisite marks errors about what the machine lacks.
var ErrPrerequisite = errors.New("docker engine prerequisite missing")

const cgroupName = "coredns-mcs-dockerd"

// runDir holds the engine's socket, exec root and log; Stop removes it.
var runDir = filepath.Join(os.TempDir(), "coredns-mcs-dockerd")

// Debian's docker.io installs the engine and its own client here. The
// client of another Docker installation may come first on PATH and may not
// speak to this engine the same way (Docker 23+ clients build with buildx,
// which docker.io 20.10 lacks).
const (
	debianDockerd = "/usr/sbin/dockerd"
	debianClient  = "/usr/bin/docker"
)

// Engine is a running Docker engine.
type Engine struct {
	// NetNS is the engine's network namespace; `docker build
	// --network=host` and `docker run --network=host` run there.
	NetNS *netns.Namespace
	// Client is the docker command.
	Client string

	dataRoot  string
	socket    string
	footprint footprint.Footprint
	lock      *os.File
	daemon    *process.Process
}

// CheckPrerequisites reports what the machine lacks to run the engine.
func CheckPrerequisites() error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, path := range []string{debianDockerd, debianClient} {
		if _, err := os.Stat(path); err != nil {
			missing = append(missing, path+" (apt-get install docker.io)")
		}
	}
	for _, name := range []string{"containerd", "runc", "mount"} {
		if _, err := exec.LookPath(name); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", ErrPrerequisite, strings.Join(missing, ", "))
	}
	return nil
}

// Start starts the engine and waits until it answers.
func Start(ctx context.Context) (_ *Engine, err error) {
	if err := CheckPrerequisites(); err != nil {
		return nil, err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, err
	}
	e := &Engine{
		Client:   debianClient,
		dataRoot: filepath.Join(cache, "coredns-mcs", "dockerd"),
		socket:   filepath.Join(runDir, "docker.sock"),
	}
	e.footprint = footprint.Footprint{Cgroup: cgroupName, Markers: []string{runDir + "/", e.dataRoot + "/"}}
	if err := os.MkdirAll(e.dataRoot, 0o700); err != nil {
		return nil, err
	}
	if e.lock, err = flock.Acquire(ctx, e.dataRoot+".lock", "docker engine of the tests"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.Stop())
		}
	}()
	if err := e.sweep(); err != nil {
		return nil, fmt.Errorf("clean up after an earlier engine: %w", err)
	}
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		return nil, err
	}
	if e.NetNS, err = netns.New(); err != nil {
		return nil, err
	}
	args := []string{
		"--data-root=" + e.dataRoot,
		"--exec-root=" + filepath.Join(runDir, "exec"),
		"--pidfile=" + filepath.Join(runDir, "dockerd.pid"),
		"--host=unix://" + e.socket,
		"--cgroup-parent=/" + cgroupName,
		"--storage-driver=overlay2",
		// No bridge, no NAT, no rules: containers use the engine's
		// namespace (--network=host) or none.
		"--bridge=none",
		"--iptables=false",
		"--ip6tables=false",
		"--ip-forward=false",
		"--ip-masq=false",
		"--log-level=warn",
	}
	// -n: no record in /run/mount/utab, which is the machine's until /run
	// is replaced.
	script := "mount -n -t tmpfs -o mode=0755 coredns-mcs-dockerd /run && exec " + debianDockerd + ` "$@"`
	e.daemon, err = process.Start(process.Spec{
		Name:       "dockerd",
		Path:       "/bin/sh",
		Args:       append([]string{"-c", script, "dockerd"}, args...),
		LogPath:    filepath.Join(runDir, "dockerd.log"),
		NetNS:      e.NetNS,
		NewMountNS: true,
	})
	if err != nil {
		return nil, err
	}
	err = e.daemon.WaitReady(ctx, time.Minute, func(ctx context.Context) error {
		_, err := e.Docker(ctx, nil, "version", "--format", "{{.Server.Version}}")
		return err
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Docker runs the docker client against the engine, with BuildKit, and
// returns its stdout; the error carries stderr. input, if not nil, is its
// stdin.
func (e *Engine) Docker(ctx context.Context, input io.Reader, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, e.Client, args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST=unix://"+e.socket, "DOCKER_BUILDKIT=1", "DOCKER_CONFIG="+filepath.Join(runDir, "client"))
	cmd.Stdin = input
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// LogTail returns the end of the engine's log.
func (e *Engine) LogTail(lines int) string {
	return process.LogTail(filepath.Join(runDir, "dockerd.log"), lines)
}

// sweep kills what is left of an engine (its processes outlive a killed
// test binary: containerd, shims, build containers) and removes its
// cgroups and runDir; images and the build cache stay.
func (e *Engine) sweep() error {
	return errors.Join(e.footprint.Kill(), e.footprint.RemoveCgroups(), os.RemoveAll(runDir))
}

// Stop stops the engine and removes everything of it but its images and
// build cache.
func (e *Engine) Stop() error {
	var errs []error
	if e.daemon != nil {
		errs = append(errs, e.daemon.Stop(30*time.Second))
	}
	errs = append(errs, e.sweep())
	if e.NetNS != nil {
		errs = append(errs, e.NetNS.Close())
	}
	if e.lock != nil {
		errs = append(errs, e.lock.Close())
	}
	return errors.Join(errs...)
}
