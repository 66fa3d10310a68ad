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
