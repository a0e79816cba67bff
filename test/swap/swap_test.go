//go:build linux

// Package swap runs the user's scenario on a real node (test/internal/node): a
// cluster DNS as kubeadm makes it, running stock CoreDNS 1.14.4, is swapped
// for the coredns-mcs image exactly as docs/deploy.md says, verified, and
// rolled back, while a pod looks names up every 100 ms.
package swap

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coredns-mcs/coredns-mcs/test/internal/node"
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

var (
	// stockVersion is the stock CoreDNS of the cluster DNS: the version k3s
	// v1.35.6 ships (internal/front's table), without forward's
	// read_timeout (1.14.5 on), as every k3s, EKS and AKS version of the
	// table: the standalone server's outages are run where they cost most.
	// SWAP_STOCK_VERSION runs another (v1.14.6: kubeadm 1.37's, with it).
	stockVersion = cmp.Or(os.Getenv("SWAP_STOCK_VERSION"), "v1.14.4")
	// stockImage is stockVersion built from its module (see
	// testdata/kubeadm-coredns.yaml).
	stockImage = "coredns-mcs.test/coredns:" + stockVersion
)

const (
	// mcsImageName is how the kustomizations name the image; the test's
	// own build gets the tag mcsImageTag.
	mcsImageName = "ghcr.io/coredns-mcs/coredns-mcs"
	mcsImageTag  = "e2e-local"
	// The names the looker-up pod asks for all along, and what they answer
	// (see testdata/demo.yaml).
	localName      = "web.demo.svc.cluster.local."
	clustersetName = "remote.demo.svc.clusterset.local."
	importedName   = "remote.demo.svc.cluster.local."
	remoteIP       = "10.100.0.50"
	webImportIP    = "10.100.0.51"

	// oldPodsGone bounds the wait, after `rollout status` returns, for the
	// old pods to be gone: they are terminating then (lameduck 5s), and the
	// lookups pod keeps counting until they are.
	oldPodsGone = 2 * time.Minute
)

// maxLookupGap is the longest a lookups client may go without a lookup
// returning while a phase lasts: dig's timeout of 2 s (a lookup that takes
// longer is a failure of its own), and room for a starved machine to start
// the next: each lookup is six processes (dig, sed, awk, cut, tr, echo).
// With the race detector and the fuzzer on both cores besides the node, a
// swap phase saw 10 lookups in 24.9 s, none failed, and a gap of 5.8 s.
// A pod that stopped asking still shows: the phases last 10 s or more.
const maxLookupGap = 8.0

func TestSwapCoreDNS(t *testing.T) {
	node.Require(t)
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	began := time.Now()
	mcsArchive := buildImage(t, corednsBinary(t, work), mcsImageName+":"+mcsImageTag, filepath.Join(work, "coredns-mcs.tar"))
	stockArchive := buildImage(t, stockCoreDNS(t, work), stockImage, filepath.Join(work, "stock.tar"))
	t.Logf("images built in %.1fs", time.Since(began).Seconds())

	n := node.ForTest(t, node.Options{Images: []string{mcsArchive, stockArchive}})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	s := &scenario{t: t, n: n, ctx: ctx, root: root, work: work}
	// The phases run in turn, each on what the one before left: after a
	// failed phase, the test stops.
	phase := func(name string, run func(t *testing.T)) {
		t.Helper()
		ok := t.Run(name, func(t *testing.T) {
			parent := s.t
			s.t = t
			defer func() { s.t = parent }()
			run(t)
		})
		if !ok {
			t.FailNow()
		}
	}
	var (
		webIP                        string
		looker                       *lookups
		corefileBackup, manifests    string
		swapStart, swapDone, swapEnd float64
	)

	phase("kubeadm", func(t *testing.T) {
		// Before: kubeadm's cluster DNS, stock CoreDNS, answering a pod.
		manifest, err := os.ReadFile(s.testdata("kubeadm-coredns.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		s.kubectlWithInput(strings.ReplaceAll(string(manifest), "coredns-mcs.test/coredns:v1.14.4", stockImage), "create", "-f", "-")
		s.kubectl("-n", "kube-system", "rollout", "status", "deploy/coredns", "--timeout=3m")
		first := s.dig("first", query{"+notcp", "kubernetes.default.svc.cluster.local.", "A"})
		first.expect(t, query{"+notcp", "kubernetes.default.svc.cluster.local.", "A"}, "NOERROR", "10.96.0.1")
		t.Logf("node start to the first pod's dig answered through %s: %.1fs", node.ClusterDNS, time.Since(n.Started()).Seconds())

		// The cluster's workload and the imports, on the CRDs as the docs'
		// step-by-step apply installs them.
		s.kubectl("apply", "--server-side", "-k", filepath.Join(root, "manifests", "crds"))
		s.kubectl("apply", "-f", s.testdata("demo.yaml"))
		s.kubectl("-n", "demo", "rollout", "status", "deploy/web", "--timeout=2m")
		webIP = strings.TrimSpace(s.kubectl("-n", "demo", "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}"))
		s.waitEndpoints("demo", "web", 2)

		before := s.dig("before", dnsQueries(webIP)...)
		for _, proto := range protos {
			before.expect(t, query{proto, localName, "A"}, "NOERROR", webIP)
			before.expect(t, query{proto, importedName, "A"}, "NXDOMAIN")
		}

		looker = s.startLookups()
	})
	phase("swap", func(t *testing.T) {
		// docs/deploy.md, "Swap an existing CoreDNS".
		// 1. Save what a rollback needs.
		corefileBackup = s.kubectl("-n", "kube-system", "get", "configmap", "coredns", "-o", "jsonpath={.data.Corefile}")
		imageBackup := s.kubectl("-n", "kube-system", "get", "deployment", "coredns",
			"-o", `jsonpath={.spec.template.spec.containers[?(@.name=="coredns")].image}`)
		if imageBackup != stockImage || !strings.Contains(corefileBackup, "kubernetes cluster.local") {
			t.Fatalf("backups: image %q, Corefile:\n%s", imageBackup, corefileBackup)
		}
		writeFile(t, filepath.Join(work, "Corefile.backup"), corefileBackup)
		writeFile(t, filepath.Join(work, "image.backup"), imageBackup)
		// 2. Pick the image: edit newTag in a copy of manifests/, as the docs
		// say to do by hand.
		manifests = s.copyManifests(mcsImageTag)
		// 3. Apply: check first, then apply.
		s.kubectl("apply", "--server-side", "--force-conflicts", "--dry-run=server", "-k", manifests)
		swapReadiness := s.watchReadiness()
		swapStart = uptime(t)
		s.kubectl("apply", "--server-side", "--force-conflicts", "-k", manifests)

		// "Verify".
		s.kubectl("-n", "kube-system", "rollout", "status", "deploy/coredns", "--timeout=3m")
		swapDone = uptime(t)
		t.Logf("swap: rollout status returned %.1fs after the apply", swapDone-swapStart)
		s.checkReadiness("swap", swapReadiness)
		if image := s.kubectl("-n", "kube-system", "get", "deploy", "coredns", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); image != mcsImageName+":"+mcsImageTag {
			t.Errorf("after the swap the Deployment runs %q", image)
		}
		s.expectLog("Watching ServiceImports multicluster.x-k8s.io/v1beta1", "Synced 2 ServiceImports")
		s.checkMetrics(2)
		s.checkContainers()
		// The old pods keep serving through lameduck (5s) after rollout status
		// returns: ask once they are gone (the lookups pod measures the switch).
		s.waitOldDNSPodsGone()
		swapEnd = uptime(t)
		after := s.dig("after-swap", dnsQueries(webIP)...)
		for _, proto := range protos {
			after.expect(t, query{proto, localName, "A"}, "NOERROR", webIP)
			after.expect(t, query{proto, importedName, "A"}, "NOERROR", remoteIP)
			after.expect(t, query{proto, clustersetName, "A"}, "NOERROR", remoteIP)
			after.expect(t, query{proto, "web.demo.svc.clusterset.local.", "A"}, "NOERROR", webImportIP)
			after.expect(t, query{proto, "_http._tcp." + clustersetName, "SRV"}, "NOERROR", "80 "+clustersetName)
			after.expect(t, query{proto, reverse(remoteIP), "PTR"}, "NOERROR", clustersetName)
			after.expect(t, query{proto, reverse(webIP), "PTR"}, "NOERROR", localName)
			after.expect(t, query{proto, "kubernetes.default.svc.cluster.local.", "A"}, "NOERROR", "10.96.0.1")
		}
	})
	phase("rollback", func(t *testing.T) {
		// "Roll back": the Corefile first, then the image.
		undoReadiness := s.watchReadiness()
		undoStart := uptime(t)
		configMap := s.kubectl("-n", "kube-system", "create", "configmap", "coredns", "--from-file=Corefile=Corefile.backup",
			"--dry-run=client", "-o", "yaml")
		s.kubectlWithInput(configMap, "apply", "--server-side", "--force-conflicts", "-f", "-")
		s.kubectl("-n", "kube-system", "rollout", "undo", "deploy/coredns")
		s.kubectl("-n", "kube-system", "rollout", "status", "deploy/coredns", "--timeout=3m")
		undoDone := uptime(t)
		t.Logf("undo: rollout status returned %.1fs after the Corefile was restored", undoDone-undoStart)
		s.checkReadiness("undo", undoReadiness)
		if image := s.kubectl("-n", "kube-system", "get", "deploy", "coredns", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); image != stockImage {
			t.Errorf("after rollout undo the Deployment runs %q, want %q", image, stockImage)
		}
		s.waitOldDNSPodsGone()
		undoEnd := uptime(t)
		results := looker.stop()
		undone := s.dig("after-undo", dnsQueries(webIP)...)
		for _, proto := range protos {
			undone.expect(t, query{proto, localName, "A"}, "NOERROR", webIP)
			undone.expect(t, query{proto, importedName, "A"}, "NXDOMAIN")
		}

		// The lookups of the pod all along. The clusterset name answers only
		// from the new image: when it last failed during the swap, and last
		// answered during the undo, is when the Service switched over for good.
		want := map[string]string{localName: webIP, clustersetName: remoteIP}
		t.Logf("swap: the clusterset name last failed %.1fs after the apply; rollout status returned after %.1fs",
			results.last(clustersetName, swapStart, swapEnd, false, remoteIP)-swapStart, swapDone-swapStart)
		t.Logf("undo: the clusterset name last answered %.1fs after the Corefile was restored; rollout status returned after %.1fs",
			results.last(clustersetName, undoStart, undoEnd, true, remoteIP)-undoStart, undoDone-undoStart)
		for _, phase := range []struct {
			name       string
			start, end float64
			// oldPodsShipped: the pods that shut down in this rollout are
			// this repository's (the undo); in the swap they are kubeadm's.
			oldPodsShipped bool
		}{
			{"swap", swapStart, swapEnd, false},
			{"undo", undoStart, undoEnd, true},
		} {
			for _, c := range lookupClients {
				total, failed := results.count(c.name, c.label, phase.start, phase.end, want[c.name])
				t.Logf("%s (%.1fs): %s %s: %d lookups, %d failed%s", phase.name, phase.end-phase.start, c.name, c.what,
					total, len(failed), failureList(failed))
				// The pod kept asking throughout: a lookup returns at most
				// dig's 2 s after it began, and the pod's shell starts the
				// next within moments, which on a busy machine may be a few
				// seconds. (A count of lookups says the same only on an idle
				// machine.)
				if gap := results.longestGap(c.name, c.label, phase.start, phase.end); gap > maxLookupGap {
					t.Errorf("%s: no lookup of %s %s returned for %.1fs (of %d in %.1fs): the pod did not keep asking", phase.name, c.name, c.what, gap, total, phase.end-phase.start)
				}
				if c.name != localName || len(failed) == 0 {
					continue
				}
				// A client that keeps its UDP source port stays pinned by
				// conntrack to the pod it first reached; when that pod exits
				// before kube-proxy drops the entry, the client's queries go
				// nowhere for a moment. The shipped probe timing prevents that
				// for the pods of the shipped manifests (see
				// manifests/coredns-image.yaml); kubeadm's pods, which the swap
				// replaces, keep kubeadm's timing.
				if c.fixedPort && !phase.oldPodsShipped {
					t.Logf("%s: the pinned client lost %d queries when one of kubeadm's pods exited", phase.name, len(failed))
					continue
				}
				t.Errorf("%s: %d of %d lookups of the local name %s %s failed", phase.name, len(failed), total, c.name, c.what)
			}
		}
	})
	phase("standalone", func(t *testing.T) {
		// docs/platforms.md on the same node, stock CoreDNS serving again.
		s.standalone(manifests, corefileBackup, webIP)
	})
	phase("fresh install", func(t *testing.T) {
		// The rest of "Roll back": the multicluster role goes.
		s.kubectl("delete", "-k", filepath.Join(manifests, "rbac"))

		// "Fresh install", on the same node once kubeadm's CoreDNS is gone:
		// with foreground deletion kubectl returns only after its pods are, so
		// that none of them, still ready, lands in the new kube-dns Service
		// (same selector) and answers the checks below as stock CoreDNS.
		s.kubectl("-n", "kube-system", "delete", "--cascade=foreground", "deployment/coredns", "service/kube-dns", "configmap/coredns", "serviceaccount/coredns")
		s.kubectl("delete", "clusterrole/system:coredns", "clusterrolebinding/system:coredns")
		s.applyFreshInstall(filepath.Join(manifests, "install"))
		s.kubectl("-n", "kube-system", "rollout", "status", "deploy/coredns", "--timeout=3m")
		installed := s.dig("after-install", dnsQueries(webIP)...)
		for _, proto := range protos {
			installed.expect(t, query{proto, localName, "A"}, "NOERROR", webIP)
			installed.expect(t, query{proto, importedName, "A"}, "NOERROR", remoteIP)
			installed.expect(t, query{proto, clustersetName, "A"}, "NOERROR", remoteIP)
			installed.expect(t, query{proto, "_http._tcp." + clustersetName, "SRV"}, "NOERROR", "80 "+clustersetName)
			installed.expect(t, query{proto, reverse(remoteIP), "PTR"}, "NOERROR", clustersetName)
		}
		s.checkContainers()
	})
}
