#!/usr/bin/env bash
# bench/kld_table.sh: the quality-vs-size table of `k3 quantize` — quantizes one master model
# to every supported file type, scores each against the master's saved log-probabilities with
# `k3 perplexity --kl-base`, and prints a markdown table (type, bits/weight, size, mean KLD,
# p99 KLD, top-1 agreement, Δppl), lowest bits last.
#
# Usage: bench/kld_table.sh [BUILD_DIR] (default: build)
# Environment:
#   MASTER   model to quantize (default: tests/data/golden/small-q8_0.gguf); quantized
#            inputs are requantized (--allow-requantize), F16/F32 masters are not
#   CALIB    calibration text for `k3 imatrix` (default: docs/ARCHITECTURE.md + docs/serve.md)
#   HELDOUT  held-out text for perplexity/KL (default: README.md + docs/quantize.md); must not
#            overlap CALIB
#   CTX (128), THREADS (2), TYPES (all, space-separated), KEEP=1 keeps the work directory
# IQ types get an imatrix made by `k3 imatrix` from CALIB (they refuse to run without one);
# the other types are made without, as llama-quantize users usually do.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
k3="$build/bin/k3"
[ -x "$k3" ] || { echo "kld_table.sh: no k3 binary at $k3 (build the k3 target first)" >&2; exit 1; }

master=${MASTER:-$root/tests/data/golden/small-q8_0.gguf}
ctx=${CTX:-128}
threads=${THREADS:-2}
types=${TYPES:-"Q8_0 Q6_K Q4_K_M Q4_K_S Q3_K_S Q2_K IQ2_XXS MXFP4_MOE K3_REAP_IQ1M IQ1_M IQ1_S"}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/k3-kld.XXXXXX")
cleanup() { if [ "${KEEP:-0}" != 1 ]; then rm -rf "$tmp"; else echo "kld_table.sh: kept $tmp" >&2; fi; }
trap cleanup EXIT

# A private copy of the binary: rebuilding k3 while the table runs must not break it.
cp "$k3" "$tmp/k3"
k3="$tmp/k3"

if [ -n "${CALIB:-}" ]; then calib=$CALIB; else
  calib="$tmp/calib.txt"; cat "$root/docs/ARCHITECTURE.md" "$root/docs/serve.md" >"$calib"; fi
if [ -n "${HELDOUT:-}" ]; then held=$HELDOUT; else
  held="$tmp/heldout.txt"; cat "$root/README.md" "$root/docs/quantize.md" >"$held"; fi

echo "kld_table.sh: master $master, ctx $ctx, work dir $tmp" >&2
"$k3" perplexity -m "$master" -f "$held" -c "$ctx" -t "$threads" --kl-base-out "$tmp/base.kl" \
  --kl-top-k 1000000 >"$tmp/master.txt" 2>&1
"$k3" imatrix -m "$master" -f "$calib" -c "$ctx" -t "$threads" -o "$tmp/imatrix.gguf" >"$tmp/imatrix.txt" 2>&1

requant=""
case "$(basename "$master")" in *[Ff]16*|*[Ff]32*|*[Bb][Ff]16*) ;; *) requant="--allow-requantize" ;; esac

field() { sed -n "s/^$1 *: *\([-+0-9.]*\).*/\1/p" "$2" | head -1; }

rows=()
for t in $types; do
  out="$tmp/$t.gguf"
  im=""
  case "$t" in IQ*|K3_REAP_IQ1M) im="--imatrix $tmp/imatrix.gguf" ;; esac
  # shellcheck disable=SC2086
  "$k3" quantize "$master" "$out" "$t" $im $requant -t "$threads" --no-progress >"$tmp/$t.quantize.txt" 2>&1 ||
    { echo "kld_table.sh: quantize $t failed:" >&2; tail -3 "$tmp/$t.quantize.txt" >&2; continue; }
  bpw=$(sed -n 's/.* \([0-9.]*\) bits per weight.*/\1/p' "$tmp/$t.quantize.txt" | head -1)
  size=$(stat -c %s "$out")
  "$k3" perplexity -m "$out" -f "$held" -t "$threads" --kl-base "$tmp/base.kl" >"$tmp/$t.kl.txt" 2>&1
  mean=$(field "Mean KLD" "$tmp/$t.kl.txt")
  p99=$(field "99.0% KLD" "$tmp/$t.kl.txt")
  top1=$(field "Same top-1" "$tmp/$t.kl.txt")
  dppl=$(field "Delta PPL" "$tmp/$t.kl.txt")
  ppl=$(field "PPL(model)" "$tmp/$t.kl.txt")
  rows+=("$bpw|$t|$size|$mean|$p99|$top1|$dppl|$ppl")
  echo "kld_table.sh: $t done (bpw $bpw, mean KLD $mean)" >&2
done

base_ppl=$(field "PPL(base)" "$tmp/$(echo $types | awk '{print $1}').kl.txt" 2>/dev/null || true)
n_tok=$(sed -n 's/.*KL divergence vs .* (\([0-9]*\) tokens.*/\1/p' "$tmp"/*.kl.txt 2>/dev/null | head -1)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$root" status --porcelain 2>/dev/null | head -1)" ]; then commit="$commit+dirty"; fi

echo "Master \`$(basename "$master")\`, $n_tok scored tokens of held-out text (ctx $ctx), base PPL $base_ppl;"
echo "$(date -u +%Y-%m-%d), commit $commit."
echo
echo "| type | bits/weight | size (bytes) | mean KLD | p99 KLD | same top-1 | Δppl |"
echo "|---|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}" | sort -t'|' -k1,1gr | while IFS='|' read -r bpw t size mean p99 top1 dppl ppl; do
  echo "| $t | $bpw | $size | $mean | $p99 | $top1 % | $dppl |"
done
