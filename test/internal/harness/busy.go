package harness

import (
	"os/exec"
	"runtime"
	"testing"
)

// BusyLoopsPerCore is how many busy loops a core BusyCores starts: a load
// of 12 on 2 cores, as a node's parallel builds make it.
const BusyLoopsPerCore = 6

// BusyCores starts BusyLoopsPerCore busy loops a core, each a shell
// process of its own, as other work on a node would be, and returns what
// stops them; the test's cleanup stops them too.
func BusyCores(t testing.TB) (stop func()) {
	t.Helper()
	var procs []*exec.Cmd
	stop = func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
		procs = nil
	}
	t.Cleanup(stop)
	for range BusyLoopsPerCore * runtime.NumCPU() {
		p := exec.Command("sh", "-c", "while :; do :; done")
		if err := p.Start(); err != nil {
			stop()
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	return stop
}
