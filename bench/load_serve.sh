#!/usr/bin/env bash
# bench/load_serve.sh [K3_BINARY] [MODEL] [clients=8] [seconds=60] [parallel=8] [threads]:
# bounded load test of `k3 serve` on loopback — CLIENTS concurrent streaming chat clients for
# SECONDS (max_tokens 64 each) against a server with PARALLEL slots; prints one JSON line with
# requests/s, generated tokens/s and latency percentiles, then the server's /metrics summary.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/scripts/lib/serve.sh"
k3="${1:-$root/build/bin/k3}"
model="${2:-$root/tests/data/golden/small-q8_0.gguf}"
clients="${3:-8}"; seconds="${4:-60}"; parallel="${5:-8}"; threads="${6:-0}"
tmp="$(mktemp -d)"
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
k3_serve_start "$tmp/serve.log" "$k3" -m "$model" -c 2048 --parallel "$parallel" -t "$threads"
node "$root/bench/load_serve.mjs" "http://127.0.0.1:$port" "$clients" "$seconds" 64
curl -s "http://127.0.0.1:$port/metrics" | grep -E '^k3_(tokens_predicted_total|n_decode_total|n_tokens_max|requests_(finished|failed|cancelled)_total) '
