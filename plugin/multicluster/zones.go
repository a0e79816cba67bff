// Zones: which zone of the plugin a name is in, and how that zone is
// served.

package multicluster

import (
	"slices"
	"strings"
)

// matchZone returns the longest zone name lies in, and how it is served.
// name must be lower case.
func (m *Multicluster) matchZone(name string) (string, zoneKind) {
	best, kind := "", zoneNone
	for _, z := range m.Zones {
		if len(z) > len(best) && inZone(name, z) {
			best, kind = z, zoneClusterset
			if isReverseZone(z) {
				kind = zoneReverse
			}
		}
	}
	for _, z := range m.Fallback {
		if len(z) > len(best) && inZone(name, z) {
			best, kind = z, zoneFallback
		}
	}
	return best, kind
}

// inZone reports whether name equals zone or lies below it, on a label
// boundary that is not an escaped dot. Both are lower case and fully qualified.
func inZone(name, zone string) bool {
	if zone == "." {
		return true
	}
	if !strings.HasSuffix(name, zone) {
		return false
	}
	i := len(name) - len(zone)
	if i == 0 {
		return true
	}
	if name[i-1] != '.' {
		return false
	}
	// The dot ends a label unless an odd number of backslashes escapes it.
	slashes := 0
	for j := i - 2; j >= 0 && name[j] == '\\'; j-- {
		slashes++
	}
	return slashes%2 == 0
}

func isReverseZone(z string) bool {
	return strings.HasSuffix(z, "in-addr.arpa.") || strings.HasSuffix(z, "ip6.arpa.")
}

// firstForwardZone returns the first zone that is not a reverse zone.
func firstForwardZone(zones []string) string {
	for _, z := range zones {
		if !isReverseZone(z) {
			return z
		}
	}
	return ""
}

// longestZone returns the length of the longest zone the plugin answers
// names in.
func (m *Multicluster) longestZone() int {
	n := 0
	for _, z := range append(slices.Clip(m.Zones), m.Fallback...) {
		if !isReverseZone(z) {
			n = max(n, len(z))
		}
	}
	return n
}
