# The vuln set: govulncheck of golang.org/x/vuln, and an offline Go
# vulnerability database in the v1 format govulncheck reads (-db file:///...),
# built from the OSV reports in data/osv of golang.org/x/vulndb at the
# revision go.mod pins, with vulndb's cmd/indexdb (the tool that builds the
# database vuln.go.dev serves). To take newer reports, raise that requirement:
#   (cd test/testbin/vuln && GOFLAGS= go get golang.org/x/vulndb@master && GOFLAGS= go mod tidy)
binaries=(
	"govulncheck golang.org/x/vuln/cmd/govulncheck"
	"indexdb golang.org/x/vulndb/cmd/indexdb"
)
outputs=(
	vulndb/index/db.json
	vulndb/index/modules.json
	vulndb/index/vulns.json
)
assemble() {
	local src
	src="$(cd "$OLDPWD" && go list -m -f '{{.Dir}}' golang.org/x/vulndb)/data/osv"
	"$TESTBIN_DIR/indexdb" -vulns "$src" -out vulndb
	printf 'golang.org/x/vulndb %s\n' "$(cd "$OLDPWD" && go list -m -f '{{.Version}}' golang.org/x/vulndb)" > vulndb/SOURCE
	cat vulndb/index/db.json; echo
}
check() {
	./govulncheck -version 2>/dev/null | head -3 || true
	echo "vulndb: $(cat vulndb/SOURCE), $(find vulndb/ID -name '*.json' | wc -l) entries"
}
