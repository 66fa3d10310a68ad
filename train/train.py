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

Retrieval stage (`--init-gguf`, `--retrieval-every`): training continues from an exported model
on a mix of the ordinary batches and windows packed with whole pass-key episodes (tokenize_data.py's
retrieval.u16), their assistant turns weighted `--answer-weight` and the key tokens of the answers
`--key-weight` times in the loss, so that the few tokens that need the copy from thousands of
tokens back carry a real share of the gradient (unweighted they are ~0.1 % of it). Held-out
retrieval (episodes in held-out prose, teacher-forced: every key token the argmax) is logged in
eval.jsonl as `retrieval`.

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
import k3_gguf  # noqa: E402
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


class Episodes:
    """Pass-key episodes of one .u16 file, sorted by length: per episode its [start, end), the
    offset of its assistant turn (after the last assistant opener) and the span of its answer
    (the response content: the key), all relative to the start."""

    def __init__(self, data_dir, part, markers):
        self.ids = np.fromfile(os.path.join(data_dir, f"{part}.u16"), dtype="<u2")
        starts = np.fromfile(os.path.join(data_dir, f"{part}_starts.u32"), dtype="<u4").astype(np.int64)
        ends = np.concatenate([starts[1:], [len(self.ids)]])
        opener = np.array(markers["assistant_open"], dtype=np.int64)
        close, sep = markers["close"], markers["sep"]
        spans = []
        for s0, e0 in zip(starts, ends):
            ep = self.ids[s0:e0].astype(np.int64)
            hits = [i for i in np.flatnonzero(ep == opener[0])
                    if np.array_equal(ep[i:i + len(opener)], opener)]
            if not hits:
                continue
            a = hits[-1] + len(opener)
            closes = np.flatnonzero(ep[a:] == close) + a
            if len(closes) < 2:
                continue
            k1 = int(closes[-2])                  # the response channel's <|close|>
            k0 = int(np.flatnonzero(ep[:k1] == sep)[-1]) + 1
            spans.append((int(s0), int(e0), int(a), k0, k1))
        spans.sort(key=lambda t: (t[1] - t[0], t[0]))
        self.spans = spans
        self.lens = np.array([e - s for s, e, *_ in spans])
        # The answers' key token sequences grouped by length, for --fresh-keys.
        self.keys_by_len = {}
        for s0, _, _, k0, k1 in spans:
            self.keys_by_len.setdefault(k1 - k0, []).append(self.ids[s0 + k0:s0 + k1])
        self.keys_by_len = {n: np.stack(v) for n, v in self.keys_by_len.items()}

    def with_fresh_key(self, i, rs):
        """Episode i with every occurrence of its key's token sequence (the needle's two, the
        think channel's, the answer) replaced by another episode's key of the same token count:
        the same text shape with a key drawn anew, so that 4000 episodes cannot be learnt by
        heart and only copying lowers the loss on the key."""
        s0, e0, _, k0, k1 = self.spans[i]
        ep = self.ids[s0:e0].copy()
        key = ep[k0:k1].copy()
        pool = self.keys_by_len[len(key)]
        new = pool[rs.randint(0, len(pool))]
        hits = [j for j in np.flatnonzero(ep[:len(ep) - len(key) + 1] == key[0])
                if np.array_equal(ep[j:j + len(key)], key)]
        for j in hits:
            ep[j:j + len(key)] = new
        return ep


def retrieval_window(eps, train_ids, rs, T, fresh_keys=False):
    """One row of T+1 tokens: random whole episodes while one fits, then ordinary text; and a
    mask per token: 2 on the answer's key tokens, 1 on the rest of the assistant turns, 0
    elsewhere. fresh_keys: each episode's key drawn anew (Episodes.with_fresh_key)."""
    row, mask = [], []
    room = T + 1
    while room >= 64:
        n_fit = int(np.searchsorted(eps.lens, room, side="right"))
        if n_fit == 0:
            break
        i = rs.randint(0, n_fit)
        s0, e0, a, k0, k1 = eps.spans[i]
        row.append(eps.with_fresh_key(i, rs) if fresh_keys else eps.ids[s0:e0])
        m = np.zeros(e0 - s0, dtype=np.float32)
        m[a:] = 1.0
        m[k0:k1] = 2.0
        mask.append(m)
        room -= e0 - s0
    if room > 0:
        s = rs.randint(0, len(train_ids) - room - 1)
        row.append(train_ids[s:s + room])
        mask.append(np.zeros(room, dtype=np.float32))
    return np.concatenate(row).astype(np.int64), np.concatenate(mask)


def retrieval_accuracy(m, eps, max_len, n):
    """Teacher-forced retrieval on held-out episodes no longer than max_len: the fraction whose
    key tokens are all the argmax."""
    fit = [i for i in range(len(eps.spans)) if eps.lens[i] <= max_len]
    idx = sorted({fit[int(j)] for j in np.linspace(0, len(fit) - 1, min(n, len(fit)))}) if fit else []
    ok = 0
    m.eval()
    with torch.no_grad():
        for i in idx:
            s0, e0, _, k0, k1 = eps.spans[i]
            x = torch.from_numpy(eps.ids[s0:s0 + k1].astype(np.int64))[None]
            pred = m(x[:, :-1])[0, k0 - 1:k1 - 1].argmax(-1)
            ok += bool(torch.equal(pred, x[0, k0:k1]))
    m.train()
    return ok / max(1, len(idx)), len(idx)


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
    ap.add_argument("--init-gguf", help="start from this exported model (the retrieval stage) instead of a fresh init")
    ap.add_argument("--retrieval-every", type=int, default=0,
                    help="every N-th step is a batch of packed pass-key episodes (0 = never)")
    ap.add_argument("--retrieval-shapes", default="4x1024,1x4096,1x8192",
                    help="rows x tokens of the retrieval batches, used in turn")
    ap.add_argument("--answer-weight", type=float, default=5.0,
                    help="loss weight of the assistant turns of retrieval episodes")
    ap.add_argument("--key-weight", type=float, default=50.0,
                    help="loss weight of the key tokens of their answers")
    ap.add_argument("--fresh-keys", action="store_true",
                    help="draw each retrieval episode's key anew every time it is used (no learning keys by heart)")
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
    if a.init_gguf:
        src = k3_gguf.load_gguf(a.init_gguf, dtype=torch.float32)
        with torch.no_grad():
            for name in m.names():
                m.w(name).copy_(src.w(name))
            for il in range(cfg.n_dense, cfg.n_layer):
                m.bias(il).copy_(src.bias(il))
        print(f"initialised from {a.init_gguf}", flush=True)
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
    shapes = [tuple(int(v) for v in sh.split("x")) for sh in a.retrieval_shapes.split(",")]
    if a.retrieval_every:
        markers = json.load(open(os.path.join(a.data, "tokens.json")))
        r_train = Episodes(a.data, "retrieval", markers)
        r_held = Episodes(a.data, "retrieval_heldout", markers)
        print(f"retrieval: {len(r_train.spans)} episodes, {len(r_held.spans)} held out", flush=True)
    log = open(os.path.join(a.out, "log.jsonl"), "a")
    evlog = open(os.path.join(a.out, "eval.jsonl"), "a")
    t_start = time.time()
    while step < a.steps:
        t0 = time.time()
        is_retrieval = a.retrieval_every > 0 and step % a.retrieval_every == a.retrieval_every - 1
        is_long = not is_retrieval and a.long_every > 0 and step % a.long_every == a.long_every - 1
        weight = None
        if is_retrieval:
            rows, T = shapes[(step // a.retrieval_every) % len(shapes)]
            pairs = [retrieval_window(r_train, batches.ids, batches.rs, T, a.fresh_keys) for _ in range(rows)]
            w = torch.from_numpy(np.stack([p[0] for p in pairs]))
            mask = torch.from_numpy(np.stack([p[1] for p in pairs]))[:, 1:]
            weight = torch.ones_like(mask)
            weight[mask == 1] = a.answer_weight
            weight[mask == 2] = a.key_weight
        else:
            w = torch.from_numpy(batches.long(a.long_ctx) if is_long else batches.short(a.batch, a.ctx))
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a)
        logits = m(w[:, :-1], collect_routing=True)
        if weight is None:
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1))
        else:
            ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1), reduction="none")
            loss = (ce * weight.reshape(-1)).sum() / weight.sum()
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
        if is_retrieval:
            rec["retrieval"] = True
        log.write(json.dumps(rec) + "\n")
        log.flush()
        if step % 10 == 0 or step == 1:
            print(f"step {step:5d} loss {loss.item():.4f} lr {rec['lr']:.2e} {rec['tok_s']:.0f} tok/s"
                  f"{' long' if is_long else ''}{' retrieval' if is_retrieval else ''}", flush=True)
        if step % a.eval_every == 0 or step == a.steps:
            ev = evaluate(m, held)
            rec = {"step": step, "heldout_loss": round(ev, 5), "ppl": round(math.exp(ev), 3)}
            msg = f"  held-out loss {ev:.4f} ppl {math.exp(ev):.2f}"
            if a.retrieval_every:
                acc, n = retrieval_accuracy(m, r_held, 2048, 24)
                rec["retrieval"] = round(acc, 4)
                msg += f"; held-out retrieval (<= 2048 tokens) {acc * 100:.0f} % of {n}"
            evlog.write(json.dumps(rec) + "\n")
            evlog.flush()
            print(msg, flush=True)
        stop = a.max_minutes > 0 and (time.time() - t_start) / 60 >= a.max_minutes
        if step % a.ckpt_every == 0 or step == a.steps or stop:
            save_ckpt(ck, m, opt, step, batches, gen, a)
        if stop:
            print(f"stopping at step {step} (--max-minutes); rerun the same command to resume", flush=True)
            break


if __name__ == "__main__":
    main()
