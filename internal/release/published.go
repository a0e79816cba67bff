package release

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// ChartDir is the chart's directory in the repository.
const ChartDir = "charts/coredns-mcs"

// PublishedChartChanges compares the chart of the working tree in root (the
// files of dir, committed or not, and new ones git does not ignore) with the
// chart of the release tag of version (refs/tags/VERSION), if that tag
// exists: a chart version is published once, so that a chart changed since
// its release needs a new version (chart-testing's check-version-increment,
// pkg/config/config.go of helm/chart-testing, against the release tag
// instead of a target branch). A tree that is not a git checkout has
// no tags: tagged is false.
func PublishedChartChanges(root, version, dir string) (tagged bool, changed []string, err error) {
	git := func(args ...string) ([]byte, error) {
		cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return out, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return out, nil
	}
	if _, err := git("rev-parse", "--git-dir"); err != nil {
		return false, nil, nil
	}
	if _, err := git("rev-parse", "-q", "--verify", "refs/tags/"+version+"^{commit}"); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return false, nil, nil
		}
		return false, nil, err
	}
	diff, err := git("diff", "--name-only", "refs/tags/"+version, "--", dir)
	if err != nil {
		return true, nil, err
	}
	untracked, err := git("ls-files", "--others", "--exclude-standard", "--", dir)
	if err != nil {
		return true, nil, err
	}
	for _, f := range strings.Fields(string(diff) + "\n" + string(untracked)) {
		if !slices.Contains(changed, f) {
			changed = append(changed, f)
		}
	}
	slices.Sort(changed)
	return true, changed, nil
}
