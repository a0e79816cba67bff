package release

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The changelog's sections: "## Unreleased", then "## vX.Y.Z - YYYY-MM-DD",
// newest first (keepachangelog.com's layout).
var (
	unreleasedHeading = regexp.MustCompile(`(?m)^## Unreleased[ \t]*$`)
	versionHeading    = regexp.MustCompile(`(?m)^## (v\d+\.\d+\.\d+)(?:[ \t]+-[ \t]+(\d{4}-\d{2}-\d{2}))?[ \t]*$`)
	anyHeading        = regexp.MustCompile(`(?m)^## `)
)

// Released returns the versions the changelog has sections for, newest
// (first in the file) first.
func Released(changelog []byte) []string {
	var out []string
	for _, m := range versionHeading.FindAllSubmatch(changelog, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// Changelog returns changelog with the notes under "## Unreleased" made the
// section of version, dated date, under a new empty "## Unreleased". A
// changelog that has a section for version already is returned as it is.
// It refuses a version without notes, and one that is not newer than the
// newest version of the changelog.
func Changelog(changelog []byte, version string, date time.Time) ([]byte, error) {
	released := Released(changelog)
	for _, v := range released {
		if v == version {
			return changelog, nil
		}
	}
	if len(released) > 0 && !newer(version, released[0]) {
		return nil, fmt.Errorf("%s is not newer than %s, the newest version of the changelog", version, released[0])
	}
	loc := unreleasedHeading.FindIndex(changelog)
	if loc == nil {
		return nil, fmt.Errorf("no section for %s and no \"## Unreleased\" section to make it of", version)
	}
	bodyStart := loc[1]
	bodyEnd := len(changelog)
	if next := anyHeading.FindIndex(changelog[bodyStart:]); next != nil {
		bodyEnd = bodyStart + next[0]
	}
	body := strings.TrimSpace(string(changelog[bodyStart:bodyEnd]))
	if body == "" {
		return nil, fmt.Errorf("no release notes for %s: write them under \"## Unreleased\" first", version)
	}
	if date.IsZero() {
		date = time.Now()
	}
	section := "## Unreleased\n\n## " + version + " - " + date.UTC().Format("2006-01-02") + "\n\n" + body + "\n\n"
	out := append([]byte{}, changelog[:loc[0]]...)
	out = append(out, section...)
	return append(out, changelog[bodyEnd:]...), nil
}

// newer reports whether version a is above b; both are vX.Y.Z.
func newer(a, b string) bool {
	pa, pb := SemVer.FindStringSubmatch(a), SemVer.FindStringSubmatch(b)
	if pa == nil || pb == nil {
		return false
	}
	for i := 1; i <= 3; i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x > y
		}
	}
	return false
}

// Notes returns the items of version's section of the changelog: each
// top-level "- " bullet, its continuation lines joined into one line.
func Notes(changelog []byte, version string) []string {
	var body string
	for _, loc := range versionHeading.FindAllSubmatchIndex(changelog, -1) {
		if string(changelog[loc[2]:loc[3]]) != version {
			continue
		}
		rest := changelog[loc[1]:]
		if next := anyHeading.FindIndex(rest); next != nil {
			rest = rest[:next[0]]
		}
		body = string(rest)
		break
	}
	var items []string
	for _, line := range strings.Split(body, "\n") {
		switch {
		case strings.HasPrefix(line, "- "):
			items = append(items, strings.TrimSpace(line[2:]))
		case len(items) > 0 && strings.TrimSpace(line) != "" && (line[0] == ' ' || line[0] == '\t'):
			items[len(items)-1] += " " + strings.TrimSpace(line)
		}
	}
	return items
}
