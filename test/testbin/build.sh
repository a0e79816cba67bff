#!/usr/bin/env bash
# Builds the third-party binaries the tests run, and prints the directory that
# holds each set of them, one line per set, in the order asked:
#
#   test/testbin/build.sh [SET[:NAME,NAME...]...]      (default: kube)
#
# SET:NAME,... builds only those binaries of the set (make run asks for
# kube:kube-apiserver,etcd, which is most of the kube set's first build but
# not all of it); they land in the set's cache directory, where a later
# build of the whole set finds them and builds only the rest.
#
# A set is a directory next to this script: a nested Go module (go.mod,
# go.sum, tools.go) that pins the main packages, and a recipe.sh that names
# them. The sets are
#
#   kube   kube-apiserver, etcd, kubelet, kube-proxy, kube-scheduler,
#          kube-controller-manager and kubectl (Kubernetes v1.37.1, etcd v3.7.2)
#   mcs    the mcs-api reference controller (servicecontroller)
#   karmada  karmada-aggregated-apiserver, -controller-manager, -scheduler and
#          -webhook v1.18.2, with Karmada's own module graph
#   prometheus  the Prometheus server and promtool (github.com/prometheus/prometheus
#          v0.316.0), for the alerting rules' tests
#   helm   the helm command (helm.sh/helm/v3 v3.22.0), for the chart's tests
#   conformance  dnsconformance (the [sig-network] specs of Kubernetes
#          v1.37.1's e2e suite, with its set-up) and agnhost, for
#          test/conformance
#   sbom   cyclonedx-gomod v1.10.0, which writes a release's SBOM (make sbom)
#   cosign cosign v2.6.5, which signs and verifies a release in test/release
#   registry  the registry of distribution/v3 v3.1.2, run on loopback by
#          test/release
#   krew   krew v0.4.3 and its validate-krew-manifest, for the plugin manifest
#   vuln   govulncheck (golang.org/x/vuln v1.9.0) and an offline vulnerability
#          database, built from golang.org/x/vulndb's data/osv at the pinned
#          revision with vulndb's own cmd/indexdb (make vulncheck)
#
# Every set but karmada and krew compiles with the main module's version of
# every module it shares with it (its go.mod raises a module to it, never
# lowers one): the Kubernetes libraries, gRPC, x/net and the rest then
# compile once in a cold build, for make build, go vet, the tests and the
# sets. The binaries are the releases named above, built against those
# releases of their dependencies (mcs: controller-runtime v0.25.2 with them).
# test/internal/testbin's SharedSets lists them and says why karmada and krew
# are left out; test/cmd/sharedeps aligns them and
# TestSharedSetsCompileTheMainModulesVersions keeps them aligned.
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
# All progress goes to stderr. With --cached first, nothing is built: it
# prints the directories of sets already built and fails if one is not.
#
# recipe.sh is sourced with the set's directory as working directory. It sets
#   binaries   an array of "NAME PACKAGE": go build PACKAGE -o NAME
#   ldflags    the -ldflags of every build (optional, default "-s -w")
#   tags       the -tags of every build (optional)
#   outputs    other files the set must hold (optional), relative to its
#              directory, made by assemble()
# and may define check(), run in the finished directory (print versions), and
# assemble(), run in an empty directory once the binaries are built, with
# TESTBIN_DIR naming the set's directory: it makes the outputs, whose top
# directories or files are then moved into the set's directory.
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

# complete reports whether dir holds every binary the recipe just sourced
# names in want (all of them when want is empty), and, for a whole set, every
# output.
complete() {
	local dir="$1" name entry out
	for name in "${want[@]}"; do
		[[ -x "$dir/$name" ]] || return 1
	done
	if [[ ${#want[@]} -eq 0 ]]; then
		for entry in "${binaries[@]}"; do
			[[ -x "$dir/${entry%% *}" ]] || return 1
		done
		for out in "${outputs[@]}"; do
			[[ -e "$dir/$out" ]] || return 1
		done
	fi
}

# build_set builds set $1 (SET or SET:NAME,NAME...) if it is not cached, and
# prints its directory.
build_set() {
	local set="${1%%:*}" only=""
	[[ $1 == *:* ]] && only="${1#*:}"
	local dir="$here/$set"
	if [[ ! -f "$dir/recipe.sh" || ! -f "$dir/go.mod" ]]; then
		log "no set $set: $dir needs go.mod and recipe.sh"
		return 1
	fi
	(
		cd "$dir"
		binaries=() ldflags="-s -w" tags="" outputs=()
		check() { :; }
		assemble() { :; }
		# shellcheck source=/dev/null
		source ./recipe.sh

		want=()
		if [[ -n $only ]]; then
			local name entry found
			IFS=, read -r -a want <<<"$only"
			for name in "${want[@]}"; do
				found=false
				for entry in "${binaries[@]}"; do
					[[ ${entry%% *} == "$name" ]] && found=true
				done
				$found || { log "set $set has no binary $name"; exit 1; }
			done
		fi

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
		$cached_only && exit 1
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
		# The set's directory fills one finished binary at a time (each
		# moved in whole), so that a build asked for part of the set, or
		# killed midway, leaves what it finished for the next one.
		mkdir -p "$target"
		chmod 755 "$target"

		local tmp
		tmp="$(mktemp -d "$cache_root/.build-$set-$key.XXXXXX")"
		chmod 755 "$tmp" # mktemp makes it private; the cache is meant to be shared
		trap 'rm -rf "$tmp"' EXIT

		local start=$SECONDS name
		log "building set $set${only:+ ($only)} into $target (cold builds take minutes)"
		log "downloading modules of $set"
		go mod download >&2
		for entry in "${binaries[@]}"; do
			name="${entry%% *}"
			if [[ ${#want[@]} -gt 0 ]] && ! printf '%s\n' "${want[@]}" | grep -qx -- "$name"; then
				continue
			fi
			[[ -x "$target/$name" ]] && continue
			log "building $name"
			go build -trimpath ${tags:+-tags "$tags"} -ldflags "$ldflags" -o "$tmp/$name" "${entry#* }" >&2
			mv -f "$tmp/$name" "$target/$name"
		done
		if [[ ${#want[@]} -eq 0 && ${#outputs[@]} -gt 0 ]] && ! complete "$target"; then
			log "assembling the outputs of $set"
			mkdir "$tmp/out"
			(cd "$tmp/out" && TESTBIN_DIR="$target" assemble) >&2
			local out top
			for out in "${outputs[@]}"; do
				top="${out%%/*}"
				[[ -e "$tmp/out/$top" ]] || continue
				rm -rf "${target:?}/$top"
				mv -T "$tmp/out/$top" "$target/$top"
			done
		fi
		if [[ ${#want[@]} -eq 0 ]]; then
			(cd "$target" && check) >&2
		fi
		complete "$target" || { log "set $set: the build left $target incomplete"; exit 1; }
		log "built set $set${only:+ ($only)} in $((SECONDS - start))s"
		printf '%s\n' "$target"
	)
}

env=false cached_only=false
while [[ ${1:-} == --* ]]; do
	case $1 in
	--env) env=true ;;
	--cached) cached_only=true ;;
	*) log "unknown option $1"; exit 2 ;;
	esac
	shift
done
if [[ $# -eq 0 ]]; then
	set -- kube
fi
for set in "$@"; do
	dir="$(build_set "$set")"
	if $env; then
		set="${set%%:*}"
		printf 'TESTBIN_%s=%q\n' "${set^^}" "$dir"
	else
		printf '%s\n' "$dir"
	fi
done
