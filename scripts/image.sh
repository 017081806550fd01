#!/bin/sh
# Builds tokperf's container image without Docker: a static binary
# (CGO_ENABLED=0, GOOS=linux) on an empty base, written by scripts/image (a
# module of its own, go-containerregistry from the Go module proxy) as an
# OCI image tar that also loads with docker load. Push it with crane or
# skopeo (docs/distributed.md).
#
#   scripts/image.sh [VERSION]                  # default: git describe; writes dist/tokperf-VERSION-image-linux-ARCH.tar
#   IMAGE_ARCH=arm64 IMAGE_OUT=/tmp/t.tar scripts/image.sh v0.2.0
#
# Prints the tar's path.
set -eu
cd "$(dirname "$0")/.."
version=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
arch=${IMAGE_ARCH:-$(go env GOARCH)}
out=${IMAGE_OUT:-dist/tokperf-$version-image-linux-$arch.tar}
case $out in /*) ;; *) out=$PWD/$out ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath \
	-ldflags "-s -w -X github.com/tokperf/tokperf/internal/cli.version=$version" -o "$tmp/tokperf" ./cmd/tokperf
(cd scripts/image && go run . -binary "$tmp/tokperf" -arch "$arch" -version "$version" -tag "tokperf:$version" -out "$out")
echo "$out"
