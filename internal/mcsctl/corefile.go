package mcsctl

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/plugin"
	meta "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// corefile is a parsed Corefile and where it came from.
type corefile struct {
	source string
	blocks []caddyfile.ServerBlock
}

// splitName splits NAMESPACE/NAME.
func splitName(s string) (namespace, name string, err error) {
	namespace, name, ok := strings.Cut(s, "/")
	if !ok || namespace == "" || name == "" {
		return "", "", fmt.Errorf("%q: want NAMESPACE/NAME", s)
	}
	return namespace, name, nil
}

// loadCorefile reads the Corefile of --corefile, else of the ConfigMap.
func loadCorefile(ctx context.Context, o *options, kube kubernetes.Interface) (*corefile, error) {
	var text, source string
	if o.corefile != "" {
		data, err := os.ReadFile(o.corefile)
		if err != nil {
			return nil, err
		}
		text, source = string(data), o.corefile
	} else {
		ns, name, err := splitName(o.configMap)
		if err != nil {
			return nil, fmt.Errorf("--corefile-configmap %w", err)
		}
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name, meta.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("the Corefile's ConfigMap: %w", err)
		}
		var ok bool
		if text, ok = cm.Data["Corefile"]; !ok {
			return nil, fmt.Errorf("ConfigMap %s has no key Corefile", o.configMap)
		}
		source = "ConfigMap " + o.configMap
	}
	return parseCorefile(source, text)
}

func parseCorefile(source, text string) (*corefile, error) {
	// Directives are not checked here: the server's own plugin.cfg decides
	// which exist. Imports and snippets are expanded by the parser.
	blocks, err := caddyfile.Parse(source, strings.NewReader(text), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return &corefile{source: source, blocks: blocks}, nil
}

// zonesOf returns the zones of a server block's keys, fully qualified and
// lower case, without scheme or port.
func zonesOf(b caddyfile.ServerBlock) []string {
	var zones []string
	for _, k := range b.Keys {
		k = strings.TrimPrefix(k, "dns://")
		if i := strings.LastIndex(k, ":"); i >= 0 {
			if _, err := strconv.Atoi(k[i+1:]); err == nil {
				k = k[:i]
			}
		}
		zones = append(zones, plugin.Host(k).NormalizeExact()...)
	}
	return zones
}

// blockFor returns the server block that serves name, as CoreDNS picks it:
// the longest zone that name lies in.
func (cf *corefile) blockFor(name string) (caddyfile.ServerBlock, string, bool) {
	name = strings.ToLower(name)
	var best caddyfile.ServerBlock
	bestZone, found := "", false
	for _, b := range cf.blocks {
		for _, z := range zonesOf(b) {
			if plugin.Name(z).Matches(name) && (!found || len(z) > len(bestZone)) {
				best, bestZone, found = b, z, true
			}
		}
	}
	return best, bestZone, found
}

// stanza returns a controller positioned before the stanza of directive in
// block, for a plugin's own parser, and the stanza's first line; ok is
// false when the block has none.
func stanza(b caddyfile.ServerBlock, directive string) (c *caddy.Controller, line int, ok bool) {
	tokens := b.Tokens[directive]
	if len(tokens) == 0 {
		return nil, 0, false
	}
	// Lines before the stanza keep the plugins' own errors at the line
	// numbers of the Corefile.
	var text strings.Builder
	text.WriteString(strings.Repeat("\n", max(tokens[0].Line-1, 0)))
	last := tokens[0].Line
	for i, t := range tokens {
		switch {
		case i == 0:
		case t.Line != last:
			text.WriteString("\n")
		default:
			text.WriteString(" ")
		}
		last = t.Line
		if strings.ContainsAny(t.Text, " \t\"") || t.Text == "" {
			text.WriteString(strconv.Quote(t.Text))
		} else {
			text.WriteString(t.Text)
		}
	}
	c = caddy.NewTestController("dns", text.String())
	for _, k := range b.Keys {
		if !strings.Contains(k, "://") {
			k = "dns://" + k
		}
		c.ServerBlockKeys = append(c.ServerBlockKeys, k)
	}
	return c, tokens[0].Line, true
}

// stanzaError is a plugin's parse error with the Corefile's name where the
// parser, given the stanza alone, says "Testfile".
func stanzaError(source string, err error) string {
	return strings.Replace(err.Error(), "Testfile:", source+":", 1)
}
