#!/bin/bash
# bench/vs_llama.sh: llama-bench and k3 bench alternated (llama, k3, k3, llama per round) on
# one model, 2 threads, so the ratio comes from one run on one host (bench/RESULTS.md).
# Usage: bench/vs_llama.sh LLAMA_BENCH K3 MODEL [ROUNDS=4] [PROMPT=512]
#   LLAMA_BENCH  llama-bench of a llama.cpp build with kimi-k3 (docs/bench.md)
#   PROMPT       0 for tg64 alone
set -euo pipefail
[ $# -ge 3 ] || { sed -n 2,6p "$0"; exit 2; }
LB=$1 K3=$2 M=$3 ROUNDS=${4:-4} P=${5:-512}
llama() { "$LB" -m "$M" -p "$P" -n 64 -t 2 -r 3 2>/dev/null | grep -E "tg64|pp$P" |
  awk -F'|' '{gsub(/ /,"",$(NF-2)); printf "%s=%s ", $(NF-2), $(NF-1)}'; }
k3() { "$K3" bench -m "$M" -p "$P" -n 64 -t 2 -r 3 --no-bw 2>&1 | grep -E "tg64 \||pp$P \|" |
  awk -F'|' '{gsub(/ /,"",$2); printf "%s=%s ", $2, $5}'; }
for _ in $(seq 1 "$ROUNDS"); do
  echo "$(date +%T) llama $(llama)"
  echo "$(date +%T) k3    $(k3)"
  echo "$(date +%T) k3    $(k3)"
  echo "$(date +%T) llama $(llama)"
done
