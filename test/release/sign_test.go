package release

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/coredns-mcs/coredns-mcs/test/internal/controlplane"
	"github.com/coredns-mcs/coredns-mcs/test/internal/harness"
	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// startRegistry runs distribution's registry on 127.0.0.1 with its storage
// in a directory of the test, until the test ends, and returns its host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	bin := testbin.Binary(t, "registry", "registry")
	dir := t.TempDir()
	host := "127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
	config := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, filepath.Join(dir, "storage"), host)), 0o644); err != nil {
		t.Fatal(err)
	}
	logs, exited := harness.StartProcess(t, "registry", bin, "serve", config)
	harness.WaitFor(t, "the registry (GET /v2/)", exited, logs, 30*time.Second, func() bool {
		return harness.HTTPOK("http://" + host + "/v2/")
	})
	out, _ := exec.Command(bin, "--version").CombinedOutput()
	t.Logf("registry on %s: %s", host, strings.TrimSpace(string(out)))
	return host
}

// tool runs a release tool with a HOME of the test's own, so that no
// configuration of the machine's user plays a part.
type tool struct {
	t    *testing.T
	bin  string
	home string
	env  []string
}

func newTool(t *testing.T, set, binary string, env ...string) *tool {
	home := t.TempDir()
	return &tool{t: t, bin: testbin.Binary(t, set, binary), home: home,
		env: cleanEnv(append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + home + "/config", "XDG_CACHE_HOME=" + home + "/cache",
			"HELM_CACHE_HOME=" + home + "/cache", "HELM_CONFIG_HOME=" + home + "/config", "HELM_DATA_HOME=" + home + "/data"}, env...)...)}
}

func (c *tool) run(dir string, args ...string) (string, error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 3*time.Minute)
	defer cancel()
	return run(ctx, c.t, dir, c.env, c.bin, args...)
}

func (c *tool) must(dir string, args ...string) string {
	c.t.Helper()
	out, err := c.run(dir, args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

func (c *tool) fails(dir, why string, args ...string) string {
	c.t.Helper()
	out, err := c.run(dir, args...)
	if err == nil {
		c.t.Errorf("%s: %s %s passed:\n%s", why, filepath.Base(c.bin), strings.Join(args, " "), out)
	}
	return out
}

// TestSignPushVerify publishes the release as a release engineer does, to a
// distribution registry on loopback: the image index (the digest of the
// archive), cosign signatures of it and of each platform's image made with a
// key pair, each image's SBOM as a signed CycloneDX attestation, a signature
// of SHA256SUMS, the ArtifactHub repository metadata, and the chart with its
// provenance; then checks it as a user does: cosign verify,
// verify-attestation and verify-blob with the public key (and fails with
// another key, on an unsigned image, on a changed file), helm pull --verify,
// and helm install --verify from oci:// into a real API server.
func TestSignPushVerify(t *testing.T) {
	b := release(t)
	host := startRegistry(t)
	repo := host + "/coredns-mcs/coredns-mcs"
	ctx := t.Context()

	// The index, as crane push or skopeo copy would push the archive.
	idx := imageIndex(t, b)
	want, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(repo+":"+version, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, idx, remote.WithContext(ctx)); err != nil {
		t.Fatalf("push the image index: %v", err)
	}
	desc, err := remote.Head(tag, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest != want || desc.MediaType != types.OCIImageIndex {
		t.Fatalf("the registry holds %s %s, want the archive's index %s", desc.MediaType, desc.Digest, want)
	}
	t.Logf("pushed %s: %s", tag, want)
	byDigest := repo + "@" + want.String()

	keys := t.TempDir()
	cosign := newTool(t, "cosign", "cosign", "COSIGN_PASSWORD=release-test-password", "COSIGN_YES=true")
	cosign.must(keys, "generate-key-pair")
	key, pub := filepath.Join(keys, "cosign.key"), filepath.Join(keys, "cosign.pub")
	other := t.TempDir()
	cosign.must(other, "generate-key-pair")
	otherPub := filepath.Join(other, "cosign.pub")

	// Sign the index and each image; attest each image's SBOM.
	cosign.must(keys, "sign", "--key", key, "--tlog-upload=false", "--allow-http-registry", "--yes", "--recursive", byDigest)
	images := map[string]string{}
	for _, p := range platforms {
		_, d := platformImage(t, idx, p)
		images[p] = repo + "@" + d.String()
		sbom := b.file("coredns-mcs_" + version + "_" + strings.ReplaceAll(p, "/", "_") + "_coredns.cdx.json")
		cosign.must(keys, "attest", "--key", key, "--type", "cyclonedx", "--predicate", sbom,
			"--tlog-upload=false", "--allow-http-registry", "--yes", images[p])
	}

	t.Run("verify", func(t *testing.T) {
		cosign.t = t
		// By tag, as a user names it: cosign resolves it to the index.
		out := cosign.must(keys, "verify", "--key", pub, "--insecure-ignore-tlog", "--allow-http-registry", "--output", "json", repo+":"+version)
		if got := signedDigests(t, out); len(got) == 0 || got[0] != want.String() {
			t.Errorf("cosign verify of %s:%s verified %q, want the index %s", repo, version, got, want)
		}
		for p, ref := range images {
			out := cosign.must(keys, "verify", "--key", pub, "--insecure-ignore-tlog", "--allow-http-registry", "--output", "json", ref)
			if got := signedDigests(t, out); len(got) == 0 || repo+"@"+got[0] != ref {
				t.Errorf("cosign verify of the %s image verified %q", p, got)
			}
		}
		cosign.fails(keys, "another key", "verify", "--key", otherPub, "--insecure-ignore-tlog", "--allow-http-registry", byDigest)

		// An image nobody signed, under another tag of the repository.
		unsigned, err := random.Image(1024, 1)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := name.NewTag(repo+":unsigned", name.Insecure)
		if err := remote.Write(u, unsigned, remote.WithContext(ctx)); err != nil {
			t.Fatal(err)
		}
		cosign.fails(keys, "an unsigned image", "verify", "--key", pub, "--insecure-ignore-tlog", "--allow-http-registry", u.String())
	})

	t.Run("verify-attestation", func(t *testing.T) {
		cosign.t = t
		for p, ref := range images {
			out := cosign.must(keys, "verify-attestation", "--key", pub, "--type", "cyclonedx", "--insecure-ignore-tlog", "--allow-http-registry", ref)
			bom := attestedSBOM(t, out)
			binary := archiveFile(t, b.file("coredns-mcs_"+version+"_"+strings.ReplaceAll(p, "/", "_")+".tgz"), "coredns")
			sum := sha256.Sum256(binary)
			if bom.Metadata.Component.Version != version || bom.property("cdx:gomod:binary:hash:SHA-256") != hex.EncodeToString(sum[:]) {
				t.Errorf("%s: the attested SBOM is of %s %s, binary sha256 %s; want %s and the archive's coredns, %x",
					p, bom.Metadata.Component.Name, bom.Metadata.Component.Version, bom.property("cdx:gomod:binary:hash:SHA-256"), version, sum)
			} else {
				t.Logf("%s: attested SBOM of coredns %s (sha256 %x), %d components", p, version, sum[:6], len(bom.Components))
			}
			cosign.fails(keys, "another key", "verify-attestation", "--key", otherPub, "--type", "cyclonedx", "--insecure-ignore-tlog", "--allow-http-registry", ref)
		}
	})

	t.Run("verify-blob", func(t *testing.T) {
		cosign.t = t
		sums := b.file("SHA256SUMS")
		sig := filepath.Join(t.TempDir(), "SHA256SUMS.sig")
		cosign.must(keys, "sign-blob", "--key", key, "--tlog-upload=false", "--yes", "--output-signature", sig, sums)
		cosign.must(keys, "verify-blob", "--key", pub, "--signature", sig, "--insecure-ignore-tlog", sums)
		cosign.fails(keys, "another key", "verify-blob", "--key", otherPub, "--signature", sig, "--insecure-ignore-tlog", sums)
		changed := filepath.Join(t.TempDir(), "SHA256SUMS")
		data, err := os.ReadFile(sums)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(changed, append(data, []byte("0000  extra\n")...), 0o644); err != nil {
			t.Fatal(err)
		}
		cosign.fails(keys, "a changed SHA256SUMS", "verify-blob", "--key", pub, "--signature", sig, "--insecure-ignore-tlog", changed)
		// And the files are the ones SHA256SUMS lists.
		if sha := lookTool(t, "sha256sum", "coreutils"); sha != "" {
			mustRun(t, b.dir, nil, sha, "--check", "--strict", "SHA256SUMS")
		}
	})

	t.Run("artifacthub", func(t *testing.T) {
		// ArtifactHub reads an OCI repository's metadata from its tag
		// artifacthub.io: artifacthub-repo.yml as the one layer.
		meta, err := os.ReadFile(filepath.Join(b.root, "charts", "artifacthub-repo.yml"))
		if err != nil {
			t.Fatal(err)
		}
		img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
		img = mutate.ConfigMediaType(img, "application/vnd.cncf.artifacthub.config.v1+yaml")
		img, err = mutate.AppendLayers(img, static.NewLayer(meta, "application/vnd.cncf.artifacthub.repository-metadata.layer.v1.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := name.NewTag(host+"/charts/coredns-mcs:artifacthub.io", name.Insecure)
		if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
			t.Fatalf("push the ArtifactHub metadata: %v", err)
		}
		got, err := remote.Image(ref, remote.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		layers, err := got.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("%d layers (%v)", len(layers), err)
		}
		mt, _ := layers[0].MediaType()
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		var back bytes.Buffer
		_, _ = back.ReadFrom(rc)
		rc.Close()
		if mt != "application/vnd.cncf.artifacthub.repository-metadata.layer.v1.yaml" || !bytes.Equal(back.Bytes(), meta) {
			t.Errorf("the registry gives back %s %q", mt, back.String())
		}
	})

	t.Run("helm", func(t *testing.T) {
		chart := b.file("coredns-mcs-" + strings.TrimPrefix(version, "v") + ".tgz")
		if _, err := os.Stat(chart + ".prov"); err != nil {
			t.Fatalf("make release with CHART_SIGN_KEY wrote no provenance: %v", err)
		}
		helm := newTool(t, "helm", "helm")
		helm.must(b.dir, "verify", chart, "--keyring", b.pubring)
		_, otherRing, otherPubring, err := chartKey(t, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		_ = otherRing
		helm.fails(b.dir, "another key", "verify", chart, "--keyring", otherPubring)

		out := helm.must(b.dir, "push", chart, "oci://"+host+"/charts", "--plain-http")
		t.Logf("helm push: %s", strings.TrimSpace(out))
		ref := "oci://" + host + "/charts/coredns-mcs"
		chartVersion := strings.TrimPrefix(version, "v")
		pulled := t.TempDir()
		helm.must(pulled, "pull", ref, "--version", chartVersion, "--plain-http", "--verify", "--keyring", b.pubring, "-d", pulled)
		helm.fails(pulled, "another key", "pull", ref, "--version", chartVersion, "--plain-http", "--verify", "--keyring", otherPubring, "-d", t.TempDir())

		cp := controlplane.ForTest(t, controlplane.Options{})
		helm.fails(pulled, "another key", "install", "mcs", ref, "--version", chartVersion, "--plain-http", "--verify", "--keyring", otherPubring,
			"--namespace", "kube-system", "--kubeconfig", cp.Kubeconfig, "--set", "service.clusterIP=10.96.0.53")
		out = helm.must(pulled, "install", "mcs", ref, "--version", chartVersion, "--plain-http", "--verify", "--keyring", b.pubring,
			"--namespace", "kube-system", "--kubeconfig", cp.Kubeconfig, "--set", "service.clusterIP=10.96.0.53")
		t.Logf("helm install --verify %s:\n%s", ref, firstLines(out, "", 8))
		cs, err := kubernetes.NewForConfig(cp.Config)
		if err != nil {
			t.Fatal(err)
		}
		deps, err := cs.AppsV1().Deployments("kube-system").List(context.Background(), meta.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var found []string
		for _, d := range deps.Items {
			for _, c := range d.Spec.Template.Spec.Containers {
				found = append(found, d.Name+": "+c.Image)
				if c.Image != imageRef {
					t.Errorf("Deployment %s runs %s, want %s (the chart's appVersion)", d.Name, c.Image, imageRef)
				}
			}
		}
		if len(found) == 0 {
			t.Error("helm install from oci:// created no Deployment")
		}
		t.Logf("installed from %s %s: %s", ref, chartVersion, strings.Join(found, ", "))
	})

	t.Run("node", func(t *testing.T) { pullOnNode(t, host, repo, want) })
}

// signedDigests returns the docker-manifest-digest of each signature cosign
// verify printed (JSON).
func signedDigests(t *testing.T, out string) []string {
	t.Helper()
	i := strings.Index(out, "[")
	if i < 0 {
		t.Fatalf("cosign verify printed no JSON:\n%s", out)
	}
	var sigs []struct {
		Critical struct {
			Image struct {
				Digest string `json:"docker-manifest-digest"`
			} `json:"image"`
		} `json:"critical"`
	}
	if err := json.NewDecoder(strings.NewReader(out[i:])).Decode(&sigs); err != nil {
		t.Fatalf("cosign verify's JSON: %v\n%s", err, out)
	}
	var d []string
	for _, s := range sigs {
		d = append(d, s.Critical.Image.Digest)
	}
	return d
}

type cycloneDX struct {
	BOMFormat   string `json:"bomFormat"`
	SpecVersion string `json:"specVersion"`
	Metadata    struct {
		Component struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			PURL    string `json:"purl"`
		} `json:"component"`
		Properties []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"properties"`
	} `json:"metadata"`
	Components []struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		PURL    string `json:"purl"`
	} `json:"components"`
}

func (b cycloneDX) property(name string) string {
	for _, p := range b.Metadata.Properties {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

// attestedSBOM decodes the predicate of the in-toto statement cosign
// verify-attestation printed (one DSSE envelope per line).
func attestedSBOM(t *testing.T, out string) cycloneDX {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "{") {
			continue
		}
		var env struct {
			PayloadType string `json:"payloadType"`
			Payload     string `json:"payload"`
		}
		if json.Unmarshal([]byte(line), &env) != nil || env.Payload == "" {
			continue
		}
		payload, err := base64.StdEncoding.DecodeString(env.Payload)
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			PredicateType string    `json:"predicateType"`
			Predicate     cycloneDX `json:"predicate"`
			Subject       []struct {
				Digest map[string]string `json:"digest"`
			} `json:"subject"`
		}
		if err := json.Unmarshal(payload, &st); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(st.PredicateType, "cyclonedx") {
			t.Errorf("predicate type %q", st.PredicateType)
		}
		return st.Predicate
	}
	t.Fatalf("cosign verify-attestation printed no attestation:\n%s", out)
	return cycloneDX{}
}
