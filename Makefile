# coredns-mcs: CoreDNS with the multicluster plugin.
SHELL := /bin/bash
GO ?= go
# The Go release that builds and tests everything here: the newest patch
# release, which fixes the standard library's known vulnerabilities (make
# vulncheck fails on a called one). The go command fetches it from the module
# proxy once (about 80 MB) and uses it whatever Go the machine has; go.mod's
# toolchain line names the same release for a go command run outside make.
GO_TOOLCHAIN ?= go1.27.3
export GOTOOLCHAIN := $(GO_TOOLCHAIN)
# RELEASE_VERSION, from the file VERSION, is the one release version: the
# image tag the manifests (image:, newTag:) and the chart (Chart.yaml
# appVersion) pull, the versions the docs print, and the tag make image gives
# by default. Change them together; test/deploy TestOneVersion checks.
RELEASE_VERSION := $(shell cat VERSION 2>/dev/null)
# VERSION is the binary's own version string (coredns -version) and the
# release archives' name.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -s -w -X main.version=$(VERSION) -X github.com/coredns/coredns/coremain.GitCommit=$(COMMIT)
BINARY := build/coredns
KUBECTL_MCS := build/kubectl-mcs
# The image's tag: the release version, so that the image make image writes is
# the one the manifests pull; a VERSION given to make (make image
# VERSION=v0.2.0) tags with that instead.
IMAGE_TAG ?= $(if $(filter file,$(origin VERSION)),$(RELEASE_VERSION),$(VERSION))
IMAGE ?= ghcr.io/coredns-mcs/coredns-mcs:$(IMAGE_TAG)

.PHONY: all build kubectl-mcs gen check-gen test test-all testbin-chain test-unit test-e2e test-node test-conformance test-karmada test-release testbin run run-front help lint clean image image-name release release-check release-version sbom vulncheck bench

all: build kubectl-mcs

# -buildvcs=false: the binary records no state of a git checkout (its commit,
# time, uncommitted changes) beyond COMMIT, so that a build from the sources
# of a tag, checkout or not, is the same binary (docs/release.md).
build: ## build/coredns: static, version stamped
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags '$(LDFLAGS)' -o $(BINARY) ./coredns

kubectl-mcs: ## build/kubectl-mcs: the kubectl plugin (kubectl mcs explain|check), static, version stamped
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags '$(LDFLAGS)' -o $(KUBECTL_MCS) ./cmd/kubectl-mcs

gen: ## regenerate coredns/zplugin.go and coredns/zdirectives.go from plugin.cfg
	$(GO) generate ./coredns

# The third-party binaries the tests run, in sets (test/testbin/build.sh):
# kube (kube-apiserver, etcd, the node components, kubectl), mcs (the mcs-api
# reference controller), karmada (Karmada's control plane, for
# test/karmadae2e; a separate compile of the Kubernetes libraries at Karmada's
# own versions), prometheus (the Prometheus server and promtool, for the
# alerting rules: test/monitoring and test/e2e), helm (the helm command, for
# test/helmchart), conformance (the [sig-network] specs of Kubernetes' own e2e
# suite and its agnhost, for test/conformance). All but karmada and krew compile the main module's
# versions of the modules they share with it, so that a cold build compiles
# those once (test/testbin/build.sh). RELEASE_TESTBIN_SETS are the tools of the release and its
# tests (test/release, make sbom, make vulncheck): sbom (cyclonedx-gomod),
# cosign, registry (distribution's), krew (krew and validate-krew-manifest)
# and vuln (govulncheck and an offline vulnerability database).
TESTBIN_SETS := kube mcs karmada prometheus helm conformance
RELEASE_TESTBIN_SETS := sbom cosign registry krew vuln

testbin: ## build (once) the third-party binaries of the tests; prints their directories
	@bash test/testbin/build.sh $(TESTBIN_SETS) $(RELEASE_TESTBIN_SETS)

# The race detector covers the plugin, where the concurrency is; coredns/ only
# checks generated files, and instrumenting every upstream plugin it links
# would add minutes to a cold build.
#
# Two tiers (test/README.md has each suite's place, needs and times):
#   make test      the contributor's: lint, the unit tests (race detector),
#                  the hostile bounds and a short fuzz run, and the plugin
#                  against a real kube-apiserver and etcd (test/e2e, with the
#                  front at TEST_FRONT_VERSIONS only), kubectl mcs, the
#                  chart, the alerting rules and the harness's own tests.
#   make test-all  everything, what CI runs (.ci/run): the above, then the
#                  real node and the swap, two real clusters, Karmada, the
#                  images in Docker, the release and its signing, and the
#                  front at every CoreDNS version a platform ships.
#
# On a cold machine most of a tier is compiling. The third-party binaries
# build in one background chain from the start, in the order the suites
# need them (TEST_ORDER, TEST_ALL_ORDER), filling the gaps of the foreground
# builds. The integration tests start as soon as the unit tests pass,
# without waiting for the chain: a test asks test/testbin/build.sh for its
# set (test/internal/testbin), which returns at once when the set is built,
# waits for the build under way (its lock), or builds it. Most integration
# tests wait on servers, not on the CPU, so their time overlaps the chain's.
# The tests without the race detector use the flags of `make build`
# (CGO_ENABLED=0, -trimpath), so that they reuse its compiled packages
# instead of compiling CoreDNS and client-go again.
NORACE := CGO_ENABLED=0 $(GO) test -trimpath -count=1

# The tests that bound the CPU of a query and of an event at the API
# server's limits check nothing under the race detector, which slows every
# memory access: they run again without it. Then a short run of the fuzzer
# over such objects (its corpus: plugin/multicluster/testdata/fuzz), and of
# the generator of shapes at the API server's limits (FuzzHostileShapes).
HOSTILE_TESTS := Hostile|SmallEvent
FUZZTIME ?= 15s

# make test's suites, and the versions of stock CoreDNS its front runs at
# (test/e2e TestFrontAtShippedVersions): the newest, this module's, and
# 1.14.4, the newest without forward's read_timeout (k3s ships it).
TEST_PACKAGES := ./test/e2e/ ./test/kubectlmcs/ ./test/helmchart/ ./test/monitoring/ \
	./test/internal/controlplane/ ./test/internal/harness/ ./test/internal/poll/ \
	./test/internal/process/ ./test/cmd/mcsbench/
TEST_FRONT_VERSIONS := 1.14.4 1.15.0
# Of the kube set, make test's suites run only the API server, etcd and
# kubectl: the node's binaries (kubelet, kube-proxy, the controller manager,
# the scheduler) are make test-all's.
TEST_ORDER := build.sh kube:kube-apiserver,etcd,kubectl helm; build.sh prometheus mcs; stock 1.14.4
# make test-all's: go test starts the test binaries in the order of the
# packages it is given, two at once on two cores (its default -p): the
# longest first, so that the run ends on short packages rather than on one
# long package alone. test/swap before test/clusterse2e: both want node
# cluster 0 (test/internal/node's lock), and this order runs them apart.
TEST_ALL_FIRST := ./test/swap/ ./test/e2e/ ./test/release/
TEST_ALL_ORDER := build.sh kube helm; stock 1.14.4; build.sh prometheus mcs; stock; build.sh conformance; build.sh $(RELEASE_TESTBIN_SETS); build.sh karmada

# The plugin is a module of its own (plugin/multicluster/go.mod), so that a
# CoreDNS build that takes it is raised no further than the plugin needs.
# This module requires it and replaces it with that directory, so its
# packages are named by import path here: a relative path would be outside
# this module. Tested that way they build at this module's versions, which
# the release ships, and share make build's compiled packages. The fuzzer
# runs inside the plugin's module (go test -fuzz takes only packages of the
# main module); test/externalbuild runs the plugin's tests there too, at the
# versions its go.mod asks for.
PLUGIN := github.com/coredns-mcs/coredns-mcs/plugin/multicluster
PLUGIN_DIR := plugin/multicluster

# unit: what both tiers run first, in the foreground, while the chain
# builds.
define unit_tests
	$(MAKE) --no-print-directory lint; \
	$(MAKE) --no-print-directory build; \
	$(GO) test -race -count=1 $(PLUGIN)/... ./internal/...; \
	$(NORACE) -run '$(HOSTILE_TESTS)' $(PLUGIN); \
	(cd $(PLUGIN_DIR) && $(GO) test -run '^$$' -fuzz FuzzHostileObjects -fuzztime $(FUZZTIME) .); \
	(cd $(PLUGIN_DIR) && $(GO) test -run '^$$' -fuzz FuzzHostileShapes -fuzztime $(FUZZTIME) .); \
	$(NORACE) ./coredns/...;
endef

# with_chain runs its recipe with the chain of $(1) in the background, and
# fails when the chain failed (the tests built what they needed).
define with_chain
	@set -euo pipefail; mkdir -p build; \
	setsid $(MAKE) --no-print-directory testbin-chain TESTBIN_ORDER='$(1)' >build/testbin.log 2>&1 & chain=$$!; \
	trap 'kill -- -$$chain 2>/dev/null; true' EXIT; \
	$(2) \
	wait $$chain || { cat build/testbin.log >&2; echo "the background build of the test binaries failed (the tests built what they needed)" >&2; exit 1; }; \
	trap - EXIT
endef

test: ## the contributor's tier: lint, unit tests (race detector), hostile bounds, a short fuzz run, and the plugin, kubectl mcs, the chart and the alerts against a real API server
	$(call with_chain,$(TEST_ORDER),$(unit_tests) \
	FRONT_VERSIONS='$(TEST_FRONT_VERSIONS)' COREDNS_BINARY="$(CURDIR)/$(BINARY)" $(NORACE) -timeout 40m $(TEST_PACKAGES);)

test-all: ## everything, what CI runs: make test's suites, then the real node and the swap, two clusters, Karmada, Docker, the release, and the front at every shipped CoreDNS
	$(call with_chain,$(TEST_ALL_ORDER),$(unit_tests) \
	COREDNS_BINARY="$(CURDIR)/$(BINARY)" $(NORACE) -timeout 80m $(TEST_ALL_FIRST) ./test/...;)

# One layer at a time, each building what it needs (test/README.md).
test-e2e: build ## the plugin against a real API server (test/e2e), the front at TEST_FRONT_VERSIONS
	FRONT_VERSIONS='$(TEST_FRONT_VERSIONS)' COREDNS_BINARY="$(CURDIR)/$(BINARY)" $(NORACE) -timeout 40m ./test/e2e/

test-node: build ## a real node: kubeadm's CoreDNS swapped for this image, and two real clusters (root, Debian's containerd, runc, CNI plugins)
	COREDNS_BINARY="$(CURDIR)/$(BINARY)" $(NORACE) -timeout 60m ./test/internal/node/ ./test/swap/ ./test/clusterse2e/

test-conformance: build ## Kubernetes' own DNS conformance specs on a real node, stock CoreDNS then this image (root)
	COREDNS_BINARY="$(CURDIR)/$(BINARY)" $(NORACE) -timeout 60m ./test/conformance/

test-karmada: build ## Karmada's control plane walking through docs/karmada.md
	COREDNS_BINARY="$(CURDIR)/$(BINARY)" $(NORACE) -timeout 40m ./test/karmadae2e/

test-release: build ## the release, its signing, the images in Docker, and make run as the README says (root, Debian's docker.io, skopeo, qemu-user-static)
	COREDNS_BINARY="$(CURDIR)/$(BINARY)" $(NORACE) -timeout 60m ./test/release/ ./test/deploy/ ./test/runfront/

# The chain's steps (test/testbin/chain.sh); make test and make test-all
# give their own.
TESTBIN_ORDER ?= $(TEST_ALL_ORDER)

testbin-chain: ## build the test binaries in the order the suites need them (make test and test-all start it in the background)
	@GO='$(GO)' bash test/testbin/chain.sh '$(TESTBIN_ORDER)'

test-unit: ## unit tests only (seconds)
	$(GO) test -race -count=1 $(PLUGIN)/... ./internal/...
	$(NORACE) -short ./coredns/...

# make run's ports on 127.0.0.1: PORT (DNS, default 1053), HEALTH_PORT,
# READY_PORT, METRICS_PORT (default 18080, 18181, 19153, clear of a CoreDNS
# of the machine's own on 8080, 8181, 9153). A default that is taken gives way
# to a free port, which it prints; a port given is used as given.
run: build kubectl-mcs ## a local API server with example objects (builds kube-apiserver and etcd only), and coredns on 127.0.0.1:1053 (and the kubectl mcs lines for it); PORT, HEALTH_PORT, READY_PORT, METRICS_PORT set its ports
	@bash test/scripts/run.sh

# make run-front: the same API server, coredns-mcs standalone behind stock
# CoreDNS (docs/platforms.md) on loopback. COREDNS_VERSION (default the
# version kubeadm ships, internal/front's KubeadmCoreDNSVersion) is built
# once with go install github.com/coredns/coredns@vVERSION into
# ~/.cache/coredns-mcs/stock-coredns; PLATFORM (kubeadm, the default, or k3s)
# picks its Corefile. Ports: PORT (the front, default 1053), STANDALONE_PORT
# (1054), STAND_IN_PORT (5301), and the front's HEALTH_PORT, READY_PORT,
# METRICS_PORT, as make run's.
run-front: build ## the same API server, coredns-mcs standalone behind stock CoreDNS (COREDNS_VERSION, PLATFORM=kubeadm|k3s) on 127.0.0.1:1053, and how to hang, stop and resume it
	@bash test/scripts/run-front.sh

# Not part of `make test`: it takes about a quarter of an hour and wants a
# quiet machine. N sizes the throughput sets (default 1000), BENCH_BIG and
# BENCH_MID the memory and start-up sets (default 50000 and BENCH_BIG/5).
# build/coredns-stock is stock CoreDNS (its own main package, from this
# module's graph, with the flags of build): the peer whose kubernetes plugin
# answers clusterset.local with its multicluster option. The Scale section
# runs last, on an API server of its own: BENCH_SCALE sizes its ClusterSet
# (full, the default: 100,000 imports and 1,000,000 endpoints; medium; small,
# the smoke test's, whose API server has no watch cache, so that its watches
# expire by a compaction of etcd instead of after the cache's 75 s), and
# BENCH_FLAGS=-scale-only runs it alone, writing only
# that section of BENCHMARKS.md. Its churn phase (endpoints of headless
# imports rolled at up to 1,000 slice updates/s) runs alone with
# BENCH_FLAGS=-scale-churn-only, writing only its "Churn at scale"
# subsection; BENCH_SCALE=churn gives it the medium size's endpoints beside
# 10,000 imports.
bench: build ## performance against a real API server: toll, clusterset QPS against the peers, memory, propagation, start-up; writes BENCHMARKS.md
	$(GO) build -o build/mcsbench ./test/cmd/mcsbench
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o build/coredns-stock github.com/coredns/coredns
	KUBEBUILDER_ASSETS="$$(bash test/testbin/build.sh kube)" build/mcsbench -coredns $(BINARY) -stock build/coredns-stock -out BENCHMARKS.md \
		-n $(or $(N),1000) -big $(or $(BENCH_BIG),50000) $(if $(BENCH_MID),-mid $(BENCH_MID)) $(if $(BENCH_SCALE),-scale-size $(BENCH_SCALE)) $(BENCH_FLAGS)

# make image writes the image as an archive without a container engine or a
# registry (internal/ociimage): the base layer (users, CA bundle, time zones
# from this machine's Debian packages) and build/coredns with the file
# capability cap_net_bind_service, run as 65532. Load it with
#   ctr -n k8s.io images import build/coredns-mcs.tar  |  docker load -i ...
#   kind load image-archive ...  |  skopeo copy oci-archive:... docker://...
# IMAGE_PLATFORMS="linux/amd64 linux/arm64" makes a multi-platform image of the
# binaries Makefile.release builds (build/OS/ARCH/coredns) instead.
IMAGE_ARCHIVE ?= build/coredns-mcs.tar
IMAGE_PLATFORMS ?=
IMAGE_SOURCE := https://github.com/coredns-mcs/coredns-mcs

image: ## the image $(IMAGE) as an archive, $(IMAGE_ARCHIVE), without docker or a registry
	@set -euo pipefail; \
	if [ -z '$(IMAGE_PLATFORMS)' ]; then \
		$(MAKE) --no-print-directory build; \
		binaries="-binary $$($(GO) env GOOS)/$$($(GO) env GOARCH)=$(BINARY)"; \
	else \
		binaries=; \
		for p in $(IMAGE_PLATFORMS); do \
			IFS=/ read -r os arch variant <<<"$$p"; \
			goarm=; [ "$$arch" = arm ] && goarm=$${variant#v}; \
			GOOS=$$os GOARCH=$$arch GOARM=$$goarm $(MAKE) --no-print-directory build BINARY=build/$$os/$$arch/coredns; \
			binaries="$$binaries -binary $$p=build/$$os/$$arch/coredns"; \
		done; \
	fi; \
	CGO_ENABLED=0 $(GO) run -trimpath ./internal/ociimage/cmd/mkimage -o '$(IMAGE_ARCHIVE)' -name '$(IMAGE)' $$binaries \
		-label org.opencontainers.image.title=coredns-mcs \
		-label 'org.opencontainers.image.description=CoreDNS with the multicluster plugin for Kubernetes Multi-Cluster Services' \
		-label org.opencontainers.image.version='$(VERSION)' \
		-label org.opencontainers.image.revision='$(COMMIT)' \
		-label org.opencontainers.image.source='$(IMAGE_SOURCE)'

image-name: ## print the image reference make image writes
	@echo '$(IMAGE)'

# make release VERSION=vX.Y.Z first makes vX.Y.Z the version everywhere
# (internal/release: VERSION, the manifests, the chart, the docs, and
# CHANGELOG.md, whose "Unreleased" notes become the version's; it refuses a
# version without notes), then writes into RELEASE_DIR everything a release
# publishes (docs/release.md):
#   coredns-mcs_V_OS_ARCH.tgz (+ .sha256)  coredns and kubectl-mcs, every platform of Makefile.release
#   coredns-mcs_V_image.tar      the multi-platform image index (RELEASE_IMAGE_PLATFORMS), an OCI layout
#   coredns-mcs_V_OS_ARCH_BIN.cdx.json  the CycloneDX SBOM of each binary of each archive
#   mcs.yaml                     the krew plugin manifest (kubectl mcs)
#   coredns-mcs-X.Y.Z.tgz        the chart (+ .prov with CHART_SIGN_KEY and CHART_KEYRING)
#   coredns-mcs-chart-key.asc    the public key of CHART_SIGN_KEY, which the chart's
#                                artifacthub.io/signKey names
#   SHA256SUMS                   the checksums of all of them
# make release without VERSION builds the version of the file VERSION, and
# refuses if that version is tagged and the chart differs from the tag's: a
# chart version is published once (relver published). Two
# builds of the same sources give the same archives, image digest and SBOMs
# (test/release checks); the chart's archive carries helm package's times.
REL_VERSION = $(if $(filter command line,$(origin VERSION)),$(VERSION),$(RELEASE_VERSION))
RELEASE_DIR ?= release
RELEASE_URL ?= $(IMAGE_SOURCE)/releases/download/$(REL_VERSION)
RELEASE_IMAGE_PLATFORMS ?= linux/amd64 linux/arm64 linux/arm/v7 linux/ppc64le linux/s390x linux/riscv64
CHART_SIGN_KEY ?=
CHART_KEYRING ?=
RELVER := CGO_ENABLED=0 $(GO) run -trimpath ./internal/release/cmd/relver
# With CHART_SIGN_KEY, the release publishes the key's public half as
# coredns-mcs-chart-key.asc, and the chart it packages (a copy of
# charts/coredns-mcs) names that key for ArtifactHub: artifacthub.io/signKey,
# its fingerprint and RELEASE_URL/coredns-mcs-chart-key.asc. gpg reads the
# key from CHART_KEYRING, the keyring helm package --sign reads, in a home of
# its own (nothing of the user's gpg is used or changed), whose agent it stops.
CHART_SIGNKEY_RECIPE = \
	rm -rf build/release-chart; mkdir -p build/release-chart/gnupg; chmod 700 build/release-chart/gnupg; \
	gpg --batch --quiet --homedir build/release-chart/gnupg --import '$(CHART_KEYRING)'; \
	fpr=$$(gpg --batch --homedir build/release-chart/gnupg --with-colons --fingerprint '$(CHART_SIGN_KEY)' | awk -F: '$$1 == "fpr" { print $$10; exit }'); \
	gpg --batch --homedir build/release-chart/gnupg --armor --export '$(CHART_SIGN_KEY)' > '$(RELEASE_DIR)/coredns-mcs-chart-key.asc'; \
	gpgconf --homedir build/release-chart/gnupg --kill all; \
	[ -n "$$fpr" ] || { echo "release: gpg finds no key $(CHART_SIGN_KEY) in $(CHART_KEYRING)" >&2; exit 1; }; \
	cp -R charts/coredns-mcs build/release-chart/coredns-mcs; chart=build/release-chart/coredns-mcs; \
	$(RELVER) signkey -chart "$$chart/Chart.yaml" -fingerprint "$$fpr" -url '$(RELEASE_URL)/coredns-mcs-chart-key.asc';

release: ## [VERSION=vX.Y.Z] set the one version everywhere, then write RELEASE_DIR: archives, image index, SBOMs, krew manifest, chart, SHA256SUMS
	@set -euo pipefail; \
	$(if $(filter command line,$(origin VERSION)),$(RELVER) set '$(VERSION)';) \
	$(RELVER) check; \
	$(RELVER) published -version '$(REL_VERSION)'; \
	rm -rf '$(RELEASE_DIR)'; mkdir -p '$(RELEASE_DIR)'; \
	$(MAKE) --no-print-directory -f Makefile.release release VERSION='$(REL_VERSION)' COMMIT='$(COMMIT)' \
		RELEASE_DIR='$(RELEASE_DIR)' $(if $(PLATFORMS),PLATFORMS='$(PLATFORMS)'); \
	$(MAKE) --no-print-directory image VERSION='$(REL_VERSION)' COMMIT='$(COMMIT)' \
		IMAGE_PLATFORMS='$(RELEASE_IMAGE_PLATFORMS)' IMAGE_ARCHIVE='$(RELEASE_DIR)/coredns-mcs_$(REL_VERSION)_image.tar'; \
	platforms=$$(cd '$(RELEASE_DIR)' && ls coredns-mcs_$(REL_VERSION)_*.tgz | sed -E 's/^coredns-mcs_$(REL_VERSION)_([a-z0-9]+)_([a-z0-9]+)\.tgz$$/\1\/\2/'); \
	$(MAKE) --no-print-directory sbom VERSION='$(REL_VERSION)' SBOM_DIR='$(RELEASE_DIR)' SBOM_PLATFORMS="$$(echo $$platforms)"; \
	$(RELVER) krew -dir '$(RELEASE_DIR)' -version '$(REL_VERSION)' -url '$(RELEASE_URL)' > '$(RELEASE_DIR)/mcs.yaml'; \
	helm=$$(bash test/testbin/build.sh helm)/helm; \
	chart=charts/coredns-mcs; \
	$(if $(CHART_SIGN_KEY),$(CHART_SIGNKEY_RECIPE)) \
	"$$helm" package "$$chart" -d '$(RELEASE_DIR)' \
		$(if $(CHART_SIGN_KEY),--sign --key '$(CHART_SIGN_KEY)' --keyring '$(CHART_KEYRING)') >&2; \
	rm -rf build/release-chart; \
	$(RELVER) sums -dir '$(RELEASE_DIR)' > '$(RELEASE_DIR)/SHA256SUMS'; \
	echo "$(REL_VERSION): $(RELEASE_DIR)/SHA256SUMS" >&2; cat '$(RELEASE_DIR)/SHA256SUMS' >&2; \
	if [ -n "$$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then \
		echo "release: built from a tree with uncommitted changes (COMMIT $(COMMIT) is not its commit): commit and tag $(REL_VERSION), then build what you publish from the tag with make release (docs/release.md)" >&2; \
	fi

release-version: ## fail if a file disagrees with the release version of VERSION (make release VERSION=... rewrites them)
	@$(RELVER) check

release-check: ## verify the archives in release/
	$(MAKE) -f Makefile.release release-check

# The CycloneDX SBOM of each binary (cyclonedx-gomod bin: the modules, their
# versions and hashes as the binary itself records them, the standard
# library, the build settings and the binary's own hashes), for each platform
# of SBOM_PLATFORMS whose binaries Makefile.release or make image built under
# build/OS/ARCH/, or of build/coredns and build/kubectl-mcs without it. No
# serial number or timestamp, so that the same binary gives the same SBOM.
# GOOS and GOARCH are the binary's: cyclonedx-gomod takes the platform of
# its package URLs from them, not from the binary. The plugin's module,
# built from its directory (go.mod's replace), is then named by its module
# path at the release version (relver sbom), not ./plugin/multicluster at
# (devel).
SBOM_DIR ?= build
SBOM_PLATFORMS ?=

sbom: ## CycloneDX SBOMs of the binaries, $(SBOM_DIR)/coredns-mcs_VERSION_OS_ARCH_BINARY.cdx.json
	@set -euo pipefail; \
	bin=$$(bash test/testbin/build.sh sbom)/cyclonedx-gomod; \
	mkdir -p '$(SBOM_DIR)'; \
	if [ -z '$(SBOM_PLATFORMS)' ]; then \
		$(MAKE) --no-print-directory build kubectl-mcs; \
		set -- "$$($(GO) env GOOS)/$$($(GO) env GOARCH):$(BINARY):$(KUBECTL_MCS)"; \
	else \
		set --; for p in $(SBOM_PLATFORMS); do IFS=/ read -r os arch variant <<<"$$p"; \
			set -- "$$@" "$$os/$$arch:build/$$os/$$arch/coredns:build/$$os/$$arch/kubectl-mcs"; done; \
	fi; \
	for entry in "$$@"; do \
		IFS=: read -r p coredns kubectl <<<"$$entry"; \
		for b in "$$coredns" "$$kubectl"; do \
			[ -x "$$b" ] || { echo "sbom: no $$b: build it first (make release builds every platform)" >&2; exit 1; }; \
			out='$(SBOM_DIR)'/coredns-mcs_$(REL_VERSION)_$${p%/*}_$${p#*/}_$${b##*/}.cdx.json; \
			GOOS=$${p%/*} GOARCH=$${p#*/} "$$bin" bin -json -std -noserial -notimestamp -version '$(REL_VERSION)' -output "$$out" "$$b"; \
			$(RELVER) sbom -version '$(REL_VERSION)' "$$out"; \
			echo "sbom: $$out" >&2; \
		done; \
	done

# govulncheck against the offline vulnerability database of the vuln set
# (golang.org/x/vulndb's reports at the revision test/testbin/vuln/go.mod
# pins): the calls of the packages a release ships (coredns, kubectl-mcs)
# into vulnerable code of their dependencies and of the standard library. It
# fails on a finding; a release must pass it (docs/release.md).
VULNCHECK_PACKAGES := ./coredns/... ./cmd/... ./internal/... $(PLUGIN)/...

vulncheck: ## govulncheck of what a release ships, with the offline vulnerability database (test/testbin/vuln)
	@set -euo pipefail; dir=$$(bash test/testbin/build.sh vuln); \
	echo "vulncheck: database $$(cat $$dir/vulndb/SOURCE)" >&2; \
	GOPROXY=off $$dir/govulncheck -db "file://$$dir/vulndb" $(VULNCHECK_PACKAGES)

help: ## this list: the targets and what they do
	@awk -F ':.*## ' '/^[a-z-]+:.*## / { printf "  %-16s %s\n", $$1, $$2 }' $(firstword $(MAKEFILE_LIST))

lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	CGO_ENABLED=0 $(GO) vet -trimpath ./... $(PLUGIN)/...  # make build's flags: its compiled packages serve vet too
	@cd $(PLUGIN_DIR) && $(GO) mod tidy -diff || { echo "$(PLUGIN_DIR)/go.mod or go.sum is not tidy: run go mod tidy there" >&2; exit 1; }

clean:
	rm -rf build release
