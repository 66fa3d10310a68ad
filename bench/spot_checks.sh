#!/usr/bin/env bash
# bench/spot_checks.sh [K3] [MODEL]: starts `k3 serve` (default: the embedded k3-tiny) and runs
# bench/spot_checks.py on it: arithmetic, tool-call validity (as written and with strict
# tools), and the reasoning budget, with counts (docs/k3-tiny-quality.md). N (60) problems
# per check. About a minute on the embedded model.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/scripts/lib/serve.sh"
k3="${1:-$root/build/bin/k3}"
model=(); [ -n "${2:-}" ] && model=(-m "$2")
log="$(mktemp)"
trap '[ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; rm -f "$log"' EXIT
k3_serve_start "$log" "$k3" "${model[@]}" -c 4096 -t "${THREADS:-2}"
/usr/bin/python3 "$root/bench/spot_checks.py" "http://127.0.0.1:$port" --n "${N:-60}"
