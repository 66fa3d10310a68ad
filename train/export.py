"""Exports a train.py checkpoint as the k3-tiny master GGUF (F16 matrices, F32 vectors), with
its vocabulary and the K3 chat template. The float64 reference logits of a file are
ref_logits.py's job.

  export.py --ckpt RUN/ckpt.pt --vocab vocab.json --template Kimi-K3.jinja --out k3-tiny-F16.gguf
"""
import argparse
import json
import os
import sys

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
    a = ap.parse_args()
    st = torch.load(a.ckpt)
    m = K3(K3Config(**st["config"]))
    m.load_state_dict(st["model"])
    vocab = json.load(open(a.vocab))
    k3_gguf.export_gguf(m, a.out, vocab, open(a.template, encoding="utf-8").read(), name=a.name,
                        outtype=a.outtype)
    print(f"wrote {a.out} (step {st['step']})")


if __name__ == "__main__":
    main()
