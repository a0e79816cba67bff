//go:build !linux

package release

import (
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func pullOnNode(t *testing.T, _, _ string, _ v1.Hash) {
	t.Skip("skipping: the node (test/internal/node) runs on Linux only")
}
