#!/usr/bin/env bash
# bench/run_bench.sh: the reference CPU benchmark in one command. Synthesizes the bench-m model
# (~4.3 GB, Kimi-K3 proportions) if it is not there yet, runs `k3 bench` on it (pp and tg with
# the memory-bandwidth roofline), records a perf profile of where the time goes (top functions
# for a short tg run and a short pp run) and inserts one row into bench/RESULTS.md.
# Usage: bench/run_bench.sh [BUILD_DIR]   (default: build)
# Environment: BENCH_MODEL (model path; default ~/.cache/k3/bench-m.gguf, kept between runs),
#   THREADS (2), N_PROMPT (512), N_GEN (32), REPS (3), UBATCH (512), PROFILE=0 skips perf.
# Takes about 5 minutes on a quiet 2-core machine (plus ~20 s to synthesize the model once).
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
model=${BENCH_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/k3/bench-m.gguf}

if [ ! -s "$model" ]; then
  mkdir -p "$(dirname "$model")"
  echo "run_bench.sh: synthesizing bench-m into $model" >&2
  "$k3" synth --preset bench-m -o "$model" >&2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/k3-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$root" status --porcelain 2>/dev/null | head -1)" ]; then commit="$commit+dirty"; fi
stamp=$(date -u +%Y%m%d-%H%M)
date=$(date -u +%Y-%m-%dT%H:%MZ)

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
json="$tmp/bench.json"
echo "run_bench.sh: k3 bench -t $threads -p $n_prompt -n $n_gen -r $reps -ub $ubatch" >&2
# --remeasure-bw: the roofline must use the bandwidth of the machine as it is now (a cached
# figure from a busier moment would flatter the fraction).
"$k3" bench -m "$model" -t "$threads" -p "$n_prompt" -n "$n_gen" -r "$reps" -ub "$ubatch" --remeasure-bw --json >"$json"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# Profile: short runs under perf (software cpu-clock sampling, so it also works in VMs
# without hardware counters); the top symbols by self time go to bench/profiles/.
profile="-"
if [ "${PROFILE:-1}" != 0 ] && command -v perf >/dev/null; then
  mkdir -p "$root/bench/profiles"
  profile="bench/profiles/$stamp.txt"
  {
    echo "# perf profile of k3 bench on bench-m ($commit, $date, $threads threads, load $(cut -d' ' -f1-3 /proc/loadavg))"
    echo "# self time per function, cpu-clock sampling; pool spin-waits show as ThreadPool::*"
    for t in "tg:-p 0 -n 32" "pp:-p 128 -n 0"; do
      name=${t%%:*}
      # shellcheck disable=SC2086
      if perf record -q -e cpu-clock -F 499 -o "$tmp/$name.data" \
          "$k3" bench -m "$model" -t "$threads" ${t#*:} -r 1 --no-bw >/dev/null 2>"$tmp/$name.err"; then
        echo
        echo "## $name (${t#*:} -r 1)"
        perf report -i "$tmp/$name.data" --no-children --sort symbol --percent-limit 0.7 2>/dev/null |
          grep -v '^#' | grep -v '^$' | cut -c1-140 | head -30
      else
        echo "## $name: perf record failed: $(tail -1 "$tmp/$name.err")"
      fi
    done
  } >"$root/$profile"
fi

row=$(python3 - "$json" "$commit" "$date" "$load_before" "$load_after" "$profile" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
commit, date, lb, la, prof = sys.argv[2:7]
t = {x["name"][:2]: x for x in j["tests"]}
pp, tg = t.get("pp"), t.get("tg")
m = j["machine"]
bw = m["mem_bw_bytes_per_s"]
nth = j["params"]["n_threads"]
per_tok = j["model"]["weight_bytes"]["per_token"]
def ts(x): return f'{x["avg_ts"]:.2f} ± {x["stddev_ts"]:.2f}' if x else "-"
def cpu_gbs(x):  # weight bytes over CPU time / threads: the speed with the cores to ourselves
    c = x.get("avg_cpu_s", 0) / nth
    return x["weight_bytes"] / c if c > 0 else 0
if tg and bw > 0:
    roof = bw / per_tok
    tgc = f'{100 * tg["bandwidth_fraction"]:.1f}% / {100 * cpu_gbs(tg) / bw:.1f}% (roofline {roof:.2f} t/s)'
else:
    tgc = "-"
ppc = f'{pp["weight_bytes_per_s"] / 1e9:.2f} GB/s ({100 * pp["bandwidth_fraction"]:.1f}% of bw)' if pp else "-"
b0, b1 = m.get("mem_bw_before_bytes_per_s", 0), m.get("mem_bw_after_bytes_per_s", 0)
bws = f'{bw / 1e9:.2f} GB/s measured' + (f' ({b0 / 1e9:.2f} before, {b1 / 1e9:.2f} after)' if b0 > 0 and b1 > 0 else '')
print(f'| {m["cpu"]}, {nth} threads, {bws} | {commit} | {date} '
      f'| {pp["name"] if pp else "-"}: {ts(pp)} | {tg["name"] if tg else "-"}: {ts(tg)} '
      f'| {tgc} | {ppc} | {per_tok / 2**20:.1f} MiB | {lb} → {la} | {prof} |')
PY
)

results="$root/bench/RESULTS.md"
marker='<!-- run_bench.sh inserts rows above this line -->'
if [ ! -f "$results" ] || ! grep -qF "$marker" "$results"; then
  cat >>"$results" <<MD

## bench-m, bench/run_bench.sh

| machine | commit | date (UTC) | pp t/s | tg t/s | tg % of roofline: wall / CPU-time | pp weight traffic | weights/token | load before → after | profile |
|---|---|---|---|---|---|---|---|---|---|
$marker
MD
fi
python3 - "$results" "$marker" "$row" <<'PY'
import sys
path, marker, row = sys.argv[1:4]
text = open(path).read()
i = text.index(marker)
open(path + ".tmp", "w").write(text[:i] + row + "\n" + text[i:])
PY
mv "$results.tmp" "$results"
echo "$row"
cat "$json" >&2
