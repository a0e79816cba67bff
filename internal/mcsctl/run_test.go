package mcsctl

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestCommandHelp: COMMAND --help lists that command's flags, and none of
// another command's; a flag of another command is refused.
func TestCommandHelp(t *testing.T) {
	common := []string{"-kubeconfig", "-context", "-timeout", "-v"}
	for _, c := range []struct {
		cmd      string
		has, not []string
	}{
		{"front", append([]string{"-platform", "-apply", "-remove", "-read-timeout", "-standalone-service"}, common...), []string{"-deployment", "-corefile", "-o "}},
		{"check", append([]string{"-deployment", "-corefile", "-corefile-configmap", "-o "}, common...), []string{"-platform", "-apply", "-read-timeout"}},
		{"explain", append([]string{"-corefile", "-corefile-configmap", "-o "}, common...), []string{"-platform", "-apply", "-deployment"}},
		{"version", nil, append([]string{"-platform", "-deployment"}, common...)},
	} {
		var stdout, stderr bytes.Buffer
		if code := Run(context.Background(), []string{c.cmd, "--help"}, &stdout, &stderr); code != 0 {
			t.Errorf("%s --help: exit %d\n%s", c.cmd, code, stderr.String())
		}
		help := stderr.String()
		if !strings.HasPrefix(help, "Usage: kubectl mcs "+c.cmd) {
			t.Errorf("%s --help does not start with its usage line:\n%s", c.cmd, help)
		}
		for _, f := range c.has {
			if !strings.Contains(help, "  "+f) {
				t.Errorf("%s --help lacks %s:\n%s", c.cmd, f, help)
			}
		}
		for _, f := range c.not {
			if strings.Contains(help, "  "+f) {
				t.Errorf("%s --help lists %s, another command's flag:\n%s", c.cmd, f, help)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Run(context.Background(), []string{"front", "--deployment", "kube-system/coredns"}, &stdout, &stderr); code != 2 {
		t.Errorf("front --deployment: exit %d, want 2 (check's flag)\n%s", code, stderr.String())
	}
}
