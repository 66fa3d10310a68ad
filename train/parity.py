"""Parity of the PyTorch K3 twin with the golden float64 logits.

For every F32 golden model in tests/data/golden (the models whose weights are exact in F32),
runs the 48 golden tokens through k3_model.K3 in float64, once with the token-sequential KDA
and once with the chunked (training) form, and compares with NAME.ref64.f32 (an independent
float64 evaluation of docs/MODEL.md). NMSE = sum((a-b)^2) / sum(b^2) over all logits must be
<= 1e-9 for both. Exit 0 on success, 1 on a miss, 77 when PyTorch is not installed (CTest
treats 77 as "skipped"; `scripts/setup.sh --train` installs it).

Usage: /usr/bin/python3 train/parity.py [GOLDEN_DIR]
"""
import os
import sys

try:
    import numpy as np
    import torch
except ImportError as e:  # the default build and tests do not need PyTorch
    print(f"parity: skipped ({e}); install with scripts/setup.sh --train")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from k3_gguf import load_gguf  # noqa: E402

F32_MODELS = ["archtest-s1", "tiny10-base", "tiny10-softplus", "tiny10-noqlora"]
LIMIT = 1e-9


def nmse(a, b):
    return float(((a - b) ** 2).sum() / (b ** 2).sum())


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    gdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "tests", "data", "golden")
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    ok = True
    for name in F32_MODELS:
        m = load_gguf(os.path.join(gdir, f"{name}.gguf"), dtype=torch.float64)
        toks = [int(t) for t in open(os.path.join(gdir, f"{name}.tokens")).read().strip().split(",")]
        ref = np.fromfile(os.path.join(gdir, f"{name}.ref64.f32"), dtype="<f4").astype(np.float64)
        ref = ref.reshape(len(toks), -1)
        for mode, cs in (("recurrent", 0), ("chunked", 16), ("chunked", 7)):
            m.kda_mode, m.kda_chunk = mode, cs or 16
            with torch.no_grad():
                out = m(torch.tensor([toks]))[0].numpy()
            e = nmse(out, ref)
            top1 = float((out.argmax(-1) == ref.argmax(-1)).mean())
            good = e <= LIMIT
            ok &= good
            label = mode if mode == "recurrent" else f"chunked/{cs}"
            print(f"{name:16s} {label:12s} NMSE {e:.3e}  top-1 {top1:.3f}  {'ok' if good else 'FAIL'}")
    print("parity: all within NMSE <= 1e-9" if ok else "parity: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
