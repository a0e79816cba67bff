package mcsctl

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/coredns-mcs/coredns-mcs/plugin/multicluster"
	"k8s.io/client-go/rest"
	kjson "sigs.k8s.io/json"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// firstFew is how many members of a set of objects a line names: a cluster
// may hold tens of thousands of imports, and a line names the first few
// and counts the rest.
const firstFew = 5

// maxReason bounds the reason given beside each name: a decoding error can
// quote a value.
const maxReason = 160

// Sample is a set of objects as kubectl mcs prints it: how many, and the
// first few, sorted.
type Sample struct {
	Count int      `json:"count"`
	First []string `json:"first"`
}

// add counts entry, and keeps it if it sorts among the first few: the set
// itself is never held.
func (s *Sample) add(entry string) {
	s.Count++
	i, _ := slices.BinarySearch(s.First, entry)
	if i >= firstFew {
		return
	}
	s.First = slices.Insert(s.First, i, entry)
	if len(s.First) > firstFew {
		s.First = s.First[:firstFew]
	}
}

// String is the first few, joined, and how many more there are.
func (s Sample) String() string {
	out := strings.Join(s.First, ", ")
	if more := s.Count - len(s.First); more > 0 {
		out += fmt.Sprintf(" and %d more", more)
	}
	return out
}

// sampleOf is the Sample of names.
func sampleOf(names []string) Sample {
	var s Sample
	for _, n := range names {
		s.add(n)
	}
	return s
}

// few is names as a line prints them: the first few, sorted, and how many
// more.
func few(names []string) string { return sampleOf(names).String() }

// clip bounds s to n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// importReport is the ServiceImports as the server reads them: each
// object decoded and validated by the plugin's own code, so that one it
// cannot read is named here instead of failing the list.
type importReport struct {
	version string
	total   int
	// skipped: the server leaves them out; their names do not answer.
	skipped Sample
	// skippedByName is why each named one is skipped, by NAMESPACE/NAME:
	// few, as such objects are, for explain to say so of the name asked.
	skippedByName map[string]string
	// dropped: the server serves them without some of their parts.
	dropped Sample
	// untyped: the server serves them, but the mcs-api Go types, which
	// controllers and other tools read them with, cannot decode them.
	untyped Sample
}

// readImports lists the ServiceImports of namespaces (every namespace when
// none) through the plugin's lister.
func readImports(ctx context.Context, cfg *rest.Config, namespaces []string) (*importReport, error) {
	l, err := multicluster.NewImportLister(cfg)
	if err != nil {
		return nil, err
	}
	r := &importReport{version: l.Version(), skippedByName: map[string]string{}}
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	for _, ns := range namespaces {
		if err := l.List(ctx, ns, 0, func(o multicluster.ImportObject) error { r.add(o); return nil }); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *importReport) add(o multicluster.ImportObject) {
	r.total++
	name := "(unnamed)"
	if o.Name != "" || o.Namespace != "" {
		name = o.Namespace + "/" + o.Name
	}
	switch {
	case o.Skipped != nil:
		why := clip(o.Skipped.Error(), maxReason)
		r.skipped.add(fmt.Sprintf("%s (%s)", name, why))
		if o.Name != "" {
			r.skippedByName[name] = why
		}
		return
	case len(o.Problems) > 0:
		r.dropped.add(fmt.Sprintf("%s (%s)", name, clip(strings.Join(o.Problems, "; "), maxReason)))
	}
	if err := decodeTyped(r.version, o.JSON); err != nil {
		r.untyped.add(fmt.Sprintf("%s (%s)", name, clip(err.Error(), maxReason)))
	}
}

// decodeTyped decodes b into the mcs-api Go type of version, as a clientset
// of those types decodes each object of a list: whole, status included.
func decodeTyped(version string, b []byte) error {
	var into any = &mcsv1beta1.ServiceImport{}
	if version == "v1alpha1" {
		into = &mcsv1alpha1.ServiceImport{}
	}
	return kjson.UnmarshalCaseSensitivePreserveInts(b, into)
}

// lines adds what r shows to c.
func (r *importReport) lines(c *checker) {
	if r.skipped.Count > 0 {
		c.add(fail, "imports", "%d of %d ServiceImports are skipped by the server, which logs each; their names do not answer: %s", r.skipped.Count, r.total, r.skipped)
	}
	if r.dropped.Count > 0 {
		c.add(warn, "imports", "%d ServiceImports are served without parts the server drops: %s", r.dropped.Count, r.dropped)
	}
	if r.untyped.Count > 0 {
		c.add(warn, "imports", "%d ServiceImports hold fields the mcs-api Go types (%s) cannot decode: the server does not read them and serves these imports, but a controller or tool built on those types fails to list their namespace: %s", r.untyped.Count, r.version, r.untyped)
	}
}
