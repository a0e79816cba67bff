// Command relver keeps the release version and writes a release's manifests
// (make release runs it):
//
//	relver set vX.Y.Z        make vX.Y.Z the version everywhere (VERSION, manifests,
//	                         chart, docs, CHANGELOG.md) and list the files changed
//	relver check             fail if a place disagrees with VERSION
//	relver krew -dir DIR -version vX.Y.Z -url URL > mcs.yaml
//	                         the krew plugin manifest of the archives in DIR
//	relver sums -dir DIR > SHA256SUMS
//	                         the checksums of every file of the release
//	relver published [-version vX.Y.Z]
//	                         fail if the chart differs from the one released
//	                         as that version (its git tag)
//	relver signkey -chart Chart.yaml -fingerprint FPR -url URL
//	                         name the chart's signing key for ArtifactHub
//	                         (artifacthub.io/signKey), in place
//	relver sbom -version vX.Y.Z FILE...
//	                         name this repository's own modules (the plugin's)
//	                         in CycloneDX SBOMs by module path and version, in
//	                         place, not by the directory the build replaced
//	                         them with
//
// set and check work on the repository in the working directory (-root).
// set dates the changelog section with SOURCE_DATE_EPOCH when it is set.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/coredns-mcs/coredns-mcs/internal/release"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "relver:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: relver set vX.Y.Z | check | krew -dir DIR -version V -url URL | sums -dir DIR | signkey -chart FILE -fingerprint FPR -url URL | sbom [-version V] FILE...")
	}
	fs := flag.NewFlagSet("relver "+args[0], flag.ContinueOnError)
	root := fs.String("root", ".", "the repository")
	dir := fs.String("dir", "release", "the release directory")
	version := fs.String("version", "", "the release version (default: VERSION's)")
	url := fs.String("url", "", "the address the release's archives (krew) or the signing key (signkey) are downloaded from")
	chart := fs.String("chart", "", "the chart's Chart.yaml (signkey)")
	fingerprint := fs.String("fingerprint", "", "the OpenPGP fingerprint of the chart's signing key (signkey)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "set":
		if fs.NArg() != 1 {
			return fmt.Errorf("usage: relver set vX.Y.Z")
		}
		date := time.Now()
		if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
			sec, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
			}
			date = time.Unix(sec, 0)
		}
		changed, err := release.Set(*root, fs.Arg(0), date)
		for _, f := range changed {
			fmt.Fprintf(os.Stderr, "relver: %s: %s\n", f, fs.Arg(0))
		}
		return err
	case "check":
		problems, err := release.Check(*root)
		if err != nil {
			return err
		}
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "relver:", p)
		}
		if len(problems) > 0 {
			return fmt.Errorf("the release version disagrees in %d files: make release VERSION=$(cat VERSION) rewrites them", len(problems))
		}
		return nil
	case "krew":
		v, err := releaseVersion(*root, *version)
		if err != nil {
			return err
		}
		if *url == "" {
			return fmt.Errorf("krew: -url is required")
		}
		data, err := release.KrewManifest(*dir, v, *url)
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(data)
		return err
	case "published":
		v, err := releaseVersion(*root, *version)
		if err != nil {
			return err
		}
		tagged, changed, err := release.PublishedChartChanges(*root, v, release.ChartDir)
		if err != nil {
			return err
		}
		if tagged && len(changed) > 0 {
			return fmt.Errorf("%s differs from the chart released as %s (tag %s): %s; a chart version is published once: make release VERSION=<a newer version>",
				release.ChartDir, v, v, strings.Join(changed, ", "))
		}
		return nil
	case "signkey":
		data, err := os.ReadFile(*chart)
		if err != nil {
			return err
		}
		if data, err = release.ChartSignKey(data, *fingerprint, *url); err != nil {
			return err
		}
		return os.WriteFile(*chart, data, 0o644)
	case "sbom":
		v, err := releaseVersion(*root, *version)
		if err != nil {
			return err
		}
		for _, f := range fs.Args() {
			data, err := os.ReadFile(f)
			if err == nil {
				data, err = release.NameLocalModules(data, *root, v)
			}
			if err == nil {
				err = os.WriteFile(f, data, 0o644)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
		}
		return nil
	case "sums":
		data, err := release.Checksums(*dir)
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(data)
		return err
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// releaseVersion is -version, or VERSION's when it is not given.
func releaseVersion(root, flagged string) (string, error) {
	if flagged != "" {
		return flagged, nil
	}
	return release.ReadVersion(root)
}
