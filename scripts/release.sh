#!/bin/sh
# Builds tokperf's release binaries: static (CGO_ENABLED=0), for linux,
# darwin and windows on amd64 and arm64, into dist/, with the version and
# the commit stamped in (tokperf version prints them), and SHA256SUMS.
#
#   scripts/release.sh [VERSION]          # default: git describe
#   RELEASE_TARGETS="linux/amd64" scripts/release.sh v0.2.0
set -eu
cd "$(dirname "$0")/.."
version=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
targets=${RELEASE_TARGETS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"}
rm -rf dist
mkdir -p dist
for t in $targets; do
	os=${t%/*}
	arch=${t#*/}
	ext=""
	[ "$os" = windows ] && ext=.exe
	out="dist/tokperf-$version-$os-$arch$ext"
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=true \
		-ldflags "-s -w -X github.com/tokperf/tokperf/internal/cli.version=$version" -o "$out" ./cmd/tokperf
	echo "$out"
done
(cd dist && sha256sum -- * >SHA256SUMS)
