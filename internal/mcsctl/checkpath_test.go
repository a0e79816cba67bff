package mcsctl

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestReviewSwapOwner: in the swap layout, check says when a platform
// controller keeps the Deployment, and what the swap there takes (the doc's
// section), with the image swapped already or not; nothing where no
// platform claims it.
func TestReviewSwapOwner(t *testing.T) {
	for _, tc := range []struct {
		objects string
		ours    bool
		status  status // "" for no line
		want    string
	}{
		{"kubeadm", true, "", ""},
		{"kubeadm", false, "", ""},
		{"eks-self-managed", true, "", ""},
		{"k3s", true, warn, "coredns.yaml.skip lies beside it in the manifests directory of every server"},
		{"k3s", false, warn, "stop k3s applying it first (coredns.yaml.skip on every server)"},
		{"eks", true, warn, "unless the CoreDNS add-on was deleted with --preserve"},
		{"eks", false, warn, "aws eks delete-addon --addon-name coredns --preserve"},
		{"rke2", true, ok, "the HelmChartConfig kube-system/rke2-coredns"},
		{"rke2", false, warn, "set image and servers in the HelmChartConfig kube-system/rke2-coredns"},
		{"aks", false, fail, "no supported swap there"},
	} {
		var dep *appsv1.Deployment
		for _, o := range platformObjects(tc.objects) {
			if d, isDep := o.(*appsv1.Deployment); isDep {
				dep = d
			}
		}
		if dep == nil {
			t.Fatalf("%s: no Deployment", tc.objects)
		}
		if tc.ours {
			dep.Spec.Template.Spec.Containers[0].Image = "ghcr.io/coredns-mcs/coredns-mcs:v0.1.0"
		}
		c := &checker{}
		reviewSwapOwner(c, "kube-system/"+dep.Name, dep)
		switch {
		case tc.status == "" && len(c.lines) != 0:
			t.Errorf("%s (ours %v): %+v, want no line", tc.objects, tc.ours, c.lines)
		case tc.status == "":
		case len(c.lines) != 1 || c.lines[0].Status != tc.status || !strings.Contains(c.lines[0].Message, tc.want):
			t.Errorf("%s (ours %v): %+v, want one %s line with %q", tc.objects, tc.ours, c.lines, tc.status, tc.want)
		case tc.status != ok && !strings.Contains(c.lines[0].Message, swapDoc):
			t.Errorf("%s (ours %v): %s does not name %s", tc.objects, tc.ours, c.lines[0].Message, swapDoc)
		}
	}
}
