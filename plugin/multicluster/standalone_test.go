package multicluster

import (
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin/kubernetes"
)

func TestStandaloneOption(t *testing.T) {
	m, err := parseCorefile(caddy.NewTestController("dns", "multicluster clusterset.local in-addr.arpa {\n fallback cluster.local\n standalone\n}"))
	if err != nil {
		t.Fatal(err)
	}
	if m.standaloneLine != 3 {
		t.Errorf("standalone line %d, want 3", m.standaloneLine)
	}
	for input, want := range map[string]string{
		"multicluster {\n standalone yes\n}":                                             "Testfile:2 - Error during parsing: standalone takes no arguments, got 1",
		"multicluster clusterset.local {\n standalone\n fallthrough\n}":                  "Error during parsing: standalone (line 2) and fallthrough (line 3)",
		"multicluster clusterset.local {\n fallthrough clusterset.local\n standalone\n}": "standalone (line 3) and fallthrough (line 2)",
	} {
		_, err := parseCorefile(caddy.NewTestController("dns", input))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", input, err, want)
		}
	}
}

// kubernetesWith returns a kubernetes plugin of zones, falling through for
// fall.
func kubernetesWith(zones []string, fall ...string) *kubernetes.Kubernetes {
	k := kubernetes.New(zones)
	k.Fall.SetZonesFromArgs(fall)
	if len(fall) == 0 {
		k.Fall.Zones = nil
	}
	return k
}

func TestCheckStandalone(t *testing.T) {
	m := &Multicluster{Zones: []string{"clusterset.local.", "in-addr.arpa.", "ip6.arpa."}, Fallback: []string{"cluster.local."}, standaloneLine: 7}
	k8sZones := []string{"cluster.local.", "in-addr.arpa.", "ip6.arpa."}
	tests := []struct {
		name     string
		k        *kubernetes.Kubernetes
		forwards bool
		want     string // "": accepted
	}{
		{"kubernetes answers every zone, no forward", kubernetesWith(k8sZones), false, ""},
		{"kubernetes answers every zone, with forward", kubernetesWith(k8sZones), true, ""},
		{"no kubernetes plugin", nil, false, "standalone (Corefile line 7): the fallback zones cluster.local. need the kubernetes plugin"},
		{"stock fallthrough of reverse zones, then forward", kubernetesWith(k8sZones, "in-addr.arpa", "ip6.arpa"), true, "in-addr.arpa. (the kubernetes plugin falls through), ip6.arpa. (the kubernetes plugin falls through)"},
		{"fallthrough for everything", kubernetesWith(k8sZones, "."), true, "cluster.local. (the kubernetes plugin falls through)"},
		{"fallthrough below a zone", kubernetesWith(k8sZones, "10.in-addr.arpa"), true, "in-addr.arpa. (the kubernetes plugin falls through)"},
		{"fallthrough without forward", kubernetesWith(k8sZones, "in-addr.arpa", "ip6.arpa"), false, ""},
		{"reverse zones the kubernetes plugin lacks", kubernetesWith([]string{"cluster.local."}), true, "in-addr.arpa. (not a zone of the kubernetes plugin)"},
	}
	for _, tc := range tests {
		err := m.checkStandalone(tc.k, tc.forwards)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
