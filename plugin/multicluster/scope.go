// The fallback scope: which imports may answer in fallback zones, from
// fallback_scope, and the system namespaces kept out unless
// system_fallback names them.

package multicluster

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// fallbackScope says which imports may answer in fallback zones, from the
// patterns of the fallback_scope option. A pattern is NAMESPACE/NAME, each
// side a name in which '*' stands for any run of characters; a leading '!'
// makes it an exclusion. A name may fall back when it matches no exclusion
// and, if there are patterns that include, at least one of them.
//
// It is consulted when the sources file an import, never per query: the
// import's spec, and so its view, carries the verdict.
type fallbackScope struct {
	include, exclude []scopePattern
	// system are the patterns of the namespaces whose imports never answer
	// in fallback zones, unless a pattern of optIn names them
	// (system_fallback): a system component's traffic must not leave the
	// cluster because its Service is briefly missing. Nil: none (a scope
	// without fallback zones, or built by hand in a test); withSystem
	// always sets it, empty or not, and default/kubernetes is a system
	// name whenever it is set.
	system []string
	optIn  []scopePattern
}

// defaultSystemNamespaces are the patterns of the namespaces of the
// cluster's own components, unless system_namespaces names others:
// Kubernetes reserves the kube- prefix for its system namespaces, and
// OpenShift the openshift- prefix and openshift, refusing projects so named
// to users. The namespace the server runs in is added to either.
var defaultSystemNamespaces = []string{"kube-*", "openshift", "openshift-*"}

// withSystem returns s (nil: allow all) with the namespaces that the
// patterns system match kept out of fallback zones, and default/kubernetes,
// except the names that optIn patterns match.
func (s *fallbackScope) withSystem(system []string, optIn []scopePattern) *fallbackScope {
	out := &fallbackScope{system: append([]string{}, system...), optIn: optIn}
	if s != nil {
		out.include, out.exclude = s.include, s.exclude
	}
	return out
}

// apiServerService is the Service of the cluster's API server, which every
// pod reaches by name (kubernetes.default.svc): a system name, though its
// namespace is not a system namespace.
var apiServerService = scopePattern{namespace: "default", name: "kubernetes"}

// systemRefuses reports whether namespace/name is a system name that no
// system_fallback pattern opts in. A scope without system namespaces (no
// fallback zones, or built by hand in a test) refuses nothing.
func (s *fallbackScope) systemRefuses(namespace, name string) bool {
	return s.systemVerdict(namespace, name) != inScope
}

// systemVerdict is systemRefuses's verdict, with its rule: the API
// server's Service, or a system namespace.
func (s *fallbackScope) systemVerdict(namespace, name string) scopeVerdict {
	if s == nil || s.system == nil {
		return inScope
	}
	verdict := systemRefused
	switch {
	case apiServerService.matches(namespace, name):
		verdict = apiServerRefused
	case !isSystemNamespace(s.system, namespace):
		return inScope
	}
	for _, p := range s.optIn {
		if p.matches(namespace, name) {
			return inScope
		}
	}
	return verdict
}

// isSystemNamespace reports whether namespace matches one of the patterns
// system.
func isSystemNamespace(system []string, namespace string) bool {
	for _, p := range system {
		if globMatch(p, namespace) {
			return true
		}
	}
	return false
}

// parseSystemNamespaces parses the arguments of system_namespaces: namespace
// names in which '*' stands for any run of characters.
func parseSystemNamespaces(args []string) ([]string, error) {
	var out []string
	for _, arg := range args {
		if err := checkGlob(arg); err != nil {
			return nil, fmt.Errorf("%q: %w", arg, err)
		}
		if !slices.Contains(out, arg) {
			out = append(out, arg)
		}
	}
	return out, nil
}

// parseSystemOptIn parses the arguments of system_fallback: NAMESPACE/NAME
// patterns whose name may use '*'. Which namespaces are system ones is
// known once every option is read: checkSystemOptIn says whether they are.
func parseSystemOptIn(args []string) ([]scopePattern, error) {
	var out []scopePattern
	for _, arg := range args {
		p, exclude, err := parseScopePattern(arg)
		if err != nil {
			return nil, err
		}
		if exclude {
			return nil, fmt.Errorf("%q: system_fallback names what may fall back; leave the others out rather than excluding them", arg)
		}
		out = append(out, p)
	}
	return out, nil
}

// checkSystemOptIn checks that the namespace of each pattern of
// system_fallback is spelled out (a wildcard there would opt in namespaces
// nobody named) and is a system one, that the patterns system match; or
// that the pattern is default/kubernetes.
func checkSystemOptIn(optIn []scopePattern, system []string) error {
	for _, p := range optIn {
		arg := p.namespace + "/" + p.name
		switch {
		case p == apiServerService:
		case strings.Contains(p.namespace, "*"):
			return fmt.Errorf("%q: name the namespace itself, not %q: a wildcard there would opt in namespaces nobody named", arg, p.namespace)
		case !isSystemNamespace(system, p.namespace):
			return fmt.Errorf("%q: %q is not a system namespace (%s): its imports fall back already", arg, p.namespace, strings.Join(system, ", "))
		}
	}
	return nil
}

// scopePattern is one NAMESPACE/NAME pattern.
type scopePattern struct {
	namespace, name string
}

// newFallbackScope parses the arguments of fallback_scope.
func newFallbackScope(args []string) (*fallbackScope, error) {
	scope := &fallbackScope{}
	for _, arg := range args {
		p, exclude, err := parseScopePattern(arg)
		if err != nil {
			return nil, err
		}
		if exclude {
			scope.exclude = append(scope.exclude, p)
		} else {
			scope.include = append(scope.include, p)
		}
	}
	return scope, nil
}

// parseScopePattern parses one argument of fallback_scope.
func parseScopePattern(arg string) (p scopePattern, exclude bool, err error) {
	s, exclude := strings.CutPrefix(arg, "!")
	ns, name, ok := strings.Cut(s, "/")
	if !ok || strings.Contains(name, "/") {
		return p, false, fmt.Errorf("%q is not NAMESPACE/NAME", arg)
	}
	for _, part := range []string{ns, name} {
		if err := checkGlob(part); err != nil {
			return p, false, fmt.Errorf("%q: %w", arg, err)
		}
	}
	return scopePattern{namespace: ns, name: name}, exclude, nil
}

// checkGlob accepts a DNS label in which '*' may stand for any part.
func checkGlob(g string) error {
	if g == "" {
		return fmt.Errorf("an empty name")
	}
	if g == "*" {
		return nil
	}
	// Every '*' replaced by a letter, what is left must be possible in a
	// DNS label, so that the pattern can match some name.
	probe := strings.ReplaceAll(g, "*", "a")
	for _, c := range probe {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("%q has %q: names are lower-case letters, digits, '-' and the wildcard '*'", g, c)
		}
	}
	if len(probe) > validation.DNS1123LabelMaxLength {
		return fmt.Errorf("%q is longer than a name can be", g)
	}
	return nil
}

// scopeVerdict is whether an import may answer in fallback zones, and if
// not, which rule keeps it out.
type scopeVerdict uint8

const (
	inScope          scopeVerdict = iota
	scopeRefused                  // fallback_scope keeps it local
	systemRefused                 // a system namespace that system_fallback does not name
	apiServerRefused              // the API server's Service, which system_fallback does not name
)

// system reports whether a system rule, not fallback_scope, refused.
func (v scopeVerdict) system() bool { return v == systemRefused || v == apiServerRefused }

// allows reports whether the import namespace/name may answer in fallback
// zones. A nil scope allows everything.
func (s *fallbackScope) allows(namespace, name string) bool {
	return s.verdict(namespace, name) == inScope
}

// verdict says whether the import namespace/name may answer in fallback
// zones, and if not, why. A nil scope allows everything.
func (s *fallbackScope) verdict(namespace, name string) scopeVerdict {
	if s == nil {
		return inScope
	}
	if v := s.systemVerdict(namespace, name); v != inScope {
		return v
	}
	for _, p := range s.exclude {
		if p.matches(namespace, name) {
			return scopeRefused
		}
	}
	if len(s.include) == 0 {
		return inScope
	}
	for _, p := range s.include {
		if p.matches(namespace, name) {
			return inScope
		}
	}
	return scopeRefused
}

func (p scopePattern) matches(namespace, name string) bool {
	return globMatch(p.namespace, namespace) && globMatch(p.name, name)
}

// globMatch reports whether s matches pattern, in which '*' matches any run
// of characters, including none.
func globMatch(pattern, s string) bool {
	first, rest, wild := strings.Cut(pattern, "*")
	if !wild {
		return pattern == s
	}
	if !strings.HasPrefix(s, first) {
		return false
	}
	s = s[len(first):]
	// rest is what follows the first '*': every further literal part must
	// appear in order, and the last one at the end.
	parts := strings.Split(rest, "*")
	for i, part := range parts {
		if i == len(parts)-1 {
			return len(s) >= len(part) && strings.HasSuffix(s, part)
		}
		j := strings.Index(s, part)
		if j < 0 {
			return false
		}
		s = s[j+len(part):]
	}
	return true
}
