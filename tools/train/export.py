"""Exports a train.py checkpoint as the k3-tiny master GGUF (F16 matrices, F32 vectors), with
its vocabulary and the K3 chat template, and optionally the float64 reference logits of a
token sequence (the "ref64" file k3 eval-logits compares with).

  export.py --ckpt RUN/ckpt.pt --vocab vocab.json --template Kimi-K3.jinja --out k3-tiny-F16.gguf
            [--ref-tokens TOKENS --ref-out LOGITS.f32]

The reference logits are computed from the exported file itself (weights as stored, F16
rounded), in float64 with the token-sequential KDA, so they check the engine, not the export.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k3_gguf  # noqa: E402
from k3_model import K3, K3Config  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--vocab", required=True)
    ap.add_argument("--template", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--outtype", choices=["f16", "f32"], default="f16")
    ap.add_argument("--name", default="k3-tiny")
    ap.add_argument("--ref-tokens", help="file with comma-separated token ids")
    ap.add_argument("--ref-out", help="float64 logits of --ref-tokens, stored as raw float32")
    a = ap.parse_args()
    st = torch.load(a.ckpt)
    m = K3(K3Config(**st["config"]))
    m.load_state_dict(st["model"])
    vocab = json.load(open(a.vocab))
    k3_gguf.export_gguf(m, a.out, vocab, open(a.template, encoding="utf-8").read(), name=a.name,
                        outtype=a.outtype)
    print(f"wrote {a.out} (step {st['step']})")
    if a.ref_tokens:
        toks = [int(t) for t in open(a.ref_tokens).read().replace("[", "").replace("]", "").replace(",", " ").split()]
        ref = k3_gguf.load_gguf(a.out, dtype=torch.float64)
        ref.kda_mode = "recurrent"
        with torch.no_grad():
            logits = ref(torch.tensor([toks]))[0].numpy()
        logits.astype("<f4").tofile(a.ref_out)
        print(f"wrote {a.ref_out}: {len(toks)} x {logits.shape[1]} float64 logits (stored as f32)")


if __name__ == "__main__":
    main()
