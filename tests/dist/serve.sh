#!/usr/bin/env bash
# tests/dist/serve.sh K3_BINARY: `k3 serve` as a distributed run (mpirun -np 2 on this machine,
# docs/distributed.md) under the openai client: the e2e client test (golden small model,
# scripted answers) and the trained-model test (the embedded k3-tiny's own greedy answers,
# decoded by both ranks); then SIGTERM to rank 0 must end both ranks with status 0. Needs the npm packages
# tests/e2e/run.sh installs. Skips (exit 0 with a note) where mpirun is not installed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
. "$root/scripts/lib/serve.sh"
k3="${1:-$root/build/bin/k3}"
command -v mpirun >/dev/null || { echo "dist/serve.sh: mpirun not found: skipped"; exit 0; }
[ -d "$root/tests/e2e/node_modules/openai" ] || (cd "$root/tests/e2e" && npm install --no-audit --no-fund --silent)
export K3_LAUNCH="mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -np 2"
tmp="$(mktemp -d)"
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
# The k3 process of rank 0 (mpirun ends the whole job at once on a signal of its own; rank 0
# is the one to ask to drain: it answers what is running, closes its engine, and the follower
# leaves with it).
rank0_pid() {
  local p
  for p in $(pgrep -f -- "$k3 serve"); do
    tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=0' && { echo "$p"; return; }
  done
}
stop_server() {
  local r0; r0="$(rank0_pid)"
  [ -n "$r0" ] || { echo "dist/serve.sh: no rank 0 process found" >&2; exit 1; }
  kill -TERM "$r0"; rc=0; wait "$pid" || rc=$?; pid=""
  [ "$rc" -eq 0 ] || { echo "dist/serve.sh: mpirun exited $rc after SIGTERM" >&2; cat "$1" >&2; exit 1; }
}
k3_serve_start "$tmp/serve.log" "$k3" -m "$root/tests/data/golden/small-q8_0.gguf" -c 4096 -t 1 \
  --api-key e2e-key --scripted-output "$root/tests/e2e/scripted_answers.json"
K3_BASE_URL="http://127.0.0.1:$port/v1" node --test --test-concurrency=1 "$root/tests/e2e/openai_client.test.mjs" \
  || { echo "dist/serve.sh: openai client tests failed under mpirun; log:" >&2; cat "$tmp/serve.log" >&2; exit 1; }
stop_server "$tmp/serve.log"
k3_serve_start "$tmp/serve2.log" "$k3" -c 4096 -t 1
K3_BASE_URL="http://127.0.0.1:$port/v1" node --test --test-concurrency=1 "$root/tests/e2e/trained_model.test.mjs" \
  || { echo "dist/serve.sh: trained-model tests failed under mpirun; log:" >&2; cat "$tmp/serve2.log" >&2; exit 1; }
stop_server "$tmp/serve2.log"

# A rank that stops answering (SIGSTOP) while a request runs: within --dist-timeout rank 0
# answers 503 (naming the cause) to what comes next, then the run ends with a non-zero status.
k3_serve_start "$tmp/serve3.log" "$k3" -c 4096 -t 1 --dist-timeout 2
r1=""
for p in $(pgrep -f -- "$k3 serve"); do
  tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && r1="$p"
done
[ -n "$r1" ] || { echo "dist/serve.sh: no rank 1 process found" >&2; exit 1; }
kill -STOP "$r1"
t0=$(date +%s)
node --input-type=module -e '
  const base = process.argv[1];
  fetch(base + "/v1/chat/completions", {method: "POST", headers: {"content-type": "application/json"},
    body: JSON.stringify({messages: [{role: "user", content: "hi"}], max_tokens: 8})}).catch(() => {});
  for (let i = 0; i < 400; ++i) {
    await new Promise(r => setTimeout(r, 25));
    let r;
    try { r = await fetch(base + "/health"); } catch { continue; }
    if (r.status === 503) {
      const j = await r.json();
      if (!/rank/.test(j.error?.message ?? "")) { console.error("503 without the cause:", JSON.stringify(j)); process.exit(1); }
      console.log("dist: 503 while the run fails:", j.error.message); process.exit(0);
    }
  }
  console.error("no 503 within 10 s"); process.exit(1);
' "http://127.0.0.1:$port" || { cat "$tmp/serve3.log" >&2; exit 1; }
rc=0; wait "$pid" || rc=$?; pid=""
secs=$(( $(date +%s) - t0 ))
kill -KILL "$r1" 2>/dev/null || true
[ "$rc" -ne 0 ] && [ "$secs" -le 15 ] || { echo "dist/serve.sh: after a stopped rank: status $rc after $secs s" >&2; exit 1; }
grep -q "waited" "$tmp/serve3.log" || { echo "dist/serve.sh: no timeout message" >&2; cat "$tmp/serve3.log" >&2; exit 1; }
echo "dist/serve.sh: k3 serve on 2 ranks passed the openai client and trained-model tests; a stopped rank gave 503, then status $rc in $secs s"
