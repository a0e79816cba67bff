package multicluster

import (
	"fmt"
	"testing"

	discovery "k8s.io/api/discovery/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkSliceConvert is the conversion of one EndpointSlice event into
// the plugin's slice spec, which the informer does for every event before
// the handler runs: a slice of 40 IPv4 endpoints without hostnames from a
// source cluster (as mcsbench's churn phase rolls them), and one of 100
// with hostnames (a StatefulSet's).
func BenchmarkSliceConvert(b *testing.B) {
	for _, tc := range []struct {
		name      string
		n         int
		hostnames bool
	}{{"endpoints=40", 40, false}, {"endpoints=100,hostnames", 100, true}} {
		b.Run(tc.name, func(b *testing.B) {
			yes := true
			es := &discovery.EndpointSlice{
				ObjectMeta: meta.ObjectMeta{Namespace: "bench-scale-headless", Name: "hl-7-cluster-042-1234", ResourceVersion: "12345",
					Labels: map[string]string{labelServiceName: "hl-7", labelSourceCluster: "cluster-042"}},
				AddressType: discovery.AddressTypeIPv4,
			}
			for j := range tc.n {
				e := discovery.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 7, j/200, j%200+1)}, Conditions: discovery.EndpointConditions{Ready: &yes}}
				if tc.hostnames {
					h := fmt.Sprintf("db-%d", j)
					e.Hostname = &h
				}
				es.Endpoints = append(es.Endpoints, e)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := newSliceSpec(es, len(defaultZone)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
