// Package buildcache serves a Go build cache directory (go env GOCACHE)
// over HTTP, read only, to test/cmd/gocacheprog: GET /ACTIONID (hex)
// answers 200 with the action's output as the body and the output's ID in
// the Go-Output-Id header, or 404.
package buildcache

import (
	"crypto/sha256"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Handle answers one request for an entry of the cache in dir, and reports
// whether it served the entry (false: 404).
func Handle(dir string, w http.ResponseWriter, r *http.Request) bool {
	output, ok := Entry(dir, strings.TrimPrefix(r.URL.Path, "/"))
	if !ok {
		http.NotFound(w, r)
		return false
	}
	w.Header().Set("Go-Output-Id", output)
	http.ServeFile(w, r, filepath.Join(dir, output[:2], output+"-d"))
	return true
}

// Entry reads the entry of action (hex) in the build cache dir and returns
// the output's ID (hex), if the entry and its output are there. The layout
// is cmd/go/internal/cache's: DIR/XX/ACTION-a holds "v1 ACTION OUTPUT SIZE
// TIME", DIR/XX/OUTPUT-d the output.
func Entry(dir, action string) (string, bool) {
	if len(action) != 2*sha256.Size || strings.Trim(action, "0123456789abcdef") != "" {
		return "", false
	}
	entry, err := os.ReadFile(filepath.Join(dir, action[:2], action+"-a"))
	if err != nil {
		return "", false
	}
	f := strings.Fields(string(entry))
	if len(f) != 5 || f[0] != "v1" || f[1] != action || len(f[2]) != 2*sha256.Size {
		return "", false
	}
	size, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return "", false
	}
	info, err := os.Stat(filepath.Join(dir, f[2][:2], f[2]+"-d"))
	if err != nil || info.Size() != size {
		return "", false
	}
	return f[2], true
}
