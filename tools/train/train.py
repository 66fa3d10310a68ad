"""Trains k3-tiny (k3_model.K3) on the tokenized corpus of tokenize_data.py. CPU, PyTorch.

Deterministic for a seed and a thread count: one torch.Generator drives initialisation and one
numpy RandomState the batches; both are saved in every checkpoint, so a resumed run continues
the very same sequence of batches and updates as an uninterrupted one.

Schedule: AdamW (no decay on vectors), linear warm-up, cosine decay to 10 %. Batches are mostly
`--batch` random windows of `--ctx` tokens; every `--long-every`-th step is one window of
`--long-ctx` tokens starting at a long document (the passkey episodes), so the model learns to
retrieve across thousands of tokens. Load balance: after each step each MoE layer's
selection-only correction bias moves by `--bias-rate` toward under-used experts (the K3 recipe,
no auxiliary loss).

Outputs in --out: ckpt.pt (latest, atomic), log.jsonl (one line per step), eval.jsonl (held-out
loss), config.json.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from k3_model import K3, K3Config  # noqa: E402


def init_weights(m: K3, gen: torch.Generator):
    """Matrices N(0, 1/fan_in) (residual-branch outputs scaled by 1/sqrt(2 n_layer)), norms 1,
    embeddings N(0, 1), AttnRes scores 0 (an even mix), decay rates exp(A_log) in [1, 16],
    dt bias in [-3, 0] so that the decays start spread between fast and slow."""
    c = m.cfg
    out_scale = 1.0 / math.sqrt(2 * c.n_layer)
    with torch.no_grad():
        for name in m.names():
            w = m.w(name)
            if name.endswith("_norm.weight"):
                w.fill_(1.0)
            elif "res_score" in name:
                w.zero_()
            elif name == "token_embd.weight":
                w.normal_(0.0, 1.0, generator=gen)
            elif name.endswith("ssm_a"):
                w.copy_(-torch.empty(w.shape).uniform_(1.0, 16.0, generator=gen))
            elif name.endswith("ssm_dt.bias"):
                w.uniform_(-3.0, 0.0, generator=gen)
            elif "ssm_conv1d" in name:
                w.normal_(0.0, 0.2, generator=gen)
                w[:, -1] += 1.0                   # start close to "pass the current token"
            else:
                fan_in = w.shape[-1]
                std = 1.0 / math.sqrt(fan_in)
                if any(s in name for s in ("attn_output", "ffn_down", "ffn_routed_up", "ffn_down_shexp")):
                    std *= out_scale
                w.normal_(0.0, std, generator=gen)


class Batches:
    def __init__(self, data_dir, seed):
        self.ids = np.fromfile(os.path.join(data_dir, "train.u16"), dtype="<u2")
        self.long_starts = np.fromfile(os.path.join(data_dir, "train_long_starts.u32"), dtype="<u4")
        self.rs = np.random.RandomState(seed)

    def short(self, B, T):
        starts = self.rs.randint(0, len(self.ids) - T - 1, size=B)
        return np.stack([self.ids[s:s + T + 1] for s in starts]).astype(np.int64)

    def long(self, T):
        s = int(self.long_starts[self.rs.randint(0, len(self.long_starts))])
        s = min(s, len(self.ids) - T - 1)
        return self.ids[s:s + T + 1][None].astype(np.int64)


def heldout_windows(data_dir, T, n):
    ids = np.fromfile(os.path.join(data_dir, "heldout_prose.u16"), dtype="<u2")
    n = min(n, (len(ids) - 1) // T)
    return np.stack([ids[i * T:i * T + T + 1] for i in range(n)]).astype(np.int64)


def evaluate(m, windows):
    m.eval()
    tot, cnt = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(windows), 8):
            w = torch.from_numpy(windows[i:i + 8])
            logits = m(w[:, :-1])
            tot += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1), reduction="sum").item()
            cnt += w[:, 1:].numel()
    m.train()
    return tot / cnt


def lr_at(step, a):
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    p = (step - a.warmup) / max(1, a.steps - a.warmup)
    return a.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, p))))


def save_ckpt(path, m, opt, step, batches, gen, a):
    tmp = path + ".tmp"
    torch.save({"model": m.state_dict(), "opt": opt.state_dict(), "step": step,
                "np_rng": batches.rs.get_state(), "torch_rng": gen.get_state(),
                "config": m.cfg.to_dict(), "args": vars(a)}, tmp)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="directory written by tokenize_data.py")
    ap.add_argument("--out", required=True, help="checkpoint and log directory")
    ap.add_argument("--config", help="K3Config as JSON (default: the k3-tiny shape)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--long-ctx", type=int, default=4096)
    ap.add_argument("--long-every", type=int, default=5)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=40)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--bias-rate", type=float, default=1e-3)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--ckpt-every", type=int, default=50)
    ap.add_argument("--max-minutes", type=float, default=0, help="stop (after a checkpoint) once this much wall time has passed; 0 = no limit")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    os.makedirs(a.out, exist_ok=True)
    cfg = K3Config(**json.load(open(a.config))) if a.config else K3Config()
    m = K3(cfg)
    m.kda_mode, m.kda_chunk = "chunked", 16
    gen = torch.Generator().manual_seed(a.seed)
    init_weights(m, gen)
    decay = [p for n, p in m.p.items() if p.dim() >= 2 and "token_embd" not in n]
    no_decay = [p for n, p in m.p.items() if not (p.dim() >= 2 and "token_embd" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    batches = Batches(a.data, a.seed)
    ck = os.path.join(a.out, "ckpt.pt")
    step = 0
    if os.path.exists(ck):
        st = torch.load(ck)
        m.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        step = st["step"]
        batches.rs.set_state(st["np_rng"])
        gen.set_state(st["torch_rng"])
        print(f"resumed at step {step}", flush=True)
    json.dump(cfg.to_dict(), open(os.path.join(a.out, "config.json"), "w"), indent=1)
    n_params = sum(p.numel() for p in m.p.values())
    print(f"k3-tiny: {n_params / 1e6:.2f} M parameters; {a.steps} steps", flush=True)
    held = heldout_windows(a.data, a.ctx, 32)
    log = open(os.path.join(a.out, "log.jsonl"), "a")
    evlog = open(os.path.join(a.out, "eval.jsonl"), "a")
    t_start = time.time()
    while step < a.steps:
        t0 = time.time()
        is_long = a.long_every > 0 and step % a.long_every == a.long_every - 1
        w = torch.from_numpy(batches.long(a.long_ctx) if is_long else batches.short(a.batch, a.ctx))
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a)
        logits = m(w[:, :-1], collect_routing=True)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0).item()
        opt.step()
        with torch.no_grad():
            for il, cnt in m.last_expert_counts.items():
                cnt = cnt.to(torch.float32)
                m.bias(il).add_(a.bias_rate * torch.sign(cnt.mean() - cnt))
        step += 1
        dt = time.time() - t0
        ntok = w[:, 1:].numel()
        rec = {"step": step, "loss": round(loss.item(), 5), "lr": lr_at(step - 1, a), "gnorm": round(gnorm, 4),
               "tokens": ntok, "sec": round(dt, 3), "tok_s": round(ntok / dt, 1), "long": is_long}
        log.write(json.dumps(rec) + "\n")
        log.flush()
        if step % 10 == 0 or step == 1:
            print(f"step {step:5d} loss {loss.item():.4f} lr {rec['lr']:.2e} {rec['tok_s']:.0f} tok/s"
                  f"{' long' if is_long else ''}", flush=True)
        if step % a.eval_every == 0 or step == a.steps:
            ev = evaluate(m, held)
            evlog.write(json.dumps({"step": step, "heldout_loss": round(ev, 5), "ppl": round(math.exp(ev), 3)}) + "\n")
            evlog.flush()
            print(f"  held-out loss {ev:.4f} ppl {math.exp(ev):.2f}", flush=True)
        stop = a.max_minutes > 0 and (time.time() - t_start) / 60 >= a.max_minutes
        if step % a.ckpt_every == 0 or step == a.steps or stop:
            save_ckpt(ck, m, opt, step, batches, gen, a)
        if stop:
            print(f"stopping at step {step} (--max-minutes); rerun the same command to resume", flush=True)
            break


if __name__ == "__main__":
    main()
