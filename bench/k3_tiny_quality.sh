#!/usr/bin/env bash
# bench/k3_tiny_quality.sh: the quality tables of the trained k3-tiny (docs/k3-tiny-quality.md):
# every `k3 quantize` type made from the F16 master with and without an importance matrix, and
# REAP vs frequency vs random expert pruning at 25 % and 50 %, each scored against the master
# on held-out prose (mean KLD, same top-1, perplexity).
# Usage: bench/k3_tiny_quality.sh [BUILD_DIR]   (needs build/k3-tiny/text from
# scripts/train-k3-tiny.sh; CHUNKS=40 held-out chunks of 512 tokens, THREADS=2)
set -euo pipefail
cd "$(dirname "$0")/.."
K3=${1:-build}/bin/k3
W=${K3_TRAIN_DIR:-build/k3-tiny}
M=models/k3-tiny/k3-tiny-F16.gguf
HELD=$W/text/heldout_prose.txt
CHUNKS=${CHUNKS:-40} THREADS=${THREADS:-2}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/k3-quality.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
head -c 3000000 "$W/text/train.txt" > "$tmp/calib.txt"        # calibration: training text only
"$K3" imatrix -m "$M" -f "$tmp/calib.txt" --chunks 200 -t "$THREADS" -o "$tmp/imatrix.gguf" >/dev/null 2>&1
"$K3" perplexity -m "$M" -f "$HELD" -c 512 --chunks "$CHUNKS" -t "$THREADS" --kl-base-out "$tmp/base.klb" --kl-top-k 4096 > "$tmp/base.txt" 2>&1
base_ppl=$(sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p' "$tmp/base.txt")
score() {  # score MODEL LABEL SIZE
  "$K3" perplexity -m "$1" -f "$HELD" -c 512 --chunks "$CHUNKS" -t "$THREADS" --kl-base "$tmp/base.klb" > "$tmp/s.txt" 2>&1
  local kld top ppl
  kld=$(sed -n 's/^Mean KLD *: \([0-9.]*\).*/\1/p' "$tmp/s.txt")
  top=$(sed -n 's/^Same top-1 *: \([0-9.]*\).*/\1/p' "$tmp/s.txt")
  ppl=$(sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p' "$tmp/s.txt")
  printf '| %s | %s | %s | %s | %s |\n' "$2" "$3" "$kld" "$top %" "$ppl"
}
echo "master k3-tiny-F16: held-out PPL $base_ppl ($CHUNKS chunks of 512 tokens)"
echo
echo "| file type | size | mean KLD vs F16 | same top-1 | PPL |"
echo "|---|---|---|---|---|"
for t in Q8_0 Q6_K Q4_K_M Q3_K_S Q2_K IQ2_XXS IQ1_M; do
  # no imatrix (IQ types: importance 1 everywhere), the imatrix with llama-quantize's rule for
  # the tensors it lacks (token_embd: the unweighted quantizer), and the imatrix completed with
  # importance 1 (--uniform-missing), which isolates what the calibration itself changes
  for im in no yes filled; do
    case $im in
      yes) flags=(--imatrix "$tmp/imatrix.gguf"); label="$t + imatrix" ;;
      filled) flags=(--imatrix "$tmp/imatrix.gguf" --uniform-missing); label="$t + imatrix, uniform where missing" ;;
      *) case $t in IQ*) flags=(--uniform-imatrix) ;; *) flags=() ;; esac; label="$t" ;;
    esac
    "$K3" quantize "$M" "$tmp/q.gguf" "$t" -q "${flags[@]}" >/dev/null 2>&1
    score "$tmp/q.gguf" "$label" "$(du -k "$tmp/q.gguf" | cut -f1) KiB"
  done
done
echo
echo "| pruning (16 experts per layer) | kept | mean KLD vs unpruned | same top-1 | PPL |"
echo "|---|---|---|---|---|"
for keep in 12 8; do
  for method in reap freq random; do
    "$K3" reap -m "$M" --calib "$tmp/calib.txt" --max-tokens 100000 --keep "$keep" --method "$method" -t "$THREADS" \
      -o "$tmp/r.gguf" --no-progress >/dev/null 2>&1
    score "$tmp/r.gguf" "$method, $((100 - keep * 100 / 16)) %" "$keep"
  done
done
