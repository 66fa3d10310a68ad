#!/usr/bin/env bash
# bench/memory_promise.sh [K3] [MODEL]: is `k3 serve --ram-budget B` a promise? Runs the server
# inside a cgroup-v1 memory limit of B + HEADROOM, with SLOTS slots at full context, and has
# SLOTS clients send prompts that fill the context (and decode a few tokens) at once, twice
# over (so the prompt-cache snapshots are taken too). Then reports the cgroup's peak usage, the
# server's peak RSS (VmHWM), OOM kills, and the margin to B. Exit 1 on an OOM kill, a failed
# request, or a peak RSS above B. Needs root (cgroup v1 memory controller). Default model:
# bench-m (`k3 synth --preset bench-m`). Results: docs/expert-store.md.
# Env: BUDGET (2G), HEADROOM (256M), SLOTS (2), CTX (2048), THREADS (2).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/scripts/lib/serve.sh"
k3="${1:-$root/build/bin/k3}"
model="${2:-${BENCH_MODEL:-$HOME/.cache/k3/bench-m.gguf}}"
budget="${BUDGET:-2G}" headroom="${HEADROOM:-256M}" slots="${SLOTS:-2}" ctx="${CTX:-2048}" threads="${THREADS:-2}"
[ -f "$model" ] || { echo "memory_promise.sh: no model at $model" >&2; exit 2; }
cg=/sys/fs/cgroup/memory/k3promise
mkdir -p "$cg"
b=$(numfmt --from=iec "$budget"); h=$(numfmt --from=iec "$headroom")
echo $((b + h)) > "$cg/memory.limit_in_bytes"
echo 0 > "$cg/memory.max_usage_in_bytes"
ooms0=$(awk '/^oom_kill /{print $2}' "$cg/memory.oom_control")
log="$(mktemp)"
trap '[ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; rm -f "$log"; echo -1 > "$cg/memory.limit_in_bytes"' EXIT
# The server joins the cgroup before it execs (k3_serve_start runs "$k3" serve ...).
wrapper="$(mktemp)"; printf '#!/bin/sh\necho $$ > %s/cgroup.procs\nexec %s "$@"\n' "$cg" "$k3" > "$wrapper"; chmod +x "$wrapper"
k3_serve_start "$log" "$wrapper" -m "$model" --ram-budget "$budget" --parallel "$slots" -c "$ctx" -t "$threads" --timeout 1200
sed -n '/plan/,+6p' "$log" | head -8 >&2
# Prompts that nearly fill the context (the chat template adds its own tokens).
words=$((ctx * 96 / 100 / 7))  # a synthetic byte vocabulary spells "w12x34 " in 7 tokens
fail=0
for round in 1 2; do
  for s in $(seq 1 "$slots"); do
    /usr/bin/python3 - "$port" "$words" "$s$round" <<'PY' &
import json, sys, urllib.request
port, words, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
text = " ".join(f"w{tag}x{i % 97}" for i in range(words))
body = {"messages": [{"role": "user", "content": text}], "max_tokens": 8, "temperature": 0}
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(),
                             headers={"content-type": "application/json"})
try:
    r = json.load(urllib.request.urlopen(req, timeout=1200))
    print(f"client {tag}: prompt {r['usage']['prompt_tokens']} tokens, {r['choices'][0]['finish_reason']}")
except Exception as e:  # noqa: BLE001
    print(f"client {tag}: FAILED {e} {getattr(e, 'read', lambda: b'')()[:300]}"); sys.exit(1)
PY
  done
  for j in $(jobs -p); do [ "$j" = "$pid" ] && continue; wait "$j" || fail=1; done
done
hwm=$(awk '/^VmHWM/{print $2 * 1024}' "/proc/$pid/status")
kill -TERM "$pid"; wait "$pid" || true; pid=""
peak=$(cat "$cg/memory.max_usage_in_bytes")
ooms=$(( $(awk '/^oom_kill /{print $2}' "$cg/memory.oom_control") - ooms0 ))
echo "budget $budget (+ $headroom headroom in the cgroup) | slots $slots x ctx $ctx | server peak RSS $(numfmt --to=iec "$hwm") | cgroup peak (RSS + page cache) $(numfmt --to=iec "$peak") | OOM kills $ooms | RSS margin to the budget $(numfmt --to=iec $((b - hwm)))"
[ "$fail" = 0 ] && [ "$ooms" = 0 ] && [ "$hwm" -le "$b" ]
