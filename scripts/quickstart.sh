#!/usr/bin/env bash
# Quick start: install dependencies, build, and run k3 on the embedded default model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh --target k3
exec build/bin/k3 run "$@"
