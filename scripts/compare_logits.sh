#!/usr/bin/env bash
# scripts/compare_logits.sh OLD_K3 NEW_K3: the logits of two k3 builds, byte for byte, on every
# golden model (tests/data/golden/*.gguf with a .tokens file) and on k3-tiny, in batch, step
# and chunk:5 mode with the F32 cache and in batch and step with the F16 cache
# (`k3 eval-logits`, 2 threads). A refactor that claims "behaviour unchanged"
# runs this with the build before it. Prints one line per case; exits 1 on any difference.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
old="${1:?usage: compare_logits.sh OLD_K3 NEW_K3}" new="${2:?usage: compare_logits.sh OLD_K3 NEW_K3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cases=()
for t in "$root"/tests/data/golden/*.tokens; do
  m="${t%.tokens}.gguf"
  [ -f "$m" ] && cases+=("$m|$t")
done
printf '%s' "$(seq -s, 1 40)" > "$tmp/tiny.tokens"
cases+=("$root/models/k3-tiny/k3-tiny-Q8_0.gguf|$tmp/tiny.tokens")
bad=0
for c in "${cases[@]}"; do
  m="${c%%|*}" t="${c##*|}"
  for mode in batch step chunk:5 batch/f16 step/f16; do
    kv=f32
    case "$mode" in */f16) kv=f16 ;; esac
    "$old" eval-logits -m "$m" --tokens-file "$t" --mode "${mode%/f16}" --kv-type $kv -t 2 -o "$tmp/old.f32" 2>/dev/null
    "$new" eval-logits -m "$m" --tokens-file "$t" --mode "${mode%/f16}" --kv-type $kv -t 2 -o "$tmp/new.f32" 2>/dev/null
    if cmp -s "$tmp/old.f32" "$tmp/new.f32"; then
      echo "same      $(basename "$m") $mode ($(stat -c %s "$tmp/new.f32") bytes)"
    else
      echo "DIFFERENT $(basename "$m") $mode"
      bad=1
    fi
  done
done
exit $bad
