#!/usr/bin/env bash
# tests/e2e/run.sh [K3_BINARY]: starts `k3 serve` (scripted output, ephemeral port, API key)
# on the golden small model and runs the openai-client tests with node's test runner.
# Installs the `openai` npm package into tests/e2e/node_modules on first use (needs the npm
# registry once; package-lock.json pins the version). Exits with the tests' status.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
k3="${1:-${K3_BINARY:-$root/build/bin/k3}}"
[ -x "$k3" ] || { echo "run.sh: no k3 binary at $k3 (pass it as the first argument)" >&2; exit 2; }
command -v node >/dev/null || { echo "run.sh: node is required" >&2; exit 2; }
if [ ! -d "$here/node_modules/openai" ]; then
  (cd "$here" && npm install --no-audit --no-fund --silent)
fi
tmp="$(mktemp -d)"
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
cat > "$tmp/scripts.json" <<'JSON'
["Let me think.<|close|>think<|sep|><|open|>response<|sep|>Hello <world> | done<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>",
 "Need weather.<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|><|open|>argument key=\"city\" type=\"string\"<|sep|>Par\"is\n<|close|>argument<|sep|><|open|>argument key=\"days\" type=\"number\"<|sep|>2<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>",
 "Got it.<|close|>think<|sep|><|open|>response<|sep|>It is sunny in Paris.<|close|>response<|sep|><|close|>message<|sep|><|end_of_msg|>"]
JSON
"$k3" serve -m "$root/tests/data/golden/small-q8_0.gguf" --port 0 -c 4096 -t 1 --api-key e2e-key \
  --scripted-output "$tmp/scripts.json" 2> "$tmp/serve.log" &
pid=$!
port=""
for _ in $(seq 1 300); do
  port="$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/serve.log" | head -1)"
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/serve.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "run.sh: k3 serve did not start" >&2; cat "$tmp/serve.log" >&2; exit 1; }
K3_BASE_URL="http://127.0.0.1:$port/v1" node --test --test-concurrency=1 "$here/openai_client.test.mjs"
