#!/usr/bin/env bash
# k8s-schema.sh fetches, through the Go module proxy, the Kubernetes release whose API types
# the tests use (k8s.io/kubernetes v1.X.Y for k8s.io/api v0.X.Y, about 21 MB) into the module
# cache: internal/k8s's schema test reads its api/openapi-spec/v3 batch/v1 schema from there.
# Run the tests after it with TOKPERF_REQUIRE_SCHEMA=1, so that a missing schema fails them.
set -euo pipefail
cd "$(dirname "$0")/.."
api=$(go list -m -f '{{.Version}}' k8s.io/api)
release="v1.${api#v0.}"
# Outside the module, so that go.mod and go.sum stay as they are.
dir=$(cd "$(mktemp -d)" && go mod download -json "k8s.io/kubernetes@$release" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
schema="$dir/api/openapi-spec/v3/apis__batch__v1_openapi.json"
test -s "$schema"
echo "k8s schema: $schema"
