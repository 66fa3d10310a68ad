#!/usr/bin/env bash
# bench/grammar_cost.sh [K3] [MODEL]: decode speed with and without a JSON-schema constraint,
# alternating the two REPS times on one machine (the VMs are noisy: compare within a run),
# then the mask cost per token on the model's vocabulary (bench_grammar). Default model:
# bench-m (163,840-token synthetic vocabulary; `k3 synth --preset bench-m` makes it). The
# schema keeps the answer long (an array of at least 200 strings), so N_GEN tokens are
# generated in both modes. Results: docs/grammar.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
k3="${1:-$root/build/bin/k3}"
model="${2:-${BENCH_MODEL:-$HOME/.cache/k3/bench-m.gguf}}"
n="${N_GEN:-48}" reps="${REPS:-3}" threads="${THREADS:-2}"
[ -f "$model" ] || { echo "grammar_cost.sh: no model at $model (k3 synth --preset bench-m -o $model)" >&2; exit 2; }
schema="$(mktemp)"; trap 'rm -f "$schema"' EXIT
echo '{"type":"array","items":{"type":"string","maxLength":6},"minItems":200}' > "$schema"
tps() { sed -n 's/.*generation: \([0-9]*\) tokens in .* (\([0-9.]*\) tok\/s).*/\1 \2/p'; }
for r in $(seq 1 "$reps"); do
  for mode in plain schema; do
    extra=(); [ "$mode" = schema ] && extra=(--json-schema "$schema")
    out="$("$k3" run -m "$model" -p "List:" -n "$n" --temp 1 --seed "$r" -t "$threads" "${extra[@]}" 2>&1 >/dev/null | tps)"
    echo "rep $r $mode: $out (tokens tok/s)"
  done
done
"$root/build/bin/bench_grammar" "$model" "$root/tests/data/grammar/schemas.json" --tokens 256 | grep -v '^{'
