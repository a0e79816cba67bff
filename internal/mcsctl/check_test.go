package mcsctl

import "testing"

func TestLeavesOutImported(t *testing.T) {
	for _, tc := range []struct {
		labels string // the kubernetes stanza's labels line, if any
		want   bool
	}{
		{"", false},
		{"labels !multicluster.kubernetes.io/source-cluster", true},
		{"labels app=web,!multicluster.kubernetes.io/source-cluster", true},
		{"labels app in (a, b), !multicluster.kubernetes.io/source-cluster", true},
		{"labels multicluster.kubernetes.io/source-cluster", false},
		{"labels multicluster.kubernetes.io/source-cluster!=east", false},
		{"labels !multicluster.kubernetes.io/service-name", false},
		{"labels !!bad", false},
	} {
		text := ".:53 {\n    multicluster clusterset.local\n    kubernetes cluster.local {\n        pods insecure\n        " + tc.labels + "\n        fallthrough in-addr.arpa\n    }\n}\n"
		cf, err := parseCorefile("test", text)
		if err != nil {
			t.Fatalf("%q: %v", tc.labels, err)
		}
		k, _, ok := stanza(cf.blocks[0], "kubernetes")
		if !ok {
			t.Fatalf("%q: no kubernetes stanza", tc.labels)
		}
		if got := leavesOutImported(k); got != tc.want {
			t.Errorf("%q: leavesOutImported = %v, want %v", tc.labels, got, tc.want)
		}
	}
}
