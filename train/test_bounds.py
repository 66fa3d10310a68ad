"""Writes tests/data/k3-tiny/manifest.json: the bounds of tests/model/k3_tiny_test.cpp.

F16 master: NMSE <= 1e-9 against the float64 twin (k3 runs F16 weights in exact F32
arithmetic; measured ~1e-14). Quantized files: k3, like llama.cpp's CPU backend, rounds the
activations of every quantized product to 8 bits, so the bound is 2x the engine's own NMSE
measured when the model was made (worst of batch/step/chunk:7) -- a regression bound; that this
distance is llama.cpp's too is shown by bench/interop_llama.sh (same held-out perplexity).
Top-1: every position as measured.

  test_bounds.py --k3 build/bin/k3 --models models/k3-tiny --data tests/data/k3-tiny
"""
import argparse
import json
import os
import subprocess
import tempfile

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k3", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    toks = os.path.join(a.data, "k3-tiny.tokens")
    n = len(open(toks).read().strip().split(","))
    out = {"tokens": "k3-tiny.tokens", "text": "eval.txt", "models": {}}
    with tempfile.TemporaryDirectory() as td:
        for q in ("F16", "Q8_0", "Q4_K_M"):
            name = f"k3-tiny-{q}"
            ref = np.fromfile(os.path.join(a.data, f"{name}.ref64.f32"), "<f4").astype(np.float64)
            worst, top1 = 0.0, n
            for mode in ("batch", "step", "chunk:7"):
                f = os.path.join(td, "l.f32")
                subprocess.run([a.k3, "eval-logits", "-m", os.path.join(a.models, f"{name}.gguf"), "--tokens-file", toks,
                                "--mode", mode, "-o", f, "-t", "2"], check=True, capture_output=True)
                got = np.fromfile(f, "<f4").astype(np.float64)
                e = float(((got - ref) ** 2).sum() / (ref ** 2).sum())
                t1 = int((got.reshape(n, -1).argmax(1) == ref.reshape(n, -1).argmax(1)).sum())
                worst, top1 = max(worst, e), min(top1, t1)
            bound = 1e-9 if q == "F16" else float(f"{2 * worst:.3g}")
            out["models"][name] = {"ref64": f"{name}.ref64.f32", "nmse_measured": float(f"{worst:.3g}"),
                                   "nmse_vs_ref64_max": bound, "top1_vs_ref64_min": top1,
                                   "rule": "1e-9 (exact F32 arithmetic)" if q == "F16" else "2 x measured (8-bit activations)"}
            print(f"{name}: NMSE {worst:.3e} -> bound {bound:.3e}, top-1 {top1}/{n}")
    tmp = os.path.join(a.data, "manifest.json.tmp")
    json.dump(out, open(tmp, "w"), indent=1)
    os.replace(tmp, os.path.join(a.data, "manifest.json"))


if __name__ == "__main__":
    main()
