#!/usr/bin/env bash
# Install dependencies, build everything, run every test suite (CTest), then the end-to-end
# test of `k3 serve` with the official openai npm client, and the chat page in a real browser;
# the core tests (thread pool) also run in a ThreadSanitizer build.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
BUILD_DIR=${K3_BUILD_DIR:-build}
(cd "$BUILD_DIR" && ctest --output-on-failure -j"$(nproc)" "$@")
# The thread pool and the rest of core under ThreadSanitizer: a separate small build.
TSAN_DIR=${K3_TSAN_BUILD_DIR:-build-tsan}
[ -f "$TSAN_DIR/build.ninja" ] || cmake -S . -B "$TSAN_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DK3_WERROR=ON -DK3_TSAN=ON -DK3_BUILD_BENCH=OFF >/dev/null
cmake --build "$TSAN_DIR" -j"$(nproc)" --target test_core
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" "$TSAN_DIR/tests/test_core" --gtest_brief=1
tests/e2e/run.sh "$PWD/$BUILD_DIR/bin/k3"
tests/webui/run.sh "$PWD/$BUILD_DIR/bin/k3"
