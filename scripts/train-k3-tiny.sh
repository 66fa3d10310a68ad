#!/usr/bin/env bash
# Reproduces k3-tiny from a clean clone: data, vocabulary, training (stage 1: the corpus; stage 2:
# retrieval; stage 3: chat repair), export, quantization.
#   scripts/train-k3-tiny.sh [--steps N] [--retrieval-steps R] [--repair-steps P] [--max-minutes M] [--threads T] [--seed S]
# Every stage is skipped when its output exists, so rerunning resumes (training continues from
# its last checkpoint, bit for bit the run it would have been). Work files go to
# $K3_TRAIN_DIR (default build/k3-tiny); the shipped files to models/k3-tiny/.
# docs/training.md explains each stage and the numbers of the shipped run.
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=500 RSTEPS=600 PSTEPS=80 MINUTES=0 THREADS=2 SEED=1234
while (($#)); do
  case "$1" in
    --steps) STEPS=$2; shift 2 ;;
    --retrieval-steps) RSTEPS=$2; shift 2 ;;
    --repair-steps) PSTEPS=$2; shift 2 ;;
    --max-minutes) MINUTES=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "train-k3-tiny.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
scripts/setup.sh --train
scripts/build.sh --target k3
K3=$PWD/build/bin/k3
PY=/usr/bin/python3          # Debian's torch imports from the system interpreter
# glibc returns large freed blocks to the kernel by default; PyTorch then page-faults its
# activations in again every step (~8 % of a step here)
export MALLOC_MMAP_THRESHOLD_=1099511627776 MALLOC_TRIM_THRESHOLD_=1099511627776 MALLOC_TOP_PAD_=536870912
W=${K3_TRAIN_DIR:-build/k3-tiny}
T=train
OUT=models/k3-tiny
TEMPLATE=tests/data/text/Kimi-K3.jinja
mkdir -p "$W" "$OUT"
stage() { echo "== $*" >&2; }

[ -f "$W/text/stats.json" ] || { stage data; $PY $T/make_data.py --out "$W/text" --seed "$SEED" --k3 "$K3"; }
[ -f "$W/vocab.json" ] || { stage vocabulary; $PY $T/bpe.py --k3 "$K3" --pre-vocab tests/data/text/k3-synth-vocab.gguf \
    --input "$W/text/train.txt" --vocab-size 4096 --n-control 256 --out "$W/vocab.json"; }
[ -f "$W/text/retrieval.txt" ] || { stage "retrieval data"; $PY $T/make_data.py --out "$W/text" --seed "$SEED" --k3 "$K3" \
    --retrieval 4000 --retrieval-heldout 200; }
[ -f "$W/tok/retrieval.u16" ] || { stage tokenize; $PY $T/tokenize_data.py --k3 "$K3" --text "$W/text" \
    --vocab "$W/vocab.json" --template "$TEMPLATE" --out "$W/tok"; }
last_step() { $PY -c "import json,sys; print(json.loads(open('$1/log.jsonl').readlines()[-1])['step'])"; }
stage "train, stage 1 ($STEPS steps, $THREADS threads)"
$PY $T/train.py --data "$W/tok" --out "$W/run" --seed "$SEED" --threads "$THREADS" --steps "$STEPS" \
    --max-minutes "$MINUTES"
step=$(last_step "$W/run")
if [ "$step" -lt "$STEPS" ]; then echo "training stopped at step $step of $STEPS; rerun to resume" >&2; exit 0; fi
[ -f "$W/stage1-F16.gguf" ] || $PY $T/export.py --ckpt "$W/run/ckpt.pt" --vocab "$W/vocab.json" --template "$TEMPLATE" \
    --out "$W/stage1-F16.gguf"
# Stage 2 starts from the exported stage-1 model (F16 weights): half the steps ordinary batches,
# half windows packed with pass-key episodes whose answers weigh 5x, their key tokens 50x (docs/training.md).
stage "train, stage 2: retrieval ($RSTEPS steps)"
$PY $T/train.py --data "$W/tok" --out "$W/run2" --init-gguf "$W/stage1-F16.gguf" --seed "$SEED" \
    --threads "$THREADS" --steps "$RSTEPS" --lr 1.5e-3 --warmup 20 --retrieval-every 2 --fresh-keys \
    --retrieval-shapes 8x512,16x256,8x512,4x1024,16x256,2x2048,8x512,1x4096 --answer-weight 5 --key-weight 50 \
    --eval-every 50 --ckpt-every 10 --max-minutes "$MINUTES"
step=$(last_step "$W/run2")
if [ "$step" -lt "$RSTEPS" ]; then echo "stage 2 stopped at step $step of $RSTEPS; rerun to resume" >&2; exit 0; fi
[ -f "$W/stage2-F16.gguf" ] || $PY $T/export.py --ckpt "$W/run2/ckpt.pt" --vocab "$W/vocab.json" --template "$TEMPLATE" \
    --out "$W/stage2-F16.gguf"
# Stage 3 repairs the chat behaviour that stage 2 bends (after it the model opened most think
# channels with a tool-use plan and called undeclared tools: docs/training.md): three quarters
# ordinary batches at a lower rate, the retrieval answers no longer weighted, their keys still 50x.
stage "train, stage 3: chat repair ($PSTEPS steps)"
$PY $T/train.py --data "$W/tok" --out "$W/run3" --init-gguf "$W/stage2-F16.gguf" --seed "$SEED" \
    --threads "$THREADS" --steps "$PSTEPS" --lr 5e-4 --warmup 5 --retrieval-every 4 --fresh-keys \
    --retrieval-shapes 8x512,16x256,4x1024,2x2048 --answer-weight 1 --key-weight 50 \
    --eval-every 40 --ckpt-every 10 --max-minutes "$MINUTES"
step=$(last_step "$W/run3")
if [ "$step" -lt "$PSTEPS" ]; then echo "stage 3 stopped at step $step of $PSTEPS; rerun to resume" >&2; exit 0; fi
stage export
$PY $T/export.py --ckpt "$W/run3/ckpt.pt" --vocab "$W/vocab.json" --template "$TEMPLATE" \
    --out "$OUT/k3-tiny-F16.gguf"
stage quantize
"$K3" imatrix -m "$OUT/k3-tiny-F16.gguf" -f "$W/text/train.txt" --chunks 200 -t "$THREADS" -o "$W/imatrix.gguf"
"$K3" quantize -q "$OUT/k3-tiny-F16.gguf" "$OUT/k3-tiny-Q8_0.gguf" Q8_0
"$K3" quantize -q --imatrix "$W/imatrix.gguf" "$OUT/k3-tiny-F16.gguf" "$OUT/k3-tiny-Q4_K_M.gguf" Q4_K_M
stage "references (tests/data/k3-tiny: the float64 logits the engine is tested against)"
REF=tests/data/k3-tiny
"$K3" tokenize -m "$OUT/k3-tiny-F16.gguf" --ids -f "$REF/eval.txt" | tr -d "[] " > "$REF/k3-tiny.tokens"
for q in F16 Q8_0 Q4_K_M; do
  $PY $T/ref_logits.py --k3 "$K3" -m "$OUT/k3-tiny-$q.gguf" --tokens "$REF/k3-tiny.tokens" \
      -o "$REF/k3-tiny-$q.ref64.f32"
done
$PY $T/test_bounds.py --k3 "$K3" --models "$OUT" --data "$REF"
stage "held-out perplexity (models/k3-tiny/eval.txt)"
for q in F16 Q8_0 Q4_K_M; do
  echo "k3-tiny-$q: $("$K3" perplexity -m "$OUT/k3-tiny-$q.gguf" -f "$W/text/heldout_prose.txt" -c 512 -t "$THREADS" 2>&1 | grep -i 'estimated ppl\|final' | tail -1)"
done | tee "$OUT/eval.txt"
stage plot
$PY $T/plot_loss.py --run "$W/run" --out docs/k3-tiny-loss.png --title "k3-tiny, stage 1"
$PY $T/plot_loss.py --run "$W/run2" --out docs/k3-tiny-retrieval.png --title "k3-tiny, stage 2 (retrieval)"
$PY $T/plot_loss.py --run "$W/run3" --out docs/k3-tiny-repair.png --title "k3-tiny, stage 3 (chat repair)"
cp "$W/run/config.json" "$OUT/config.json"
