#!/usr/bin/env bash
# Builds the third-party binaries the tests run, and prints the directory that
# holds each set of them, one line per set, in the order asked:
#
#   test/testbin/build.sh [SET...]      (default: kube)
#
# A set is a directory next to this script: a nested Go module (go.mod,
# go.sum, tools.go) that pins the main packages, and a recipe.sh that names
# them. The sets are
#
#   kube   kube-apiserver, etcd, kubelet, kube-proxy, kube-scheduler,
#          kube-controller-manager and kubectl (Kubernetes v1.37.1, etcd v3.7.0)
#   mcs    the mcs-api reference controller (servicecontroller)
#   karmada  karmada-aggregated-apiserver, -controller-manager, -scheduler and
#          -webhook v1.18.2, with Karmada's own module graph
#   prometheus  the Prometheus server and promtool (github.com/prometheus/prometheus
#          v0.316.0), for the alerting rules' tests
#   helm   the helm command (helm.sh/helm/v3 v3.22.0), for the chart's tests
#
# Each set is cached under ${XDG_CACHE_HOME:-$HOME/.cache}/coredns-mcs/testbin/SET-KEY,
# where KEY hashes everything that decides the output: the set's go.mod,
# go.sum and recipe.sh, the Go toolchain version, the target platform and the
# revision of this script. A cold build takes minutes and a few GB of memory;
# a cache hit returns at once.
#
# Only the directories go to stdout, so callers can use
#   dir=$(test/testbin/build.sh kube)
# With --env first, each line is an assignment instead, TESTBIN_<SET>=DIR,
# which the tests read (test/internal/testbin):
#   test/testbin/build.sh --env kube mcs > testbin.env
# All progress goes to stderr.
#
# recipe.sh is sourced with the set's directory as working directory. It sets
#   binaries   an array of "NAME PACKAGE": go build PACKAGE -o NAME
#   ldflags    the -ldflags of every build (optional, default "-s -w")
#   tags       the -tags of every build (optional)
# and may define check(), run in the finished directory (print versions).
set -euo pipefail

# Bump when this script changes in a way that alters the binaries, so that
# stale caches are not reused.
SCRIPT_REVISION=2

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/coredns-mcs/testbin"

# Build exactly what go.mod/go.sum pin, independent of the caller's workspace
# or module flags.
export GOWORK=off
export GOFLAGS="-mod=readonly -buildvcs=false"
# Static binaries, as the upstream release builds are; they do not depend on
# the C library of whatever machine reuses the cache.
export CGO_ENABLED=0

log() { printf 'testbin: %s\n' "$*" >&2; }

# complete reports whether dir holds every binary of the recipe just sourced.
complete() {
	local entry
	for entry in "${binaries[@]}"; do
		[[ -x "$1/${entry%% *}" ]] || return 1
	done
}

# build_set builds set $1 if it is not cached, and prints its directory.
build_set() {
	local set="$1" dir="$here/$1"
	if [[ ! -f "$dir/recipe.sh" || ! -f "$dir/go.mod" ]]; then
		log "no set $set: $dir needs go.mod and recipe.sh"
		return 1
	fi
	(
		cd "$dir"
		binaries=() ldflags="-s -w" tags=""
		check() { :; }
		# shellcheck source=/dev/null
		source ./recipe.sh

		local key
		key="$(
			{
				cat go.mod go.sum recipe.sh
				printf '%s\n%s/%s\nscript=%s\n' "$(go env GOVERSION)" "$(go env GOOS)" "$(go env GOARCH)" "$SCRIPT_REVISION"
			} | sha256sum | cut -c1-16
		)"
		local target="$cache_root/$set-$key"
		if complete "$target"; then
			printf '%s\n' "$target"
			exit 0
		fi
		mkdir -p "$cache_root"

		# Several test packages may ask for the same set at once (go test runs
		# packages in parallel): only one builds it, the others wait for it.
		exec 9>"$cache_root/.lock-$set-$key"
		if ! flock -n 9; then
			log "waiting for another build of $set-$key to finish"
			flock 9
		fi
		if complete "$target"; then
			printf '%s\n' "$target"
			exit 0
		fi
		# Holding the lock, any build directory for this key is a leftover of
		# a build that was killed.
		rm -rf "$cache_root/.build-$set-$key."*

		local tmp
		tmp="$(mktemp -d "$cache_root/.build-$set-$key.XXXXXX")"
		chmod 755 "$tmp" # mktemp makes it private; the cache is meant to be shared
		trap 'rm -rf "$tmp"' EXIT

		local start=$SECONDS entry
		log "building set $set into $target (cold builds take minutes)"
		log "downloading modules of $set"
		go mod download >&2
		for entry in "${binaries[@]}"; do
			log "building ${entry%% *}"
			go build -trimpath ${tags:+-tags "$tags"} -ldflags "$ldflags" -o "$tmp/${entry%% *}" "${entry#* }" >&2
		done
		(cd "$tmp" && check) >&2

		# A leftover, incomplete directory (a build killed midway, or one
		# removed by hand in part) would make the rename fail.
		if [[ -e "$target" ]] && ! complete "$target"; then
			rm -rf "$target"
		fi
		mv -T "$tmp" "$target"
		trap - EXIT
		log "built set $set in $((SECONDS - start))s"
		printf '%s\n' "$target"
	)
}

env=false
if [[ ${1:-} == --env ]]; then
	env=true
	shift
fi
if [[ $# -eq 0 ]]; then
	set -- kube
fi
for set in "$@"; do
	dir="$(build_set "$set")"
	if $env; then
		printf 'TESTBIN_%s=%q\n' "${set^^}" "$dir"
	else
		printf '%s\n' "$dir"
	fi
done
