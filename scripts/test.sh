#!/usr/bin/env bash
# Install dependencies, build everything, run every test suite (CTest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
cd "${K3_BUILD_DIR:-build}"
ctest --output-on-failure -j"$(nproc)" "$@"
