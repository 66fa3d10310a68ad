#!/usr/bin/env bash
# tests/e2e/run.sh [K3_BINARY]: starts `k3 serve` (scripted output, ephemeral port, API key)
# on the golden small model and runs the openai-client tests with node's test runner; then the
# same client against the embedded trained model (k3-tiny), whose answers are its own.
# Then constrained decoding: every schema of tests/data/grammar/schemas.json on random weights,
# validated by ajv, and the client's structured outputs on the trained model; then the
# hostile-client suite (hostile.test.mjs) against a keyed server; then hostile grammars and
# schemas (hostile_grammar.test.mjs) and the victim-latency test (grammar_victim.test.mjs)
# on the embedded model. The trained model's tests run again with every layer on the GPU. Then
# images: the openai client with data URLs (vision_openai.test.mjs) and hostile images
# (hostile_images.test.mjs) on the embedded model with a vision tower.
# Installs the `openai`, `ajv` and `ajv-formats` npm packages into tests/e2e/node_modules on first use (needs the npm
# registry once; package-lock.json pins the version). Exits with the tests' status.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
. "$root/scripts/lib/serve.sh"
k3="${1:-${K3_BINARY:-$root/build/bin/k3}}"
[ -x "$k3" ] || { echo "run.sh: no k3 binary at $k3 (pass it as the first argument)" >&2; exit 2; }
command -v node >/dev/null || { echo "run.sh: node is required" >&2; exit 2; }
if [ ! -d "$here/node_modules/openai" ] || [ ! -d "$here/node_modules/ajv-formats" ]; then
  (cd "$here" && npm ci --no-audit --no-fund --silent)
fi
tmp="$(mktemp -d)"
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
# start_server LOG FLAGS...: starts k3 serve on the golden small model (or, with
# MODEL=embedded, on the model built into k3), sets pid and port.
start_server() {
  local log="$1"; shift
  local model=(-m "$root/tests/data/golden/small-q8_0.gguf")
  [ "${MODEL:-}" = embedded ] && model=()
  k3_serve_start "$log" "$k3" "${model[@]}" -c 4096 -t 1 "$@"
}
start_server "$tmp/serve.log" --api-key e2e-key --scripted-output "$here/scripted_answers.json"
K3_BASE_URL="http://127.0.0.1:$port/v1" node --test --test-concurrency=1 "$here/openai_client.test.mjs"

# Graceful shutdown: SIGTERM while a long non-streaming request runs; the request must still
# get its whole answer, and the server must exit 0.
kill -TERM "$pid"; rc=0; wait "$pid" || rc=$?; pid=""
[ "$rc" -eq 0 ] || { echo "run.sh: k3 serve exited $rc after SIGTERM" >&2; cat "$tmp/serve.log" >&2; exit 1; }
printf '%*s' 300 '' | tr ' ' 'z' > "$tmp/long.txt"
start_server "$tmp/serve2.log" --scripted-output "$tmp/long.txt"
node --input-type=module -e '
  const r = await fetch(process.argv[1], {method: "POST", headers: {"content-type": "application/json"},
    body: JSON.stringify({messages: [{role: "user", content: "hi"}]})});
  const j = await r.json();
  const c = j.choices?.[0]?.message?.reasoning_content ?? "";  // no think close in the script
  if (r.status !== 200 || c.length !== 300) { console.error("drain: got", r.status, JSON.stringify(j).slice(0, 300)); process.exit(1); }
  console.log("drain: request finished across SIGTERM (200, 300 chars)");
' "http://127.0.0.1:$port/v1/chat/completions" &
client=$!
busy=""
for _ in $(seq 1 200); do  # signal only once the request holds a slot
  if exec 3<>"/dev/tcp/127.0.0.1/$port"; then
    printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
    grep -q '^k3_requests_processing 1' <&3 && busy=1
    exec 3>&-
  fi
  [ -n "$busy" ] && break
  sleep 0.05
done
[ -n "$busy" ] || { echo "run.sh: the drain test request never started" >&2; exit 1; }
kill -TERM "$pid"
wait "$client" || { echo "run.sh: the in-flight request did not survive SIGTERM" >&2; cat "$tmp/serve2.log" >&2; exit 1; }
rc=0; wait "$pid" || rc=$?; pid=""
[ "$rc" -eq 0 ] || { echo "run.sh: k3 serve exited $rc after draining" >&2; cat "$tmp/serve2.log" >&2; exit 1; }

# Constrained decoding on random weights (the golden small model, sampled at temperature 1).
start_server "$tmp/serve4.log" --parallel 2
K3_BASE_URL="http://127.0.0.1:$port/v1" node --test --test-concurrency=2 "$here/structured_random.test.mjs" \
  || { echo "run.sh: structured-output tests (random weights) failed; server log:" >&2; tail -50 "$tmp/serve4.log" >&2; exit 1; }
kill -TERM "$pid"; rc=0; wait "$pid" || rc=$?; pid=""
[ "$rc" -eq 0 ] || { echo "run.sh: k3 serve (random weights) exited $rc after SIGTERM" >&2; exit 1; }

# Hostile clients (raw sockets): framing, limits, keys and origins, deep and wide JSON,
# slow and vanishing clients. Each case also checks /health, the RSS bound and the process.
start_server "$tmp/serve5.log" --api-key hostile-key --parallel 2 --max-body 1048576 --request-timeout 3
K3_BASE_URL="http://127.0.0.1:$port/v1" K3_SERVER_PID="$pid" K3_API_KEY=hostile-key K3_RSS_LIMIT_MIB=384 \
  node --test --test-concurrency=1 "$here/hostile.test.mjs" \
  || { echo "run.sh: hostile-client tests failed; server log:" >&2; tail -50 "$tmp/serve5.log" >&2; exit 1; }
kill -TERM "$pid"; rc=0; wait "$pid" || rc=$?; pid=""
[ "$rc" -eq 0 ] || { echo "run.sh: k3 serve (hostile clients) exited $rc after SIGTERM" >&2; exit 1; }

# The trained default model: a reasoned answer and a tool call of its own (greedy decoding),
# then structured outputs through the openai client.
MODEL=embedded start_server "$tmp/serve3.log"
K3_BASE_URL="http://127.0.0.1:$port/v1" node --test --test-concurrency=1 "$here/trained_model.test.mjs" "$here/structured_trained.test.mjs" \
  || { echo "run.sh: trained-model tests failed; server log:" >&2; cat "$tmp/serve3.log" >&2; exit 1; }
kill -TERM "$pid"; rc=0; wait "$pid" || rc=$?; pid=""
[ "$rc" -eq 0 ] || { echo "run.sh: k3 serve (embedded model) exited $rc after SIGTERM" >&2; exit 1; }

# The trained model with every layer on the GPU (-ngl all; docs/gpu.md): the same greedy answers,
# tool call and structured outputs through the openai client. CI runs it on lavapipe; without a
# Vulkan device k3 says so and runs on the CPU, and the log check below fails.
MODEL=embedded start_server "$tmp/serve7.log" -ngl all
grep -q "offloaded 6/6 layers" "$tmp/serve7.log" \
  || { echo "run.sh: k3 serve -ngl all placed nothing on a GPU; server log:" >&2; cat "$tmp/serve7.log" >&2; exit 1; }
K3_BASE_URL="http://127.0.0.1:$port/v1" node --test --test-concurrency=1 "$here/trained_model.test.mjs" "$here/structured_trained.test.mjs" \
  || { echo "run.sh: trained-model tests with -ngl all failed; server log:" >&2; cat "$tmp/serve7.log" >&2; exit 1; }
kill -TERM "$pid"; rc=0; wait "$pid" || rc=$?; pid=""
[ "$rc" -eq 0 ] || { echo "run.sh: k3 serve -ngl all exited $rc after SIGTERM" >&2; exit 1; }

# Images (docs/serve.md, "Images"): the embedded k3-tiny with a vision tower (k3_vision_tower in
# scripts/lib/serve.sh: the synthetic vt-a, or k3-tiny's trained tower when the tree has it).
# First the openai client sending data URLs; then hostile images against a keyed server with 2
# slots and the body limit a tower brings (32 MiB). RSS cap 768 MiB: the server idles at ~35 MiB,
# holds at most 256 MiB of large request bodies at once (ServerOptions::max_bodies_held) and
# decodes at most 2 images at a time, the largest here 147 MB of pixels (7000 x 7000); the
# suite peaks at ~300 MiB, and 16 stalled 30 MiB uploads alone took 480 MiB before the bodies
# were bounded.
k3_vision_tower
MODEL=embedded start_server "$tmp/serve8.log" --mmproj "$mmproj"
K3_BASE_URL="http://127.0.0.1:$port/v1" K3_VISION_TRAINED="$vision_trained" \
  node --test --test-concurrency=1 "$here/vision_openai.test.mjs" \
  || { echo "run.sh: vision tests failed; server log:" >&2; tail -50 "$tmp/serve8.log" >&2; exit 1; }
kill -TERM "$pid"; rc=0; wait "$pid" || rc=$?; pid=""
[ "$rc" -eq 0 ] || { echo "run.sh: k3 serve (vision) exited $rc after SIGTERM" >&2; exit 1; }
MODEL=embedded start_server "$tmp/serve9.log" --mmproj "$mmproj" --api-key images-key --parallel 2
K3_BASE_URL="http://127.0.0.1:$port/v1" K3_SERVER_PID="$pid" K3_API_KEY=images-key K3_RSS_LIMIT_MIB=768 \
  node --test --test-concurrency=1 "$here/hostile_images.test.mjs" \
  || { echo "run.sh: hostile image tests failed; server log:" >&2; tail -50 "$tmp/serve9.log" >&2; exit 1; }
kill -TERM "$pid"; rc=0; wait "$pid" || rc=$?; pid=""
[ "$rc" -eq 0 ] || { echo "run.sh: k3 serve (hostile images) exited $rc after SIGTERM" >&2; exit 1; }

# Hostile grammars and schemas (docs/grammar.md, "Limits"). They need real sampling (a scripted answer never
# reaches the matcher), so the embedded k3-tiny, started as the security review ran it:
# --api-key, --parallel 2, --request-timeout 5, the default 8 MiB body limit. RSS cap 768 MiB:
# the server idles at ~20 MiB, the matcher holds at most 64 MiB per slot and compiled
# grammars 128 MiB together, and the attacks it must catch went to +1 GiB (row 1), 960 MiB (row 3) and 1.5 GiB (row 4).
# Then the victim test: a normal stream's latency beside a hostile grammar on the other slot.
MODEL=embedded start_server "$tmp/serve6.log" --api-key grammar-key --parallel 2 --request-timeout 5
K3_BASE_URL="http://127.0.0.1:$port/v1" K3_SERVER_PID="$pid" K3_API_KEY=grammar-key K3_RSS_LIMIT_MIB=768 \
  node --test --test-concurrency=1 "$here/hostile_grammar.test.mjs" "$here/grammar_victim.test.mjs" \
  || { echo "run.sh: hostile grammar tests failed; server log:" >&2; tail -50 "$tmp/serve6.log" >&2; exit 1; }
kill -TERM "$pid"; rc=0; wait "$pid" || rc=$?; pid=""
[ "$rc" -eq 0 ] || { echo "run.sh: k3 serve (hostile grammars) exited $rc after SIGTERM" >&2; exit 1; }
