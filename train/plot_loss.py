"""Plots the training loss (per step, smoothed) and the held-out loss of a train.py run; for a
retrieval-stage run also the held-out retrieval accuracy (right axis)."""
import argparse
import json
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--run", required=True, help="train.py --out directory")
    ap.add_argument("--out", required=True, help="PNG to write")
    ap.add_argument("--title", default="k3-tiny training")
    a = ap.parse_args()
    log = [json.loads(l) for l in open(os.path.join(a.run, "log.jsonl"))]
    ev = [json.loads(l) for l in open(os.path.join(a.run, "eval.jsonl"))] if os.path.exists(os.path.join(a.run, "eval.jsonl")) else []
    short = [r for r in log if not r.get("long") and not r.get("retrieval")]
    retr = [r for r in log if r.get("retrieval")]
    longs = [r for r in log if r.get("long")]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    tok = 0
    xs, ys = [], []
    cum = {}
    for r in log:
        tok += r["tokens"]
        cum[r["step"]] = tok / 1e6
    sm, ema = [], None
    for r in short:
        ema = r["loss"] if ema is None else 0.95 * ema + 0.05 * r["loss"]
        sm.append(ema)
    ax.plot([cum[r["step"]] for r in short], [r["loss"] for r in short], color="#9ab", lw=0.5, label="train (512-token windows)")
    ax.plot([cum[r["step"]] for r in short], sm, color="#147", lw=1.5, label="train, smoothed")
    if longs:
        ax.plot([cum[r["step"]] for r in longs], [r["loss"] for r in longs], ".", ms=2, color="#c84", label="train (4096-token passkey windows)")
    if retr:
        ax.plot([cum[r["step"]] for r in retr], [r["loss"] for r in retr], ".", ms=2, color="#6a4",
                label="train (pass-key windows, answers weighted)")
    if ev:
        ax.plot([cum[e["step"]] for e in ev], [e["heldout_loss"] for e in ev], "o-", color="#a22", ms=3, label="held-out prose")
    acc = [e for e in ev if "retrieval" in e]
    if acc:
        ax2 = ax.twinx()
        ax2.plot([cum[e["step"]] for e in acc], [100 * e["retrieval"] for e in acc], "s--", color="#529", ms=4,
                 label="held-out retrieval (%)")
        ax2.set_ylabel("held-out retrieval, teacher-forced (%)")
        ax2.set_ylim(0, 100)
        ax2.legend(loc="upper center")
    ax.set_xlabel("tokens trained (millions)")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title(a.title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    tmp = a.out + ".tmp.png"
    fig.savefig(tmp)
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
