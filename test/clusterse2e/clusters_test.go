//go:build linux

// Package clusterse2e runs the user's story with real traffic: two real
// clusters (test/internal/node, joined by node.Connect into one flat pod network),
// coredns-mcs as the cluster DNS of each (the image make image builds,
// installed with manifests/install), an HTTP server `serve` in one cluster,
// and a pod in the other that calls it by serve.default.svc.cluster.local
// with its own resolver and search path.
package clusterse2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-mcs/coredns-mcs/internal/ociimage"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/node"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// nodeImage is the image of the serve and client pods: busybox (with
// httpd and wget) and dig.
const nodeImage = node.DNSUtilsImage

// image is the reference the coredns-mcs image is imported under; the
// install overlay points the Deployment at it.
const image = "ghcr.io/coredns-mcs/coredns-mcs:e2e"

// corefile is the Corefile of docs/karmada.md, section 1: fallback into
// cluster.local, Karmada's derived- Services, failover, and cache 30.
const corefile = `.:53 {
    errors
    health {
        lameduck 5s
    }
    ready
    multicluster clusterset.local {
        fallback cluster.local
        derived_prefix derived-
        failover
    }
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    prometheus :9153
    forward . /etc/resolv.conf
    cache 30
    loop
    reload
    loadbalance
}
`

// world is the two clusters with coredns-mcs as their DNS.
type world struct {
	t       *testing.T
	ctx     context.Context
	started time.Time
	members []*node.Node
	net     *node.Network
	work    string
}

// member names the clusters as the walkthrough does: cluster 0 is member1.
func memberName(i int) string { return fmt.Sprintf("member%d", i+1) }

// startWorld builds the image, starts two connected clusters and installs
// coredns-mcs in both as their cluster DNS.
func startWorld(t *testing.T) *world {
	t.Helper()
	w := startClusters(t)
	w.installDNS(false)
	return w
}

// startClusters builds the image and starts two connected clusters, with
// the image imported in both.
func startClusters(t *testing.T) *world {
	t.Helper()
	node.Require(t)
	w := &world{t: t, ctx: t.Context(), work: t.TempDir()}
	binary, err := harness.CoreDNSBinary(w.work)
	if err != nil {
		t.Fatal(err)
	}
	img, err := ociimage.CoreDNS{Binary: binary, Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH}}.Image()
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(w.work, "coredns-mcs.tar")
	if err := ociimage.WriteArchive(archive, image, img); err != nil {
		t.Fatal(err)
	}
	w.started = time.Now()
	w.members, w.net = node.ClustersForTest(t, 2, node.Options{Images: []string{archive}})
	t.Logf("two clusters up and connected after %.1fs", time.Since(w.started).Seconds())
	return w
}

// installDNS installs coredns-mcs in both clusters as their cluster DNS
// and waits until it is available. withoutMCSCRDs leaves the
// ServiceExport and ServiceImport CRDs out, for members whose CRDs
// Karmada propagates.
func (w *world) installDNS(withoutMCSCRDs bool) {
	w.t.Helper()
	root, err := testbin.RepoRoot()
	if err != nil {
		w.t.Fatal(err)
	}
	for i, m := range w.members {
		w.install(root, i, m, withoutMCSCRDs)
	}
	for _, m := range w.members {
		w.waitAvailable(m, "kube-system", "coredns")
	}
	w.t.Logf("coredns-mcs available in both clusters %.1fs after their start", time.Since(w.started).Seconds())
}

// install applies manifests/install to member i, with the image, the
// kube-dns ClusterIP of the cluster's layout, one replica (one node) and
// the Corefile above: a kustomize overlay, as a user would write.
func (w *world) install(root string, i int, m *node.Node, withoutMCSCRDs bool) {
	w.t.Helper()
	dir := filepath.Join(w.work, memberName(i))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	// kustomize loads bases relative to the overlay: link the manifests in.
	if err := os.Symlink(filepath.Join(root, "manifests"), filepath.Join(dir, "manifests")); err != nil {
		w.t.Fatal(err)
	}
	indented := "          " + strings.ReplaceAll(strings.TrimSuffix(corefile, "\n"), "\n", "\n          ")
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - manifests/install
images:
  - name: ghcr.io/coredns-mcs/coredns-mcs
    newTag: e2e
patches:
  - target: {kind: Service, name: kube-dns}
    patch: |-
      - op: replace
        path: /spec/clusterIP
        value: %s
  - target: {kind: Deployment, name: coredns}
    patch: |-
      - op: replace
        path: /spec/replicas
        value: 1
  - target: {kind: ConfigMap, name: coredns}
    patch: |-
      - op: replace
        path: /data/Corefile
        value: |
%s
`, m.Layout.ClusterDNS, indented)
	if withoutMCSCRDs {
		for _, crd := range []string{"serviceexports", "serviceimports"} {
			kustomization += fmt.Sprintf(`  - patch: |-
      $patch: delete
      apiVersion: apiextensions.k8s.io/v1
      kind: CustomResourceDefinition
      metadata:
        name: %s.multicluster.x-k8s.io
`, crd)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		w.t.Fatal(err)
	}
	// The first tries may fail: the CRDs are not established yet.
	poll.Eventually(w.t, 30*time.Second, "coredns-mcs installed in "+memberName(i), func() (bool, string) {
		_, err := m.Kubectl(w.ctx, dir, "apply", "--server-side", "-k", ".")
		return err == nil, fmt.Sprint(err)
	})
}

// apply applies YAML to member i.
func (w *world) apply(i int, yaml string) {
	w.t.Helper()
	if _, err := w.members[i].KubectlWithInput(w.ctx, "", strings.NewReader(yaml), "apply", "--server-side", "-f", "-"); err != nil {
		w.t.Fatalf("%s: %v", memberName(i), err)
	}
}

// kubectl runs kubectl against member i.
func (w *world) kubectl(i int, args ...string) string {
	w.t.Helper()
	out, err := w.members[i].Kubectl(w.ctx, "", args...)
	if err != nil {
		w.t.Fatalf("%s: %v", memberName(i), err)
	}
	return out
}

// waitAvailable waits until every replica of a Deployment is available.
func (w *world) waitAvailable(m *node.Node, namespace, name string) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.ctx, 2*time.Minute)
	defer cancel()
	err := poll.Until(ctx, fmt.Sprintf("%s: Deployment %s/%s available", m.Layout.Name, namespace, name), func() (bool, string) {
		d, err := m.Client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == *d.Spec.Replicas &&
			d.Status.AvailableReplicas == *d.Spec.Replicas && d.Status.Replicas == *d.Spec.Replicas, fmt.Sprintf("%+v", deploymentStatus(d))
	})
	if err != nil {
		pods, _ := m.Kubectl(w.ctx, "", "-n", namespace, "get", "pods", "-o", "wide")
		logs, _ := m.Kubectl(w.ctx, "", "-n", namespace, "logs", "deployment/"+name, "--tail=30")
		events, _ := m.Kubectl(w.ctx, "", "-n", namespace, "get", "events")
		w.t.Fatalf("%v\npods:\n%s\nlog:\n%s\nevents:\n%s", err, pods, logs, events)
	}
}

func deploymentStatus(d *appsv1.Deployment) any {
	if d == nil {
		return nil
	}
	return d.Status
}

// serveYAML is the HTTP server of the walkthrough: busybox httpd on 8080
// serving one page that names the pod and its node (so the cluster), and
// the Service serve on port 80.
func serveYAML(replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: serve
  namespace: default
spec:
  replicas: %d
  selector:
    matchLabels:
      app: serve
  template:
    metadata:
      labels:
        app: serve
    spec:
      terminationGracePeriodSeconds: 0
      containers:
        - name: serve
          image: %s
          imagePullPolicy: Never
          command: ["sh", "-c", "mkdir -p /www && echo \"$POD_NAME on $NODE_NAME\" > /www/index.html && exec httpd -f -p 8080 -h /www"]
          env:
            - name: POD_NAME
              valueFrom: {fieldRef: {fieldPath: metadata.name}}
            - name: NODE_NAME
              valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
          ports:
            - name: http
              containerPort: 8080
          readinessProbe:
            httpGet: {path: /, port: 8080}
            periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: serve
  namespace: default
spec:
  selector:
    app: serve
  ports:
    - name: http
      port: 80
      targetPort: 8080
`, replicas, node.DNSUtilsImage)
}

// startClient runs the pod `client` in member i: a shell that waits for
// commands through kubectl exec.
func (w *world) startClient(i int) {
	w.t.Helper()
	w.kubectl(i, "run", "client", "--restart=Never", "--image="+node.DNSUtilsImage, "--image-pull-policy=Never", "--", "sleep", "3600")
	w.kubectl(i, "wait", "--for=condition=Ready", "pod/client", "--timeout=120s")
}

// get runs `wget -qO- http://NAME` in member i's client pod and returns the
// body, or an error.
func (w *world) get(i int, name string) (string, error) {
	out, err := w.members[i].Kubectl(w.ctx, "", "exec", "client", "--", "timeout", "2", "wget", "-qO-", "http://"+name)
	return strings.TrimSpace(out), err
}

// expectGet waits (up to a minute: the cache of the Corefile) until `wget
// http://NAME` from member i answers a body from a pod of member want, and
// returns that body.
func (w *world) expectGet(i int, name string, want int) string {
	w.t.Helper()
	suffix := " on " + w.members[want].Layout.Name
	var body string
	poll.Eventually(w.t, time.Minute, fmt.Sprintf("%s: wget http://%s answers a page from serve in %s", memberName(i), name, memberName(want)), func() (bool, string) {
		var err error
		body, err = w.get(i, name)
		return err == nil && strings.HasSuffix(body, suffix) && strings.HasPrefix(body, "serve-"), fmt.Sprintf("%q, %v", body, err)
	})
	w.t.Logf("%s: wget -qO- http://%s -> %q", memberName(i), name, body)
	return body
}

// servicePorts are those of serve as an import lists them.
var servicePorts = []discoveryv1.EndpointPort{{Name: new("http"), Protocol: new(corev1.ProtocolTCP), Port: new(int32(80))}}
