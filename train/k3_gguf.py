"""Kimi-K3 GGUF <-> PyTorch model: load a kimi-k3 GGUF into k3_model.K3, export a trained K3
(with its tokenizer and the K3 chat template) as a GGUF that k3 and llama.cpp's kimi-k3 loader
accept. The keys and tensor names are the ones listed in docs/MODEL.md ("GGUF keys" and
"Tensors"); the dtype rule is the reference converter's: 1-D tensors, every *_norm.weight,
ffn_gate_inp, the conv weights and every tensor not ending in ".weight" are F32, the other
matrices F16 (or F32 with --outtype f32).
"""
from __future__ import annotations

import json
import os

import numpy as np
import torch

import gguf_io as G
from k3_model import K3, K3Config

ARCH = "kimi-k3"

# Offsets from the first control id of the named K3 control tokens (the K3 tokenizer's table,
# the same layout k3's synthetic vocabularies use); unnamed slots are reserved.
CONTROL_NAMES = {0: "[BOS]", 1: "[EOS]", 2: "<|end_of_msg|>", 3: "<|open|>", 4: "<|close|>",
                 5: "<|sep|>", 6: "[start_header_id]", 7: "[end_header_id]", 9: "[EOT]",
                 18: "<|media_begin|>", 19: "<|media_content|>", 20: "<|media_end|>",
                 21: "<|media_pad|>", 254: "[UNK]", 255: "[PAD]"}


def _scalar0(v):
    return v[0] if isinstance(v, list) else v


def config_from_gguf(g: G.GGUFFile) -> K3Config:
    kv = g.kv
    if kv.get("general.architecture") != ARCH:
        raise ValueError(f"not a {ARCH} model: {kv.get('general.architecture')}")
    a = lambda k, d=None: kv.get(f"{ARCH}.{k}", d)
    n_layer = int(a("block_count"))
    hkv = a("attention.head_count_kv")
    if not isinstance(hkv, list):
        hkv = [hkv] * n_layer
    n_rot = int(a("rope.dimension_count"))
    has = lambda name: name in g.tensors
    mla = [il for il in range(n_layer) if hkv[il] != 0]
    n_dense = int(a("leading_dense_block_count", 0))
    first_moe = next((il for il in range(n_dense, n_layer)), None)
    n_ff_exp = int(a("expert_feed_forward_length", 0))
    n_shared = 0
    if first_moe is not None and has(f"blk.{first_moe}.ffn_gate_shexp.weight"):
        n_shared = g.tensors[f"blk.{first_moe}.ffn_gate_shexp.weight"].ne[1] // n_ff_exp
    lb = a("kda.gate_lower_bound")
    if int(a("expert_gating_func", 2)) != 2 and first_moe is not None:
        raise ValueError("only the sigmoid router (expert_gating_func = 2) is implemented")
    return K3Config(
        n_vocab=g.tensors["token_embd.weight"].ne[1],
        n_ctx_train=int(a("context_length")),
        n_embd=int(a("embedding_length")),
        n_layer=n_layer,
        n_head=int(_scalar0(a("attention.head_count"))),
        mla_layers=mla,
        kda_head_dim=int(a("kda.head_dim")),
        conv_kernel=int(a("ssm.conv_kernel")),
        gate_lower_bound=None if lb is None else float(lb),
        q_lora_rank=int(a("attention.q_lora_rank", 0)) if any(has(f"blk.{il}.attn_q_a_norm.weight") for il in mla) else 0,
        kv_lora_rank=int(a("attention.kv_lora_rank")),
        n_rot=n_rot,
        qk_nope=int(a("attention.key_length_mla")) - n_rot,
        v_head_dim=int(a("attention.value_length_mla")),
        n_ff=int(_scalar0(a("feed_forward_length", 0))),
        n_dense=n_dense,
        n_expert=int(a("expert_count", 0)),
        n_expert_used=int(a("expert_used_count", 0)),
        n_ff_exp=n_ff_exp,
        n_expert_shared=n_shared,
        n_latent=int(a("expert_latent_length", 0)),
        routed_norm=first_moe is not None and has(f"blk.{first_moe}.ffn_routed_norm.weight"),
        weights_norm=bool(a("expert_weights_norm", False)),
        weights_scale=float(a("expert_weights_scale", 0.0)),
        attn_res_block=int(a("attn_res.block_size")),
        situ_beta=float(a("activation.situ_beta")),
        situ_lambda=float(a("activation.situ_linear_beta")),
        rms_eps=float(a("attention.layer_norm_rms_epsilon")),
    )


def load_gguf(path: str, dtype=torch.float64, tensor=None) -> K3:
    """Loads a kimi-k3 GGUF. Tensors K3 ignores (*.scale, KDA q/k/v biases) are skipped;
    single-head tensors whose trailing 1-dims were dropped are reshaped by size. `tensor(g,
    name)` returns a tensor's values (default: F32/F16 read directly; ref_logits.py passes a
    reader that dequantizes other types)."""
    g = G.read_gguf(path)
    get = tensor or (lambda gg, name: np.array(gg.tensor(name), dtype=np.float64))
    cfg = config_from_gguf(g)
    m = K3(cfg, dtype=dtype)
    with torch.no_grad():
        for name, shape in m.shapes.items():
            if name not in g.tensors:
                raise ValueError(f"{path}: missing tensor {name}")
            a = np.asarray(get(g, name), dtype=np.float64)
            if a.size != int(np.prod(shape)):
                raise ValueError(f"{path}: {name} has {a.size} values, expected shape {shape}")
            m.w(name).copy_(torch.from_numpy(a.reshape(shape)))
        for il in range(cfg.n_dense, cfg.n_layer):
            m.bias(il).copy_(torch.from_numpy(np.asarray(get(g, f"blk.{il}.exp_probs_b.bias"), dtype=np.float64)))
    return m


def byte_spelling():
    """GPT-2's byte -> printable character map (printable Latin-1 bytes spell themselves,
    the others take U+0100 + n in byte order)."""
    printable = lambda c: 0x21 <= c <= 0x7E or 0xA1 <= c <= 0xAC or 0xAE <= c <= 0xFF
    out, n = {}, 0
    for b in range(256):
        if printable(b):
            out[b] = chr(b)
        else:
            out[b] = chr(0x100 + n)
            n += 1
    return out


def tokenizer_kv(vocab: dict, chat_template: str) -> dict:
    """tokenizer.ggml.* keys of a K3 byte-level BPE vocabulary (vocab.json of bpe.py):
    BPE tokens in rank order, then the 256 control tokens, eos = <|end_of_msg|>."""
    spell = byte_spelling()
    normal = [bytes.fromhex(h) for h in vocab["tokens"]]
    n_control = int(vocab["n_control"])
    first = len(normal)
    toks = ["".join(spell[b] for b in t) for t in normal]
    types = [1] * first
    for off in range(n_control):
        toks.append(CONTROL_NAMES.get(off, f"<|reserved_token_{first + off}|>"))
        types.append(3)
    merges = [f"{toks[a]} {toks[b]}" for a, b in vocab["merges"]]
    return {
        "tokenizer.ggml.model": G.string("gpt2"),
        "tokenizer.ggml.pre": G.string("kimi-k2"),
        "tokenizer.ggml.tokens": G.arr(G.T_STRING, toks),
        "tokenizer.ggml.token_type": G.arr(G.T_I32, types),
        "tokenizer.ggml.merges": G.arr(G.T_STRING, merges),
        "tokenizer.ggml.bos_token_id": G.u32(first + 0),
        "tokenizer.ggml.eos_token_id": G.u32(first + 2),
        "tokenizer.ggml.eot_token_id": G.u32(first + 9),
        "tokenizer.ggml.unknown_token_id": G.u32(first + n_control - 2),
        "tokenizer.ggml.padding_token_id": G.u32(first + n_control - 1),
        "tokenizer.ggml.add_bos_token": G.boolean(False),
        "tokenizer.ggml.add_eos_token": G.boolean(False),
        "tokenizer.chat_template": G.string(chat_template),
    }


def write_vocab_gguf(path: str, vocab: dict, chat_template: str) -> None:
    """A vocabulary-only GGUF (for `k3 tokenize` before any model exists)."""
    kv = {"general.architecture": G.string(ARCH), "general.name": G.string("k3-tiny vocabulary")}
    kv.update(tokenizer_kv(vocab, chat_template))
    G.write_gguf(path, kv, [])


def model_kv(cfg: K3Config, name: str, file_type: int) -> dict:
    a = lambda k: f"{ARCH}.{k}"
    kv = {
        "general.architecture": G.string(ARCH),
        "general.name": G.string(name),
        "general.file_type": G.u32(file_type),
        a("context_length"): G.u32(cfg.n_ctx_train),
        a("embedding_length"): G.u32(cfg.n_embd),
        a("block_count"): G.u32(cfg.n_layer),
        a("feed_forward_length"): G.u32(cfg.n_ff),
        a("attention.head_count"): G.u32(cfg.n_head),
        a("attention.head_count_kv"): G.arr(G.T_I32, [1 if cfg.is_mla(il) else 0 for il in range(cfg.n_layer)]),
        a("attention.key_length"): G.u32(cfg.kv_lora_rank + cfg.n_rot),
        a("attention.value_length"): G.u32(cfg.kv_lora_rank),
        a("rope.dimension_count"): G.u32(cfg.n_rot),
        a("attention.layer_norm_rms_epsilon"): G.f32(cfg.rms_eps),
        a("attention.key_length_mla"): G.u32(cfg.qk_nope + cfg.n_rot),
        a("attention.value_length_mla"): G.u32(cfg.v_head_dim),
        a("attention.q_lora_rank"): G.u32(cfg.q_lora_rank),
        a("attention.kv_lora_rank"): G.u32(cfg.kv_lora_rank),
        a("ssm.conv_kernel"): G.u32(cfg.conv_kernel),
        a("kda.head_dim"): G.u32(cfg.kda_head_dim),
        a("expert_count"): G.u32(cfg.n_expert),
        a("expert_used_count"): G.u32(cfg.n_expert_used),
        a("expert_feed_forward_length"): G.u32(cfg.n_ff_exp),
        a("expert_shared_count"): G.u32(cfg.n_expert_shared),
        a("leading_dense_block_count"): G.u32(cfg.n_dense),
        a("expert_weights_scale"): G.f32(cfg.weights_scale),
        a("expert_weights_norm"): G.boolean(cfg.weights_norm),
        a("expert_gating_func"): G.u32(2),
        a("expert_latent_length"): G.u32(cfg.n_latent),
        a("attn_res.block_size"): G.u32(cfg.attn_res_block),
        a("activation.situ_beta"): G.f32(cfg.situ_beta),
        a("activation.situ_linear_beta"): G.f32(cfg.situ_lambda),
        a("vocab_size"): G.u32(cfg.n_vocab),
    }
    if cfg.gate_lower_bound is not None:
        kv[a("kda.gate_lower_bound")] = G.f32(cfg.gate_lower_bound)
    return kv


def _stays_f32(name: str, ndim: int) -> bool:
    return (ndim == 1 or name.endswith("_norm.weight") or "ffn_gate_inp" in name
            or "ssm_conv1d" in name or not name.endswith(".weight"))


def export_gguf(m: K3, path: str, vocab: dict, chat_template: str, name="k3-tiny", outtype="f16",
                extra_kv: dict | None = None) -> None:
    cfg = m.cfg
    kv = model_kv(cfg, name, 1 if outtype == "f16" else 0)
    kv.update(tokenizer_kv(vocab, chat_template))
    if extra_kv:
        kv.update(extra_kv)
    tensors = []
    K = cfg.conv_kernel
    with torch.no_grad():
        for tname in m.names():
            t = m.w(tname).detach().to(torch.float32).cpu().numpy()
            if "ssm_conv1d" in tname:
                t = t.reshape(1, t.shape[0], 1, K)       # ne [K, 1, Di, 1], as the converter writes
            f32 = _stays_f32(tname, t.ndim)
            tensors.append((tname, t.astype(np.float32 if (f32 or outtype == "f32") else np.float16)))
            if tname.endswith("ffn_gate_inp.weight"):
                il = int(tname.split(".")[1])
                tensors.append((f"blk.{il}.exp_probs_b.bias", m.bias(il).detach().to(torch.float32).cpu().numpy()))
    G.write_gguf(path, kv, tensors)
