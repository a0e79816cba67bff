//go:build linux

package clusterse2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/coredns-mcs/coredns-mcs/test/internal/karmada"
	"github.com/coredns-mcs/coredns-mcs/test/internal/poll"
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// docBlock returns the YAML block after the marker `<!-- MARKER -->` in
// docs/karmada.md: the walkthrough runs what the guide shows. The serve
// image of the guide (busybox) is the busybox of the image the nodes
// build, as no registry is reachable here.
func docBlock(t *testing.T, marker string) string {
	t.Helper()
	root, err := testbin.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "karmada.md"))
	if err != nil {
		t.Fatal(err)
	}
	start := "<!-- " + marker + " -->\n```yaml\n"
	i := bytes.Index(doc, []byte(start))
	if i < 0 {
		t.Fatalf("docs/karmada.md: no block %q", marker)
	}
	block := string(doc[i+len(start):])
	block = block[:strings.Index(block, "```")]
	return strings.ReplaceAll(block, "image: busybox:1.37\n", "image: "+nodeImage+"\n          imagePullPolicy: Never\n")
}

// karmadaWorld is the two clusters as members of a Karmada control plane,
// which runs in the fabric's namespace (it reaches both API servers there).
type karmadaWorld struct {
	*world
	k *karmada.Karmada
}

// karmadactl runs kubectl against karmada-apiserver, in the fabric.
func (kw *karmadaWorld) karmadactl(input string, args ...string) string {
	kw.t.Helper()
	cmd := exec.CommandContext(kw.ctx, filepath.Join(kw.members[0].KubeDir, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kw.k.APIServer.Kubeconfig)
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := kw.net.NetNS.Do(cmd.Start); err != nil {
		kw.t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		kw.t.Fatalf("kubectl %s (karmada-apiserver): %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

func (kw *karmadaWorld) karmadaApply(yaml string) {
	kw.t.Helper()
	kw.karmadactl(yaml, "apply", "--server-side", "-f", "-")
}

// TestKarmada is the walkthrough of docs/karmada.md with real members and
// traffic: serve runs in member1, Karmada exports it and imports it into
// member2, and a pod in member2 calls it by serve.default.svc.cluster.local;
// then through a MultiClusterService; then serve runs in both and
// member2's replicas go to 0 (an OverridePolicy) and back.
func TestKarmada(t *testing.T) {
	w := startClusters(t)
	kw := &karmadaWorld{world: w}
	began := time.Now()
	kw.k = karmada.ForTest(t, karmada.Options{
		NetNS: w.net.NetNS,
		Members: []*karmada.Member{
			{Name: karmada.Member1, ControlPlane: w.members[0].ControlPlane},
			{Name: karmada.Member2, ControlPlane: w.members[1].ControlPlane},
		},
	})
	t.Logf("Karmada up with both clusters joined as members after %.1fs", time.Since(began).Seconds())
	// Karmada propagated its ServiceExport and ServiceImport CRDs.
	w.installDNS(true)
	for i := range w.members {
		w.startClient(i)
	}

	kw.karmadaApply(docBlock(t, "clusterse2e: serve"))
	kw.karmadaApply(docBlock(t, "karmadae2e: export"))
	kw.karmadaApply(docBlock(t, "karmadae2e: import"))
	w.waitDeployment(0, "serve")
	t.Run("ServiceImport", func(t *testing.T) {
		derived := w.waitService(1, "derived-serve")
		w.expectDig(1, "serve.default.svc.cluster.local", derived)
		w.expectGet(1, "serve.default.svc.cluster.local", 0)
		t.Logf("cluster start to the first cross-cluster response: %.1fs", time.Since(w.started).Seconds())
		w.expectGet(1, "serve.default", 0)
		w.expectGet(1, "serve.default.svc.clusterset.local", 0)
		w.expectGet(0, "serve.default.svc.cluster.local", 0)
		w.expectGet(0, "serve.default", 0)
	})
	t.Run("MultiClusterService", func(t *testing.T) {
		if err := kw.k.RestartControllerManager(w.ctx, "MultiClusterService=true"); err != nil {
			t.Fatal(err)
		}
		kw.karmadaApply(docBlock(t, "karmadae2e: multiclusterservice"))
		local := w.waitService(1, "serve")
		w.expectDig(1, "serve.default.svc.cluster.local", local)
		w.expectGet(1, "serve.default.svc.cluster.local", 0)
		w.expectGet(1, "serve.default", 0)
		w.expectGet(1, "serve.default.svc.clusterset.local", 0)
		kw.karmadactl("", "delete", "multiclusterservice", "serve")
		kw.waitServiceRemoved(1, "serve")
	})
	t.Run("failover", func(t *testing.T) {
		kw.karmadaApply(docBlock(t, "clusterse2e: serve-everywhere"))
		w.waitDeployment(1, "serve")
		w.measureFailover(t, func(replicas int) {
			if replicas == 0 {
				kw.karmadaApply(docBlock(t, "clusterse2e: member2-down"))
				return
			}
			kw.karmadactl("", "delete", "overridepolicy", "serve-member2-down")
		})
	})
}

// waitDeployment waits until member i has Deployment name and it is
// available.
func (w *world) waitDeployment(i int, name string) {
	w.t.Helper()
	poll.Eventually(w.t, time.Minute, memberName(i)+": Deployment "+name, func() (bool, string) {
		_, err := w.members[i].Client.AppsV1().Deployments("default").Get(w.ctx, name, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	w.waitAvailable(w.members[i], "default", name)
}

// waitService waits until member i has Service name with a ClusterIP and
// returns the address.
func (w *world) waitService(i int, name string) string {
	w.t.Helper()
	var ip string
	poll.Eventually(w.t, time.Minute, memberName(i)+": Service "+name+" with a ClusterIP", func() (bool, string) {
		s, err := w.members[i].Client.CoreV1().Services("default").Get(w.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ip = s.Spec.ClusterIP
		return ip != "", "no ClusterIP"
	})
	w.t.Logf("%s: Service %s, ClusterIP %s", memberName(i), name, ip)
	return ip
}

// waitServiceRemoved waits until Karmada has removed Service name from
// member i, after the object that propagated it was deleted. Karmada
// v1.18.2 does not always: once in this test, its controller-manager logged
// an update of the Service 29 ms after it logged the Service's deletion,
// and the update re-created it (a Service can be created by an update:
// AllowCreateOnUpdate in kubernetes' pkg/registry/core/service/strategy.go).
// Its Work was gone by then, so nothing removed it again. A Service left
// behind with no Work of Karmada's for it is deleted here, as
// docs/karmada.md tells users to, and logged; one with a Work fails the
// test, as before.
func (kw *karmadaWorld) waitServiceRemoved(i int, name string) {
	kw.t.Helper()
	ctx, cancel := context.WithTimeout(kw.ctx, 30*time.Second)
	defer cancel()
	gone := func() (bool, string) {
		_, err := kw.members[i].Client.CoreV1().Services("default").Get(kw.ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err.Error()
		}
		return err != nil, "still there"
	}
	if poll.Until(ctx, memberName(i)+": Service "+name+" gone", gone) == nil {
		return
	}
	// What Karmada's Works for the member hold, KIND/NAME a line.
	manifests := kw.karmadactl("", "get", "works", "-n", "karmada-es-"+memberName(i), "-o",
		`jsonpath={range .items[*]}{range .spec.workload.manifests[*]}{.kind}/{.metadata.name}{"\n"}{end}{end}`)
	if slices.Contains(strings.Fields(manifests), "Service/"+name) {
		kw.t.Fatalf("%s: Service %s still there after 30s, and a Work of Karmada's still holds it", memberName(i), name)
	}
	kw.t.Logf("%s: Karmada left Service %s behind with no Work for it; deleting it as docs/karmada.md says", memberName(i), name)
	kw.kubectl(i, "delete", "service", name, "--ignore-not-found")
	kw.waitNoService(i, name)
}

// waitNoService waits until member i has no Service name.
func (w *world) waitNoService(i int, name string) {
	w.t.Helper()
	poll.Eventually(w.t, time.Minute, memberName(i)+": Service "+name+" gone", func() (bool, string) {
		_, err := w.members[i].Client.CoreV1().Services("default").Get(w.ctx, name, metav1.GetOptions{})
		return err != nil, "still there"
	})
}
