package karmada

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/coredns-mcs/coredns-mcs/test/internal/testbin"
)

// crdDir is where Karmada's CRDs are in its module: the ones its installers
// apply to karmada-apiserver, including its copies of the ServiceExport and
// ServiceImport CRDs (multicluster.x-k8s.io v1alpha1).
const crdDir = "charts/karmada/_crds/bases"

// ModuleDir returns the directory of github.com/karmada-io/karmada in the Go
// module cache, at the version the karmada set pins, downloading it if need
// be. The tests read Karmada's CRDs from there rather than keep copies.
func ModuleDir() (string, error) {
	root, err := testbin.RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/karmada-io/karmada")
	cmd.Dir = filepath.Join(root, "test", "testbin", "karmada")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locate the Karmada module (go mod download in %s): %w: %s", cmd.Dir, err, stderr.String())
	}
	var module struct{ Dir, Version, Error string }
	if err := json.Unmarshal(out, &module); err != nil {
		return "", fmt.Errorf("locate the Karmada module: %w", err)
	}
	if module.Error != "" || module.Dir == "" {
		return "", fmt.Errorf("locate the Karmada module: %s", module.Error)
	}
	if module.Version != Version {
		return "", fmt.Errorf("test/testbin/karmada pins Karmada %s, this package expects %s", module.Version, Version)
	}
	return module.Dir, nil
}

// readCRDs decodes every CRD under crdDir of the Karmada module.
func readCRDs(moduleDir string) ([]*unstructured.Unstructured, error) {
	var paths []string
	err := filepath.WalkDir(filepath.Join(moduleDir, crdDir), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
			paths = append(paths, path)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read Karmada's CRDs: %w", err)
	}
	sort.Strings(paths)
	var crds []*unstructured.Unstructured
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read Karmada's CRDs: %w", err)
		}
		crd := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &crd.Object); err != nil {
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if crd.GetKind() != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s holds a %s, want a CustomResourceDefinition", path, crd.GetKind())
		}
		crds = append(crds, crd)
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CRDs under %s", filepath.Join(moduleDir, crdDir))
	}
	return crds, nil
}

// installCRDs installs every CRD of Karmada's in karmada-apiserver, as
// Karmada's installers do. The conversion-webhook patches of the chart
// (charts/karmada/_crds/patches) are left out: every client here uses the
// storage versions.
func (k *Karmada) installCRDs(ctx context.Context) error {
	crds, err := readCRDs(k.moduleDir)
	if err != nil {
		return err
	}
	return k.APIServer.ApplyCRDs(ctx, crds...)
}
