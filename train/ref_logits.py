"""Float64 reference logits of any kimi-k3 GGUF (F32, F16 or quantized) with the PyTorch twin.

Quantized tensors are dequantized by `k3 dequant` (bit-exact with llama.cpp's dequantization,
tests/quant), so the reference is the exact math of the weights as stored; the engine's own
distance from it is then only its arithmetic (the golden rule of tests/data/golden/README.md).

  ref_logits.py --k3 build/bin/k3 -m MODEL.gguf --tokens TOKENS -o LOGITS.f32
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_io as G  # noqa: E402
import k3_gguf  # noqa: E402


def load_any(k3, path):
    """k3_gguf.load_gguf with quantized tensors dequantized by `k3 dequant`."""
    with tempfile.TemporaryDirectory() as td:
        def get(g, name):
            ti = g.tensors[name]
            if ti.type in (G.GGML_F32, G.GGML_F16):
                return np.array(g.tensor(name), dtype=np.float64)
            out = os.path.join(td, "t.f32")
            subprocess.run([k3, "dequant", path, "-t", name, "-o", out], check=True, capture_output=True)
            return np.fromfile(out, dtype="<f4").astype(np.float64)
        return k3_gguf.load_gguf(path, dtype=torch.float64, tensor=get)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k3", required=True)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--tokens", required=True, help="file of comma-separated ids")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    toks = [int(t) for t in open(a.tokens).read().replace("[", "").replace("]", "").replace(",", " ").split()]
    m = load_any(a.k3, a.model)
    m.kda_mode = "recurrent"
    with torch.no_grad():
        logits = m(torch.tensor([toks]))[0].numpy()
    tmp = a.output + ".tmp"
    logits.astype("<f4").tofile(tmp)
    os.replace(tmp, a.output)
    print(f"{a.output}: {len(toks)} x {logits.shape[1]} (float64, stored as float32)")


if __name__ == "__main__":
    main()
