#!/usr/bin/env bash
# Builds the kube-apiserver and etcd binaries that the integration tests run
# (see test/controlplane) from the module graph pinned in this directory's
# go.mod/go.sum, and prints the directory that holds them.
#
# The result is cached under ${XDG_CACHE_HOME:-$HOME/.cache}/coredns-mcs/testbin/KEY,
# where KEY hashes everything that decides the output: go.mod, go.sum, the Go
# toolchain version, the target platform and the build recipe revision below.
# A cold build takes several minutes and a few GB of memory; a cache hit
# returns at once.
#
# Only the directory is written to stdout, so callers can use
#   dir=$(test/testbin/build.sh)
# All progress goes to stderr.
set -euo pipefail

# Bump when the build commands below change in a way that alters the binaries,
# so stale caches are not reused.
RECIPE_REVISION=1

KUBE_VERSION=v1.37.1
KUBE_MAJOR=1
KUBE_MINOR=37

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

# Build exactly what go.mod/go.sum pin, independent of the caller's workspace
# or module flags.
export GOWORK=off
export GOFLAGS="-mod=readonly -buildvcs=false"
# Static binaries, as the upstream release builds are; they do not depend on
# the C library of whatever machine reuses the cache.
export CGO_ENABLED=0

log() { printf 'testbin: %s\n' "$*" >&2; }

goversion="$(go env GOVERSION)"
goos="$(go env GOOS)"
goarch="$(go env GOARCH)"
key="$(
	{
		cat go.mod go.sum
		printf '%s\n%s/%s\nrecipe=%s\n' "$goversion" "$goos" "$goarch" "$RECIPE_REVISION"
	} | sha256sum | cut -c1-16
)"

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/coredns-mcs/testbin"
target="$cache_root/$key"

complete() {
	[[ -x "$1/kube-apiserver" && -x "$1/etcd" ]]
}

if complete "$target"; then
	printf '%s\n' "$target"
	exit 0
fi

mkdir -p "$cache_root"

# Several test packages may ask for the binaries at the same time (go test
# runs packages in parallel); serialise the builds so only one of them does
# the expensive work and the others reuse its result.
if command -v flock >/dev/null 2>&1; then
	exec 9>"$cache_root/.lock-$key"
	if ! flock -n 9; then
		log "waiting for another build of $key to finish"
		flock 9
	fi
	if complete "$target"; then
		printf '%s\n' "$target"
		exit 0
	fi
	# Holding the lock, any build directory for this key is a leftover of
	# a build that was killed.
	rm -rf "$cache_root/.build-$key."*
fi

tmp="$(mktemp -d "$cache_root/.build-$key.XXXXXX")"
chmod 755 "$tmp" # mktemp makes it private; the cache is meant to be shared
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT

start=$SECONDS
log "building kube-apiserver $KUBE_VERSION and etcd into $target (cold builds take several minutes)"

log "downloading modules"
go mod download >&2

log "building kube-apiserver"
go build -trimpath \
	-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=$KUBE_MAJOR -X k8s.io/component-base/version.gitMinor=$KUBE_MINOR" \
	-o "$tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2

# `go install go.etcd.io/etcd/server/v3@v3.7.0` refuses to work because the
# etcd server module has replace directives, so build it from this module's
# graph instead.
log "building etcd"
go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3 >&2

"$tmp/kube-apiserver" --version >&2
"$tmp/etcd" --version >&2

# A leftover, incomplete directory (from a build killed midway through an
# older, non-atomic layout or by hand) would make the rename fail.
if [[ -e "$target" ]] && ! complete "$target"; then
	rm -rf "$target"
fi
if ! mv -T "$tmp" "$target" 2>/dev/null; then
	# Another builder without flock won the race; its result is equivalent.
	complete "$target" || {
		log "could not move $tmp to $target"
		exit 1
	}
fi
trap - EXIT
rm -rf "$tmp"

log "built in $((SECONDS - start))s"
printf '%s\n' "$target"
