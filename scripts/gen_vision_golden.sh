#!/usr/bin/env bash
# scripts/gen_vision_golden.sh LLAMA_BUILD [OUT_DIR]: remakes tests/data/vision/ (docs/vision.md,
# "How the tower is verified").
#   1. train/vision_synth.py: four synthetic kimik3 towers (three shapes, one also in F16) and six
#      PNG images of different sizes and aspect ratios, seeded;
#   2. the reference: llama.cpp's mtmd (branch kimi-k3-vision-only, built in LLAMA_BUILD, a CMake
#      build directory with libmtmd and libllama) embeds every image with every tower through
#      scripts/ref/mtmd_embed.cpp (compiled here against that build; flash attention off,
#      2 threads). The text model it needs for the projection width is k3-tiny (256 wide);
#   3. the float64 evaluation: train/vision_ref64.py on the same files;
#   4. manifest.json: per case the token count, NMSE(llama vs ref64) and the acceptance bound
#      max(2·that, 1e-9) that tests/vision/vision_golden_test.cpp holds `k3 embed-image` to.
# Needs /usr/bin/python3 with numpy (Debian's python3-numpy) and g++.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
llama="${1:?usage: gen_vision_golden.sh LLAMA_BUILD_DIR [OUT_DIR]}"
llama_src="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$llama/CMakeCache.txt")"
out="${2:-$root/tests/data/vision}"
py=/usr/bin/python3
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
g++ -O2 -std=c++17 -Wno-deprecated-declarations "$root/scripts/ref/mtmd_embed.cpp" \
  -I"$llama_src/include" -I"$llama_src/ggml/include" -I"$llama_src/tools/mtmd" \
  -L"$llama/bin" -lmtmd -lllama -lggml -lggml-base -Wl,-rpath,"$llama/bin" -o "$tmp/mtmd_embed"
$py "$root/train/vision_synth.py" "$out"
text="$root/models/k3-tiny/k3-tiny-F16.gguf"
cases="$tmp/cases.txt"
: > "$cases"
for tower in "$out"/mmproj-*.gguf; do
  t="$(basename "$tower" .gguf)"
  t="${t#mmproj-}"
  for img in "$out"/*.png; do
    i="$(basename "$img" .png)"
    line="$("$tmp/mtmd_embed" "$text" "$tower" "$img" "$out/$t.$i.llama.f32" 2>/dev/null | grep '^tokens')"
    $py "$root/train/vision_ref64.py" "$tower" "$img" "$out/$t.$i.ref64.f32" > /dev/null
    echo "$t $i ${line#tokens }" >> "$cases"
  done
done
$py - "$out" "$cases" <<'PY'
import json, sys
import numpy as np
out, cases = sys.argv[1], sys.argv[2]
manifest = {"about": {
    "llama": "llama.cpp mtmd (unslothai/llama.cpp kimi-k3-vision-only, edfd4c1), CPU, 2 threads, "
             "flash attention off: scripts/ref/mtmd_embed.cpp",
    "ref64": "train/vision_ref64.py: float64 evaluation, stored as float32",
    "format": "raw little-endian float32, tokens x n_embd, row-major",
    "nmse": "sum((a-b)^2)/sum(b^2) in float64, b = the second member",
    "rule": "NMSE(k3 vs llama) <= max(2*NMSE(llama vs ref64), 1e-9); same token count"},
    "cases": []}
for line in open(cases):
    t, i, tok, _, nx, _, ny, _, ne = line.split()
    a = np.fromfile(f"{out}/{t}.{i}.llama.f32", dtype=np.float32).astype(np.float64)
    b = np.fromfile(f"{out}/{t}.{i}.ref64.f32", dtype=np.float32).astype(np.float64)
    assert a.size == b.size == int(tok) * int(ne), (t, i)
    nmse = float(((a - b) ** 2).sum() / (b ** 2).sum())
    manifest["cases"].append({"tower": f"mmproj-{t}.gguf", "image": f"{i}.png", "tokens": int(tok),
                              "n_embd": int(ne), "nmse_llama_vs_ref64": nmse,
                              "bound": max(2 * nmse, 1e-9)})
tmp = f"{out}/manifest.json.tmp"
with open(tmp, "w") as f:
    json.dump(manifest, f, indent=1)
    f.write("\n")
import os
os.replace(tmp, f"{out}/manifest.json")
print(f"{len(manifest['cases'])} cases, NMSE llama vs ref64 up to "
      f"{max(c['nmse_llama_vs_ref64'] for c in manifest['cases']):.3g}")
PY
