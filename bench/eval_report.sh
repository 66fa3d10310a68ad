#!/usr/bin/env bash
# bench/eval_report.sh MODEL [OUT_DIR]: the evaluation suite of a model in one run, written as a
# markdown report (what a quant maker pastes into a model card) and JSON (docs/eval-report.md):
#   - needle in a haystack (`k3 niah`, LENGTHS × 0.15/0.5/0.85, TRIALS keys per cell);
#   - held-out perplexity, and with BASE=MASTER.gguf the mean KLD and same top-1 against it;
#   - the spot checks through `k3 serve` (bench/spot_checks.sh: arithmetic accuracy and
#     natural stops, tool-call validity, the reasoning budget), N problems each.
# Environment: K3 (binary, default build/bin/k3), HELD (held-out text; default the k3-tiny
# held-out prose), LENGTHS (512,1k,2k,4k,8k), TRIALS (1), N (60), CTX (512), CHUNKS (40), THREADS (2), BASE.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ]; then sed -n '2,10p' "$0"; exit $(( $# < 1 ? 2 : 0 )); fi
MODEL=$1 OUT=${2:-eval-report}
K3=${K3:-build/bin/k3} HELD=${HELD:-build/k3-tiny/text/heldout_prose.txt}
LENGTHS=${LENGTHS:-512,1k,2k,4k,8k} TRIALS=${TRIALS:-1} N=${N:-60} CTX=${CTX:-512} CHUNKS=${CHUNKS:-40} THREADS=${THREADS:-2}
[ -f "$MODEL" ] || { echo "eval_report: no model file $MODEL" >&2; exit 2; }
[ -f "$HELD" ] || { echo "eval_report: no held-out text $HELD (set HELD=FILE)" >&2; exit 2; }
mkdir -p "$OUT"
echo "== niah ($LENGTHS)" >&2
"$K3" niah -m "$MODEL" --lengths "$LENGTHS" --trials "$TRIALS" -t "$THREADS" --json --no-progress \
  > "$OUT/niah.json" 2> "$OUT/niah.log"
echo "== perplexity" >&2
kl=()
if [ -n "${BASE:-}" ]; then
  "$K3" perplexity -m "$BASE" -f "$HELD" -c "$CTX" --chunks "$CHUNKS" -t "$THREADS" \
    --kl-base-out "$OUT/base.klb" --kl-top-k 4096 > "$OUT/base-perplexity.txt" 2>&1
  kl=(--kl-base "$OUT/base.klb")
fi
"$K3" perplexity -m "$MODEL" -f "$HELD" -c "$CTX" --chunks "$CHUNKS" -t "$THREADS" "${kl[@]}" \
  > "$OUT/perplexity.txt" 2>&1
echo "== spot checks" >&2
THREADS=$THREADS N=$N bench/spot_checks.sh "$K3" "$MODEL" > "$OUT/spot_checks.txt"
/usr/bin/python3 - "$OUT" "$MODEL" "${BASE:-}" "$HELD" <<'PY'
import json, os, re, sys
out, model, base, held = sys.argv[1:5]
niah = json.load(open(os.path.join(out, "niah.json")))
ppl_text = open(os.path.join(out, "perplexity.txt")).read()
def grab(pat):
    m = re.search(pat, ppl_text, re.M)
    return float(m.group(1)) if m else None
ppl = {"ppl": grab(r"Final estimate: PPL = ([0-9.]+)"), "mean_kld": grab(r"^Mean KLD *: ([0-9.]+)"),
       "same_top1_percent": grab(r"^Same top-1 *: ([0-9.]+)")}
spot_lines = open(os.path.join(out, "spot_checks.txt")).read().splitlines()
spot = json.loads(next(l for l in reversed(spot_lines) if l.startswith("{")))
table = [l for l in spot_lines if l.startswith("|")]
lengths = sorted({r["length"] for r in niah["results"]})
depths = sorted({r["depth"] for r in niah["results"]})
cell = {}
for r in niah["results"]:
    cell.setdefault((r["length"], r["depth"]), []).append(r["pass"])
md = [f"# Evaluation of `{os.path.basename(model)}`", "",
      f"Held-out text: `{held}`" + (f"; master for KLD: `{os.path.basename(base)}`" if base else ""), "",
      f"## Needle in a haystack: {niah['passed']}/{niah['cells_total']} cells exact "
      f"({niah['trials']} key(s) per cell)", "",
      "| length | " + " | ".join(f"depth {d:g}" for d in depths) + " |",
      "|---|" + "---|" * len(depths)]
for L in lengths:
    md.append(f"| {L} | " + " | ".join(("pass" if all(cell[(L, d)]) else "fail") if (L, d) in cell else "–"
                                       for d in depths) + " |")
md += ["", "## Held-out perplexity", "", f"PPL {ppl['ppl']}" +
       (f"; mean KLD {ppl['mean_kld']}, same top-1 {ppl['same_top1_percent']} %" if ppl["mean_kld"] is not None else ""),
       "", "## Spot checks (greedy, through k3 serve)", ""] + table
with open(os.path.join(out, "report.md"), "w") as f:
    f.write("\n".join(md) + "\n")
with open(os.path.join(out, "report.json"), "w") as f:
    json.dump({"model": model, "base": base or None, "heldout": held,
               "niah": {"passed": niah["passed"], "cells": niah["cells_total"], "trials": niah["trials"],
                        "results": niah["results"]},
               "perplexity": ppl, "spot_checks": spot}, f, indent=1)
print("\n".join(md))
PY
echo "eval_report: wrote $OUT/report.md and $OUT/report.json" >&2
