#!/usr/bin/env bash
# bench/mixed_load.sh [K3_BINARY] [MODEL] [seconds=60] [clients=8]: the mixed-load check.
# CLIENTS well-behaved streaming chat clients run for SECONDS against `k3 serve` (8 slots),
# first alone (quiet), then while bench/hostile_loop.mjs attacks the same server in a loop.
# Prints both load lines (errors, p50/p95 latency), the hostile client's summary, the p95
# ratio, and the server's peak RSS; exits 1 if the server died.
# Environment: SERVE_FLAGS, the `k3 serve` flags besides model, context and slots (default
# "-t 1"; e.g. "-t 2 --http-nice 0" to compare);
# ATTACKER_NICE, the nice value the attacking node process runs at (default 0: on these 2 cores
# it competes with the server as an equal; a real attacker's CPU is on another host, and 19
# approximates that).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/scripts/lib/serve.sh"
k3="${1:-$root/build/bin/k3}"
model="${2:-$root/tests/data/golden/small-q8_0.gguf}"
seconds="${3:-60}"; clients="${4:-8}"
tmp="$(mktemp -d)"
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
# shellcheck disable=SC2086  # SERVE_FLAGS is a list of flags
k3_serve_start "$tmp/serve.log" "$k3" -m "$model" -c 2048 --parallel 8 ${SERVE_FLAGS:--t 1}
url="http://127.0.0.1:$port"
quiet="$(node "$root/bench/load_serve.mjs" "$url" "$clients" "$seconds" 64)"
echo "quiet:   $quiet"
nice -n "${ATTACKER_NICE:-0}" node "$root/bench/hostile_loop.mjs" "$url" "$((seconds + 5))" > "$tmp/hostile.json" &
hostile=$!
sleep 2
loaded="$(node "$root/bench/load_serve.mjs" "$url" "$clients" "$seconds" 64)"
echo "hostile: $loaded"
wait "$hostile"
echo "attacker: $(cat "$tmp/hostile.json")"
kill -0 "$pid" 2>/dev/null || { echo "mixed_load: k3 serve died" >&2; cat "$tmp/serve.log" >&2; exit 1; }
node -e 'const q=JSON.parse(process.argv[1]), h=JSON.parse(process.argv[2]);
  console.log(`p95 ratio (hostile/quiet): ${(h.latency_ms_p95/q.latency_ms_p95).toFixed(2)}; errors quiet ${q.errors}, hostile ${h.errors}`);' "$quiet" "$loaded"
echo "server peak RSS: $(grep VmHWM /proc/$pid/status | awk '{print $2/1024 " MiB"}')"
