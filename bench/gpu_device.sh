#!/usr/bin/env bash
# bench/gpu_device.sh: the GPU measurement of docs/gpu.md in one short run on a lent device
# machine (an H100 with 16 cores), sized for a 15-minute lease that includes the machine's start.
#
#   bench/gpu_device.sh prepare   here: builds k3, strips a copy into .gpu/ beside the Vulkan
#                                 loader's Debian package (libvulkan1); .gpu/ is ignored by git
#   bench/gpu_device.sh run       there, with .gpu carried (device tool: command
#                                 "bench/gpu_device.sh run", carry [".gpu"], timeout_s 540)
#
# `run` unpacks the loader, prints the Vulkan device, synthesizes bench-m (~4.3 GB, K3's
# proportions), then runs `k3 bench` (pp512, tg64, 2 repetitions) on bench-m and on the embedded
# k3-tiny three ways: CPU only, -ngl all, and -ngl all --cpu-moe. Everything it prints also goes
# to $OUT/gpu_bench.log, with one JSON per bench in $OUT; the closing table is what goes into
# bench/RESULTS.md. Environment: THREADS (16), N_PROMPT (512), N_GEN (64), REPS (2), PRESET
# (bench-m; a smaller synth preset for a dry run here).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

prepare() {
  scripts/build.sh --target k3
  mkdir -p .gpu
  grep -qxF '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
  strip -o .gpu/k3 build/bin/k3
  local lists=/tmp/k3-apt-amd64
  mkdir -p "$lists/partial"
  local o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists="$lists")
  apt-get "${o[@]}" update -qq
  (cd .gpu && rm -f libvulkan1_*.deb && apt-get "${o[@]}" download libvulkan1)
  ls -la .gpu
}

run() {
  local out=${OUT:-/tmp/k3-gpu-out}
  mkdir -p "$out"
  exec > >(tee "$out/gpu_bench.log") 2>&1
  for f in .gpu/*.deb; do dpkg -x "$f" /; done
  ldconfig
  local icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  [ -f "$icd" ] && export VK_DRIVER_FILES=$icd
  local k3=.gpu/k3 threads=${THREADS:-16} np=${N_PROMPT:-512} ng=${N_GEN:-64} reps=${REPS:-2}
  nvidia-smi --query-gpu=name,memory.total,clocks.max.memory --format=csv 2>/dev/null || true
  "$k3" --list-devices
  local preset=${PRESET:-bench-m} model=/tmp/k3-gpu-bench.gguf
  time "$k3" synth --preset "$preset" -o "$model" >/dev/null
  for m in "$preset" k3-tiny; do
    local margs=()
    [ "$m" = k3-tiny ] || margs=(-m "$model")
    for cfg in cpu ngl-all ngl-all-cpu-moe; do
      local gargs=()
      case $cfg in
        ngl-all) gargs=(-ngl all) ;;
        ngl-all-cpu-moe) gargs=(-ngl all --cpu-moe) ;;
      esac
      echo "=== $m $cfg"
      timeout 150 "$k3" bench "${margs[@]}" "${gargs[@]}" -t "$threads" -p "$np" -n "$ng" -r "$reps" \
        --json >"$out/$m-$cfg.json" || echo "=== $m $cfg: exit $?"
    done
  done
  echo "=== summary (tokens/s; GPU roofline share where placed)"
  for f in "$out"/*.json; do
    python3 - "$f" <<'PY' || true
import json, sys
j = json.load(open(sys.argv[1]))
name = sys.argv[1].rsplit('/', 1)[-1][:-5]
for t in j["tests"]:
    g = t.get("gpu", {})
    print(f"| {name} | {t['name']} | {t['avg_ts']:.2f} | {100 * g.get('copy_bandwidth_fraction', 0):.1f}% | "
          f"{1e3 * g.get('seconds_per_token', 0):.2f} ms/token in round trips |")
PY
  done
}

case "${1:-}" in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: bench/gpu_device.sh prepare|run" >&2; exit 2 ;;
esac
