package harness

import "testing"

// TestFreePortsNeverTwice: ports FreePorts gave out are not given again in
// the run, though the kernel, once they are closed, may offer them again
// (coredns binds with SO_REUSEPORT: two servers on one port would both start
// and share it).
func TestFreePortsNeverTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		ports, err := FreePorts(4)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if seen[p] {
				t.Fatalf("port %d given out twice (after %d ports)", p, len(seen))
			}
			seen[p] = true
		}
	}
}
