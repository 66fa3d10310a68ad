#!/usr/bin/env bash
# Install dependencies, build everything, run every test suite (CTest), then the end-to-end
# test of `k3 serve` with the official openai npm client (one process, then 2 MPI ranks), and the
# chat page in a real browser;
# the core tests (thread pool) also run in a ThreadSanitizer build, and the model, kernel and
# codec tests in the portable (no-SIMD) build.
# `scripts/test.sh --quick`: the quick tier, for the edit-build-test loop: build, then the
# unit and model tests and the lint checks (no tools, CLI, distributed, bench or training
# tests, no sanitizer or portable builds, no end-to-end suites); 71 s after a build
# on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${K3_BUILD_DIR:-build}
if [ "${1:-}" = --quick ]; then
  shift
  scripts/build.sh
  cd "$BUILD_DIR"
  exec ctest --output-on-failure -j"$(nproc)" -L 'core|gguf|quant|kernels|model|runtime|text|grammar|store|server|lint' "$@"
fi
scripts/setup.sh
scripts/build.sh
(cd "$BUILD_DIR" && ctest --output-on-failure -j"$(nproc)" "$@")
# The thread pool and the rest of core under ThreadSanitizer: a separate small build.
TSAN_DIR=${K3_TSAN_BUILD_DIR:-build-tsan}
[ -f "$TSAN_DIR/build.ninja" ] || cmake -S . -B "$TSAN_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DK3_WERROR=ON -DK3_TSAN=ON -DK3_BUILD_BENCH=OFF >/dev/null
cmake --build "$TSAN_DIR" -j"$(nproc)" --target test_core
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" "$TSAN_DIR/tests/test_core" --gtest_brief=1
# The portable build (no x86 intrinsics: every kernel its plain-C twin, docs/kernels.md) and
# the tests that matter for it: the golden models in every mode, the kernels, the codecs. It is
# also the build without Vulkan (the GPU module's stub: -ngl falls back and says why).
GEN_DIR=${K3_GENERIC_BUILD_DIR:-build-generic}
cmake -S . -B "$GEN_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DK3_WERROR=ON -DK3_GENERIC=ON -DK3_VULKAN=OFF -DK3_BUILD_BENCH=OFF >/dev/null
cmake --build "$GEN_DIR" -j"$(nproc)" --target test_model test_kernels test_quant test_gpu
for t in model kernels quant gpu; do "$GEN_DIR/tests/test_$t" --gtest_brief=1; done
tests/e2e/run.sh "$PWD/$BUILD_DIR/bin/k3"
tests/dist/serve.sh "$PWD/$BUILD_DIR/bin/k3"
tests/webui/run.sh "$PWD/$BUILD_DIR/bin/k3"
