#!/usr/bin/env bash
# bench/run_bench.sh: the reference CPU benchmark — synthesize the bench-m model (~4.3 GB,
# Kimi-K3 proportions) into a temporary directory, run `k3 bench` on it and append one row to
# bench/RESULTS.md. Usage: bench/run_bench.sh [BUILD_DIR] (default: build).
# Environment: THREADS (2), N_PROMPT (512), N_GEN (32), REPS (3), UBATCH (512), KEEP_MODEL=1
# keeps the synthesized file (its path is printed).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
k3="$build/bin/k3"
[ -x "$k3" ] || { echo "run_bench.sh: no k3 binary at $k3 (build the k3 target first)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "run_bench.sh: python3 is needed to read the JSON" >&2; exit 1; }

threads=${THREADS:-2}
n_prompt=${N_PROMPT:-512}
n_gen=${N_GEN:-32}
reps=${REPS:-3}
ubatch=${UBATCH:-512}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/k3-bench.XXXXXX")
cleanup() { if [ "${KEEP_MODEL:-0}" != 1 ]; then rm -rf "$tmp"; fi; }
trap cleanup EXIT

model="$tmp/bench-m.gguf"
echo "run_bench.sh: synthesizing bench-m into $model" >&2
"$k3" synth --preset bench-m -o "$model" >&2

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
json="$tmp/bench.json"
"$k3" bench -m "$model" -t "$threads" -p "$n_prompt" -n "$n_gen" -r "$reps" -ub "$ubatch" --json >"$json"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$root" status --porcelain 2>/dev/null | head -1)" ]; then commit="$commit+dirty"; fi
date=$(date -u +%Y-%m-%dT%H:%MZ)

row=$(python3 - "$json" "$commit" "$date" "$load_before" "$load_after" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
commit, date, lb, la = sys.argv[2:6]
t = {x["name"][:2]: x for x in j["tests"]}
pp, tg = t.get("pp"), t.get("tg")
m = j["machine"]
def ts(x): return f'{x["avg_ts"]:.2f} ± {x["stddev_ts"]:.2f}' if x else "-"
def gbs(x): return f'{x["weight_bytes_per_s"]/1e9:.2f}' if x else "-"
def frac(x): return f'{100*x["bandwidth_fraction"]:.1f}%' if x and m["mem_bw_bytes_per_s"] > 0 else "-"
print(f'| {m["cpu"]}, {j["params"]["n_threads"]} threads, {m["mem_bw_bytes_per_s"]/1e9:.2f} GB/s measured '
      f'| {commit} | {date} | {pp["name"] if pp else "-"}: {ts(pp)} | {tg["name"] if tg else "-"}: {ts(tg)} '
      f'| pp {gbs(pp)} / tg {gbs(tg)} | pp {frac(pp)} / tg {frac(tg)} '
      f'| {j["model"]["weight_bytes"]["per_token"]/2**20:.1f} MiB | {lb} → {la} |')
PY
)

results="$root/bench/RESULTS.md"
if [ ! -f "$results" ]; then
  cat >"$results" <<'MD'
# k3 bench results

Rows are appended by `bench/run_bench.sh` (model: `k3 synth --preset bench-m`). GB/s counts the
weight bytes each test streams (docs/bench.md); "% bw" is against the machine's measured read
bandwidth for the same thread count. Load is /proc/loadavg (1/5/15 min) before → after.

| machine | commit | date (UTC) | pp t/s | tg t/s | weights GB/s | % of bandwidth | weights/token | load |
|---|---|---|---|---|---|---|---|---|
MD
fi
echo "$row" >>"$results"
echo "$row"
cat "$json" >&2
