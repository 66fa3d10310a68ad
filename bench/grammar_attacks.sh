#!/usr/bin/env bash
# bench/grammar_attacks.sh [K3_BINARY] [LABEL]: the structured-output security review's grammar attacks (rows 1-6) against
# a fresh `k3 serve` each (embedded k3-tiny, --api-key, --parallel 2, --request-timeout 5, as
# the security review ran it), with wire bytes, outcome, time and the server's RSS before, at
# its peak and after. Prints a markdown table headed LABEL (default: the binary's commit).
# ROWS=1,2a,... picks rows. Needs node (no npm packages). Results: bench/grammar_attacks.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
k3="${1:-$root/build/bin/k3}"
[ -x "$k3" ] || { echo "grammar_attacks.sh: no k3 binary at $k3" >&2; exit 2; }
command -v node >/dev/null || { echo "grammar_attacks.sh: node is required" >&2; exit 2; }
label="${2:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo 'this build')}"
exec node "$here/grammar_attacks.mjs" "$k3" "$label"
