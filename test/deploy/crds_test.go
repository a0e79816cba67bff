package deploy

import (
	"bytes"
	"slices"
	"testing"

	mcscrd "sigs.k8s.io/mcs-api/config/crd"
	"sigs.k8s.io/yaml"
)

// TestCRDsMatchModule keeps manifests/crds byte for byte equal to the CRDs
// embedded in the sigs.k8s.io/mcs-api version go.mod pins, the schema the
// plugin is compiled against. After a bump of that module, copy the files
// from $(go env GOMODCACHE)/sigs.k8s.io/mcs-api@VERSION/config/crd/.
func TestCRDsMatchModule(t *testing.T) {
	for file, want := range map[string][]byte{
		"manifests/crds/multicluster.x-k8s.io_serviceimports.yaml": mcscrd.ServiceImportCRD,
		"manifests/crds/multicluster.x-k8s.io_serviceexports.yaml": mcscrd.ServiceExportCRD,
	} {
		got := readRepoFile(t, file)
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the CRD embedded in sigs.k8s.io/mcs-api; copy it from the module cache", file)
		}
	}

	// Both files are resources of the crds kustomization, with the
	// ClusterProperty CRD, and nothing else is.
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, "manifests/crds/kustomization.yaml"), &k); err != nil {
		t.Fatal(err)
	}
	want := []string{"multicluster.x-k8s.io_serviceimports.yaml", "multicluster.x-k8s.io_serviceexports.yaml", "about.k8s.io_clusterproperties.yaml"}
	if !slices.Equal(k.Resources, want) {
		t.Errorf("manifests/crds/kustomization.yaml resources = %v, want %v", k.Resources, want)
	}
}
