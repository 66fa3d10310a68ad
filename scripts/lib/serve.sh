# scripts/lib/serve.sh: sourced by the scripts that run a real `k3 serve` (tests/e2e/run.sh,
# tests/webui/run.sh, bench/load_serve.sh, bench/mixed_load.sh).
#
# k3_serve_start LOG K3 ARGS...: starts `K3 serve --port 0 ARGS...` in the background with its
# stderr in LOG and sets `pid` and `port` (the ephemeral port it announces). Exits the script
# with status 1, showing the log, when the server does not come up within 30 s. K3_LAUNCH, if
# set, is the launcher to start it with (e.g. "mpirun -np 2": a distributed server).
k3_serve_start() {
  local log="$1" k3="$2"
  shift 2
  # shellcheck disable=SC2086 # K3_LAUNCH is a command line
  ${K3_LAUNCH:-} "$k3" serve --port 0 "$@" 2> "$log" &
  pid=$!
  port=""
  for _ in $(seq 1 300); do
    port="$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1)"
    [ -n "$port" ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "k3 serve did not start:" >&2
  cat "$log" >&2
  exit 1
}

# k3_vision_tower: sets `mmproj` to the vision tower the vision suites run with, and
# `vision_trained` to 1 when it is a trained one (its answers are then checked): K3_MMPROJ (with
# K3_VISION_TRAINED) when set, else k3-tiny's trained tower when it is in the tree, else the
# synthetic tests/data/vision/mmproj-vt-a.gguf (it projects into k3-tiny's width; its answers
# mean nothing, so only the plumbing is checked).
k3_vision_tower() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  local trained="$root/models/k3-tiny/mmproj-k3-tiny-F16.gguf"
  if [ -n "${K3_MMPROJ:-}" ]; then
    mmproj="$K3_MMPROJ"; vision_trained="${K3_VISION_TRAINED:-0}"
  elif [ -f "$trained" ]; then
    mmproj="$trained"; vision_trained=1
  else
    mmproj="$root/tests/data/vision/mmproj-vt-a.gguf"; vision_trained=0
  fi
}
