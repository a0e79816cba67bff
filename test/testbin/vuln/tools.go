//go:build tools

// Package vuln pins govulncheck and the Go vulnerability database's own
// sources (golang.org/x/vulndb, whose data/osv holds every report as OSV
// JSON), from which recipe.sh builds an offline database with vulndb's
// cmd/indexdb, the tool that builds vuln.go.dev's v1 database.
package vuln

import (
	_ "golang.org/x/vuln/cmd/govulncheck"
	_ "golang.org/x/vulndb/cmd/indexdb"
)
