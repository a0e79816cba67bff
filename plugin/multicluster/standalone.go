// The check a standalone server's block must pass: no name of the
// plugin's zones may reach forward, which would send it back upstream or
// off the cluster.

package multicluster

import (
	"fmt"
	"slices"
	"strings"

	"github.com/coredns/coredns/plugin/kubernetes"
)

// checkStandalone refuses a server block that would hand a name of the
// plugin's zones to forward. A standalone coredns-mcs runs behind the
// cluster's own DNS, which forwards those names to it: forwarded again, they
// would loop back or leak off the cluster. Each must end in this block's
// answer, the plugin's or the kubernetes plugin's (NXDOMAIN with its SOA for
// what does not exist). k is the block's kubernetes plugin (nil if none);
// forwards tells whether the block has forward.
func (m *Multicluster) checkStandalone(k *kubernetes.Kubernetes, forwards bool) error {
	where := fmt.Sprintf("standalone (Corefile line %d)", m.standaloneLine)
	if len(m.Fallback) > 0 && k == nil {
		return fmt.Errorf("%s: the fallback zones %s need the kubernetes plugin in this server block: it answers local Services, and NXDOMAIN for names that exist nowhere", where, strings.Join(m.Fallback, " "))
	}
	if !forwards {
		return nil
	}
	// Clusterset zones are the plugin's alone: it answers every name in
	// them. Names of reverse and fallback zones that it does not answer go
	// on to the kubernetes plugin, which must answer them all.
	var leaks []string
	for _, z := range append(append([]string{}, m.Zones...), m.Fallback...) {
		if !isReverseZone(z) && !slices.Contains(m.Fallback, z) {
			continue
		}
		switch {
		case k == nil:
			leaks = append(leaks, z+" (no kubernetes plugin)")
		case !slices.ContainsFunc(k.Zones, func(kz string) bool { return inZone(z, strings.ToLower(kz)) }):
			leaks = append(leaks, z+" (not a zone of the kubernetes plugin)")
		case slices.ContainsFunc(k.Fall.Zones, func(fz string) bool {
			fz = strings.ToLower(fz)
			return inZone(z, fz) || inZone(fz, z)
		}):
			leaks = append(leaks, z+" (the kubernetes plugin falls through)")
		}
	}
	if len(leaks) > 0 {
		return fmt.Errorf("%s: names of %s that this server does not know would reach forward, and go back upstream to the DNS that forwards them here (a loop) or off the cluster; give those zones to the kubernetes plugin without fallthrough, or remove forward from this server block", where, strings.Join(leaks, ", "))
	}
	return nil
}
