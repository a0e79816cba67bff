# coredns-mcs image: the static build/coredns of `make build` on distroless,
# running as nonroot (uid 65532). Multi-platform builds cross-compile in the
# builder's native platform:
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg COMMIT=$(git rev-parse --short HEAD) -t IMAGE .
#
# It needs BuildKit (DOCKER_BUILDKIT=1 with Docker 20.10, the default since
# 23.0) for the platform arguments and the cache mounts. `make image` builds
# the same image without Docker (internal/ociimage).
#
# Offline, or with your own mirrors: the two base images are build arguments,
# and so is GOPROXY, for instance
#   --build-arg GO_IMAGE=mirror.example/golang:1.27.3 \
#   --build-arg BASE_IMAGE=mirror.example/distroless/static-debian12:nonroot \
#   --build-arg GOPROXY=http://goproxy.example
# (no `# syntax=` line either: BuildKit would fetch that frontend image.)
# GOCACHEPROG (below) plugs a shared Go build cache into the build.

ARG GO_IMAGE=golang:1.27.3
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS builder
WORKDIR /src
# Empty means the go command's default (proxy.golang.org).
ARG GOPROXY
# Module downloads are cached in their own layer, rebuilt only when go.mod or
# go.sum change.
COPY go.mod go.sum ./
COPY plugin/multicluster/go.mod plugin/multicluster/go.sum ./plugin/multicluster/
RUN go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG COMMIT=unknown
# Empty means the go command's own cache, in the cache mount below. Set, it
# is a Go cache program (the go command's GOCACHEPROG, "PROGRAM ARGS..."),
# for instance one that reads a CI's shared build cache; the program must be
# in GO_IMAGE. The build's output does not depend on it.
ARG GOCACHEPROG
# The Makefile's build target, so the image binary is built with exactly the
# flags of a local `make build` (CGO_ENABLED=0, -trimpath, the version LDFLAGS);
# the compiler's cache persists between builds in a cache mount. The
# capability lets the nonroot user bind port 53: it is a file xattr, what
# `setcap cap_net_bind_service=+ep` writes, set by a small Go command of this
# repository so that the builder needs no libcap tools. COPY --from keeps it
# with BuildKit.
RUN --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH make build VERSION="$VERSION" COMMIT="$COMMIT" \
 && go run ./internal/filecap/cmd/setcap build/coredns

FROM ${BASE_IMAGE}
ARG VERSION=dev
ARG COMMIT=unknown
ARG SOURCE=https://github.com/coredns-mcs/coredns-mcs
LABEL org.opencontainers.image.title="coredns-mcs" \
      org.opencontainers.image.description="CoreDNS with the multicluster plugin for Kubernetes Multi-Cluster Services" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$COMMIT" \
      org.opencontainers.image.source="$SOURCE"
COPY --from=builder /src/build/coredns /coredns
# distroless's nonroot user; explicit so the image does not depend on the
# base image's default.
USER 65532:65532
EXPOSE 53 53/udp
ENTRYPOINT ["/coredns"]
