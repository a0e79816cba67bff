# coredns-mcs: CoreDNS with the multicluster plugin.
SHELL := /bin/bash
GO ?= go
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

.PHONY: all build kubectl-mcs gen check-gen test test-unit test-e2e testbin run lint clean image image-name release release-check bench

all: build kubectl-mcs

build: ## build/coredns: static, version stamped
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BINARY) ./coredns

kubectl-mcs: ## build/kubectl-mcs: the kubectl plugin (kubectl mcs explain|check), static, version stamped
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(KUBECTL_MCS) ./cmd/kubectl-mcs

gen: ## regenerate coredns/zplugin.go and coredns/zdirectives.go from plugin.cfg
	$(GO) generate ./coredns

# The third-party binaries the tests run, in sets (test/testbin/build.sh):
# kube (kube-apiserver, etcd, the node components, kubectl), mcs (the mcs-api
# reference controller), karmada (Karmada's control plane, for
# test/karmadae2e; a separate compile of the Kubernetes libraries at Karmada's
# own versions), prometheus (the Prometheus server and promtool, for the
# alerting rules: test/monitoring and test/e2e), helm (the helm command, for
# test/helmchart).
TESTBIN_SETS := kube mcs karmada prometheus helm

testbin: ## build (once) the third-party binaries of the tests; prints their directories
	@bash test/testbin/build.sh $(TESTBIN_SETS)

# The race detector covers the plugin, where the concurrency is; coredns/ only
# checks generated files, and instrumenting every upstream plugin it links
# would add minutes to a cold build.
#
# On a cold machine most of `make test` is compiling. kube-apiserver and etcd
# build in the background from the start, filling the gaps of the other
# builds, and the tests without the race detector use the flags of `make
# build` (CGO_ENABLED=0, -trimpath), so that they reuse its compiled packages
# instead of compiling CoreDNS and client-go a second time.
NORACE := CGO_ENABLED=0 $(GO) test -trimpath -count=1

test: ## unit tests (race detector on the plugin), then integration and end-to-end tests against a real API server
	@set -euo pipefail; mkdir -p build; \
	setsid bash test/testbin/build.sh --env $(TESTBIN_SETS) >build/testbin.env 2>build/testbin.log & testbin=$$!; \
	trap 'kill -- -$$testbin 2>/dev/null || true' EXIT; \
	$(MAKE) --no-print-directory build; \
	$(GO) test -race -count=1 ./plugin/... ./internal/...; \
	$(NORACE) ./coredns/...; \
	wait $$testbin || { cat build/testbin.log >&2; echo "building the test binaries ($(TESTBIN_SETS)) failed" >&2; exit 1; }; \
	trap - EXIT; \
	set -a; . build/testbin.env; set +a; \
	COREDNS_BINARY="$(CURDIR)/$(BINARY)" $(NORACE) -timeout 15m ./test/...

test-unit: ## unit tests only (seconds)
	$(GO) test -race -count=1 ./plugin/... ./internal/...
	$(NORACE) -short ./coredns/...

run: build kubectl-mcs ## a local API server with example objects, and coredns on 127.0.0.1:1053 (and the kubectl mcs line for it)
	@bash test/run.sh

# Not part of `make test`: it takes about a quarter of an hour and wants a
# quiet machine. N sizes the throughput sets (default 1000), BENCH_BIG and
# BENCH_MID the memory and start-up sets (default 50000 and BENCH_BIG/5).
# build/coredns-stock is stock CoreDNS (its own main package, from this
# module's graph, with the flags of build): the peer whose kubernetes plugin
# answers clusterset.local with its multicluster option. The Scale section
# runs last, on an API server of its own: BENCH_SCALE sizes its ClusterSet
# (full, the default: 100,000 imports and 1,000,000 endpoints; medium; small,
# the smoke test's), and BENCH_FLAGS=-scale-only runs it alone, writing only
# that section of BENCHMARKS.md.
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
			GOOS=$${p%%/*} GOARCH=$${p#*/} $(MAKE) --no-print-directory build BINARY=build/$$p/coredns; \
			binaries="$$binaries -binary $$p=build/$$p/coredns"; \
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

release: ## release/: cross-built archives and checksums for every platform (Makefile.release)
	$(MAKE) -f Makefile.release release VERSION='$(VERSION)' COMMIT='$(COMMIT)'

release-check: ## verify the archives in release/
	$(MAKE) -f Makefile.release release-check

lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	CGO_ENABLED=0 $(GO) vet -trimpath ./...  # make build's flags: its compiled packages serve vet too

clean:
	rm -rf build release
