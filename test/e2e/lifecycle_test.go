package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
)

// auditPolicy records who lists and watches ServiceImports.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  resources: [{group: multicluster.x-k8s.io, resources: [serviceimports]}]
- level: None
`

// serveOnlyV1beta1 upgrades the ServiceImport CRD the way an operator moves
// off v1alpha1: v1beta1 served and stored, v1alpha1 kept in spec.versions
// (objects were stored in it, and the API server refuses to drop a stored
// version) but no longer served.
func serveOnlyV1beta1(t *testing.T, cp *controlplane.ControlPlane) {
	t.Helper()
	editImportCRDVersions(t, cp, func(version map[string]any) {
		alpha := version["name"] == "v1alpha1"
		version["served"] = !alpha
		version["storage"] = !alpha
	})
}

// editImportCRDVersions applies mcs-api's ServiceImport CRD with edit made
// to each of its versions.
func editImportCRDVersions(t *testing.T, cp *controlplane.ControlPlane, edit func(version map[string]any)) {
	t.Helper()
	crds, err := controlplane.MCSCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if !strings.HasPrefix(crd.GetName(), "serviceimports.") {
			continue
		}
		versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range versions {
			edit(v.(map[string]any))
		}
		if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
			t.Fatal(err)
		}
		if err := cp.ApplyCRDs(context.Background(), crd); err != nil {
			t.Fatalf("applying the edited ServiceImport CRD: %v", err)
		}
		return
	}
	t.Fatal("no ServiceImport CRD in mcs-api")
}

// TestFollowsCRDVersion starts coredns while the ServiceImport CRD serves
// only v1alpha1, then upgrades the CRD to serve only v1beta1 while coredns
// runs: the watched version answers NotFound, the plugin asks discovery
// again and watches v1beta1, and clusterset names answer again, new
// imports included, without a restart. The API server's audit log shows the
// User-Agent naming this distribution's version and the plugin.
func TestFollowsCRDVersion(t *testing.T) {
	dir := t.TempDir()
	policy, auditLog := filepath.Join(dir, "audit-policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startOwnCluster(t, controlplane.Options{InstallCRDs: true, CRDVersions: []string{"v1alpha1"},
		APIServerFlags: []string{"--audit-policy-file=" + policy, "--audit-log-path=" + auditLog}})
	ns := c.namespace(t, "upgrade")
	ctx := context.Background()
	si := &mcsv1alpha1.ServiceImport{
		ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: "before"},
		Spec: mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.ClusterSetIP, IPs: []string{"10.42.11.1"},
			Ports: []mcsv1alpha1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}},
	}
	if _, err := c.mcs.MulticlusterV1alpha1().ServiceImports(ns).Create(ctx, si, meta.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := startWith(t, c.cp.Kubeconfig)
	before := "before." + ns + ".svc.clusterset.local."
	expectAddresses(t, s.server, before, dns.TypeA, propagation, "10.42.11.1")
	expectLoggedOnce(t, s.server, "Watching ServiceImports multicluster.x-k8s.io/v1alpha1")

	upgraded := time.Now()
	serveOnlyV1beta1(t, c.cp)
	if _, err := c.mcs.MulticlusterV1alpha1().ServiceImports(ns).List(ctx, meta.ListOptions{}); err == nil {
		t.Fatal("v1alpha1 still served after the upgrade")
	}
	c.createImport(t, newImport(ns, "after", "10.42.11.2"))
	// The API server ends the open v1alpha1 watch once the version's storage
	// is torn down, which waits for running requests up to its request
	// timeout (a minute); the plugin then sees NotFound within its retries.
	expectAddresses(t, s.server, "after."+ns+".svc.clusterset.local.", dns.TypeA, 90*time.Second, "10.42.11.2")
	t.Logf("clusterset names answered from v1beta1 %s after the CRD stopped serving v1alpha1", time.Since(upgraded).Round(time.Millisecond))
	expectAddresses(t, s.server, before, dns.TypeA, propagation, "10.42.11.1")
	expectAddresses(t, s.server, "after."+ns+".svc.cluster.local.", dns.TypeA, propagation, "10.42.11.2")
	expectLoggedOnce(t, s.server, "ServiceImports multicluster.x-k8s.io/v1alpha1 are no longer served: watching multicluster.x-k8s.io/v1beta1")
	poll.Eventually(t, 5*time.Second, "degraded{reason=crd} 0", func() (bool, string) {
		got := s.metric(t, "coredns_multicluster_degraded", `reason="crd"`)
		return got == 0, fmt.Sprint(got)
	})
	// The v1alpha1 cache leaves the gauge once v1beta1 has synced, a moment
	// after the first answer from v1beta1.
	poll.Eventually(t, 5*time.Second, "objects{kind=serviceimport} 2", func() (bool, string) {
		got := s.metric(t, "coredns_multicluster_objects", `kind="serviceimport"`)
		return got == 2, fmt.Sprint(got)
	})

	// The User-Agent: the version the binary reports, and the plugin.
	out, err := exec.Command(binary, "-version").Output()
	if err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0] // coredns-mcs-VERSION (CoreDNS-1.15.0)
	want := strings.Replace(first, "coredns-mcs-", "coredns-mcs/", 1) + " multicluster git_commit:"
	agents := auditedUserAgents(t, auditLog)
	found := false
	for a := range agents {
		if strings.HasPrefix(a, want) {
			found = true
		}
		if a == "coredns-mcs/multicluster" {
			t.Errorf("the API server saw the User-Agent %q, which has no version", a)
		}
	}
	if !found {
		t.Errorf("no ServiceImport request with a User-Agent starting %q; seen %v", want, agents)
	}
}

// auditedUserAgents returns the User-Agents of the audited requests.
func auditedUserAgents(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	agents := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var event struct {
			UserAgent string `json:"userAgent"`
		}
		if json.Unmarshal(sc.Bytes(), &event) == nil && event.UserAgent != "" {
			agents[event.UserAgent] = true
		}
	}
	return agents
}
