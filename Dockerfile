# syntax=docker/dockerfile:1
#
# coredns-mcs image: the static build/coredns of `make build` on distroless,
# running as nonroot (uid 65532). Multi-platform builds cross-compile in the
# builder's native platform:
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg COMMIT=$(git rev-parse --short HEAD) -t IMAGE .

FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
# setcap comes from libcap2-bin; make is part of the golang image.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libcap2-bin \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Module downloads are cached in their own layer, rebuilt only when go.mod or
# go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG COMMIT=unknown
# The Makefile's build target, so the image binary is built with exactly the
# flags of a local `make build` (CGO_ENABLED=0, -trimpath, the version LDFLAGS).
# The capability lets the nonroot user bind port 53; it is a file xattr, and
# COPY --from keeps it with BuildKit (the default builder).
RUN GOOS=$TARGETOS GOARCH=$TARGETARCH make build VERSION="$VERSION" COMMIT="$COMMIT" \
 && setcap cap_net_bind_service=+ep build/coredns

FROM gcr.io/distroless/static-debian12:nonroot
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
