#!/usr/bin/env bash
# Install dependencies, build everything, run every test suite (CTest), then the end-to-end
# test of `k3 serve` with the official openai npm client, and the chat page in a real browser.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
BUILD_DIR=${K3_BUILD_DIR:-build}
(cd "$BUILD_DIR" && ctest --output-on-failure -j"$(nproc)" "$@")
tests/e2e/run.sh "$PWD/$BUILD_DIR/bin/k3"
tests/webui/run.sh "$PWD/$BUILD_DIR/bin/k3"
