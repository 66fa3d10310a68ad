#!/usr/bin/env bash
# Configures (once) and builds k3 and its tests into ./build with Ninja.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${K3_BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DK3_WERROR=ON >/dev/null
fi
cmake --build "$BUILD_DIR" -j"$(nproc)" "$@"
