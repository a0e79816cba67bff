package release

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
)

// TestMakeRun runs make run as a newcomer does, in a copy of the
// repository: it must come up with the example objects and print lines that
// work as printed: the dig lines answer, and the kubectl mcs explain line
// (through kubectl when there is one, build/kubectl-mcs otherwise) explains.
// make run builds only kube-apiserver and etcd of the kube set, and says how
// long the first build takes when they are not built yet.
func TestMakeRun(t *testing.T) {
	b := release(t) // a copy whose Go build cache is warm
	lookTool(t, "dig", "apt-get install dnsutils")
	port := harness.FreePort(t)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "run", "PORT="+strconv.Itoa(port))
	cmd.Dir = b.root
	cmd.Env = cleanEnv("HEALTH_PORT="+strconv.Itoa(harness.FreePort(t)), "READY_PORT="+strconv.Itoa(harness.FreePort(t)),
		"METRICS_PORT="+strconv.Itoa(harness.FreePort(t)))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// run.sh stops what it started on SIGTERM.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()

	var out strings.Builder
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var printed []string
	serving := false
	for !serving || !strings.Contains(out.String(), "Ctrl-C stops everything") {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("make run ended:\n%s", out.String())
			}
			out.WriteString(l + "\n")
			printed = append(printed, l)
			serving = serving || strings.Contains(l, "coredns-mcs is serving on 127.0.0.1:"+strconv.Itoa(port))
		case <-ctx.Done():
			t.Fatalf("make run did not come up:\n%s", out.String())
		}
	}
	go func() {
		for range lines { // keep coredns's log from blocking it
		}
	}()
	if strings.Contains(out.String(), "Building kube-apiserver and etcd") {
		t.Logf("make run built kube-apiserver and etcd:\n%s", out.String())
	}

	dig := regexp.MustCompile(`^\s+(dig @127\.0\.0\.1 -p \d+ \S+(?: [A-Z]+)?)(?:\s|$)`)
	explain := regexp.MustCompile(`^\s+(.*(?:kubectl mcs|build/kubectl-mcs) explain checkout\.demo\.svc\.cluster\.local .*)$`)
	nDig, nExplain := 0, 0
	for _, l := range printed {
		if m := dig.FindStringSubmatch(l); m != nil {
			nDig++
			res, err := exec.CommandContext(ctx, "bash", "-c", m[1]+" +tries=2 +time=5").CombinedOutput()
			if err != nil || !strings.Contains(string(res), "status: NOERROR") || len(digAnswer(string(res))) == 0 {
				t.Errorf("%s, as make run prints it: %v\n%s", m[1], err, res)
			}
		}
		if m := explain.FindStringSubmatch(l); m != nil {
			nExplain++
			c := exec.CommandContext(ctx, "bash", "-c", m[1])
			c.Dir = b.root
			res, err := c.CombinedOutput()
			if err != nil || !strings.Contains(string(res), "ServiceImport demo/checkout") || !strings.Contains(string(res), "NOERROR") {
				t.Errorf("%s, as make run prints it: %v\n%s", m[1], err, res)
			} else {
				t.Logf("%s:\n%s", m[1], res)
			}
		}
	}
	if nDig < 5 || nExplain != 1 {
		t.Errorf("make run printed %d dig lines and %d kubectl mcs explain lines for checkout; want at least 5 and 1:\n%s", nDig, nExplain, out.String())
	}
}
