"""Float64 evaluation of a Kimi-K3 vision tower (MoonViT-3d image path + patch-merger projector).

The exact evaluation the vision golden test measures llama.cpp's mtmd and `k3 embed-image`
against (docs/vision.md): the preprocessing as the reference defines it (its resize works in
float32 and truncates to 8 bits, so that part is reproduced in float32 step by step), then
every operation of the tower in float64 on the file's weights:

    patches (conv p×p, stride p) [+ bias] + the learned position grid, bilinearly resized
    (half-pixel centres, edges clamped) to the image's patch grid
    × layers: x += Wo·attn(rope2d(Wqkv·rms(x)·ln1)); x += Wdown·gelu_tanh(Wup·rms(x)·ln2)
    [rms(x)·post_ln], 2×2 (m×m) patch merge (pixel unshuffle, zero padded),
    rms(W2·gelu_tanh(W1·merged))·post_norm

RoPE 2D: each head's first half turns with the patch column, the second half with the row;
within a half, adjacent pairs (2i, 2i+1) turn by pos·θ^(−2i/(d/2)), θ = 10000.

    /usr/bin/python3 train/vision_ref64.py MMPROJ.gguf IMAGE.png OUT.f32
"""
from __future__ import annotations

import math
import os
import struct
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_io as g  # noqa: E402

F = np.float32


def read_png_rgb8(path: str) -> np.ndarray:
    """The PNGs train/vision_synth.py writes: 8-bit RGB, filter 0 on every row."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color == 2, "8-bit RGB only"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(h, 1 + 3 * w)
    assert (raw[:, 0] == 0).all(), "filter 0 only"
    return raw[:, 1:].reshape(h, w, 3).copy()


def target_size(w: int, h: int, align: int, min_px: int, max_px: int) -> tuple[int, int]:
    """The reference's aspect-preserving size (aligned to patch·merge), in its float32 steps."""
    def rnd(x):
        return int(np.round(F(x) / F(align))) * align

    def ceil(x):
        return int(np.ceil(F(x) / F(align))) * align

    def floor(x):
        return int(np.floor(F(x) / F(align))) * align

    wb, hb = max(align, rnd(F(w))), max(align, rnd(F(h)))
    if max_px > 0 and hb * wb > max_px:
        beta = np.sqrt(F(F(h) * F(w)) / F(max_px), dtype=F)
        hb, wb = max(align, floor(F(h) / beta)), max(align, floor(F(w) / beta))
    elif min_px > 0 and hb * wb < min_px:
        beta = np.sqrt(F(min_px) / F(F(h) * F(w)), dtype=F)
        hb, wb = ceil(F(h) * beta), ceil(F(w) * beta)
    return wb, hb


def resize_bilinear(src: np.ndarray, tw: int, th: int) -> np.ndarray:
    """Corner-aligned bilinear, float32 arithmetic, truncated to uint8 (the reference's)."""
    sh, sw, _ = src.shape
    xr = F(sw - 1) / F(tw - 1) if tw > 1 else F(0)
    yr = F(sh - 1) / F(th - 1) if th > 1 else F(0)
    out = np.zeros((th, tw, 3), dtype=np.uint8)
    s = src.astype(F)
    for y in range(th):
        py = F(y) * yr
        y0 = min(int(py), sh - 1)
        y1 = min(y0 + 1, sh - 1)
        yf = F(py - F(y0))
        for x in range(tw):
            px = F(x) * xr
            x0 = min(int(px), sw - 1)
            x1 = min(x0 + 1, sw - 1)
            xf = F(px - F(x0))
            top = s[y0, x0] + (s[y0, x1] - s[y0, x0]) * xf
            bot = s[y1, x0] + (s[y1, x1] - s[y1, x0]) * xf
            out[y, x] = (top + (bot - top) * yf).astype(F).astype(np.uint8)
    return out


def preprocess(img: np.ndarray, align: int, min_px: int, max_px: int) -> np.ndarray:
    """Resize into the target box keeping the aspect ratio (ceil), pad black, centre."""
    sh, sw, _ = img.shape
    tw, th = target_size(sw, sh, align, min_px, max_px)
    if (tw, th) == (sw, sh):
        return img
    scale = min(F(tw) / F(sw), F(th) / F(sh))
    nw = min(int(np.ceil(F(sw) * scale)), tw)
    nh = min(int(np.ceil(F(sh) * scale)), th)
    canvas = np.zeros((th, tw, 3), dtype=np.uint8)
    ox, oy = (tw - nw) // 2, (th - nh) // 2
    canvas[oy:oy + nh, ox:ox + nw] = resize_bilinear(img, nw, nh)
    return canvas


def rms(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def resize_grid(pos: np.ndarray, gh: int, gw: int) -> np.ndarray:
    """Bilinear, half-pixel centres, clamped at the edges: (oh, ow, n) → (gh, gw, n)."""
    oh, ow, _ = pos.shape
    if (oh, ow) == (gh, gw):
        return pos

    def taps(n_out, n_in):
        c = (np.arange(n_out) + 0.5) * n_in / n_out - 0.5
        i0 = np.clip(np.floor(c).astype(int), 0, n_in - 1)
        i1 = np.clip(i0 + 1, 0, n_in - 1)
        return i0, i1, np.clip(c - i0, 0.0, 1.0)

    y0, y1, dy = taps(gh, oh)
    x0, x1, dx = taps(gw, ow)
    dy, dx = dy[:, None, None], dx[None, :, None]
    return (pos[y0][:, x0] * (1 - dx) * (1 - dy) + pos[y0][:, x1] * dx * (1 - dy)
            + pos[y1][:, x0] * (1 - dx) * dy + pos[y1][:, x1] * dx * dy)


def rope2d(x: np.ndarray, pos_w: np.ndarray, pos_h: np.ndarray) -> np.ndarray:
    """x: (n_pos, heads, d). First half by column, second half by row; pairs (2i, 2i+1)."""
    d = x.shape[-1]
    half = d // 2
    inv = 10000.0 ** (-np.arange(0, half, 2) / half)
    out = x.copy()
    for lo, p in ((0, pos_w), (half, pos_h)):
        ang = p[:, None].astype(np.float64) * inv[None, :]
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        a, b = x[..., lo:lo + half:2], x[..., lo + 1:lo + half:2]
        out[..., lo:lo + half:2] = a * c - b * s
        out[..., lo + 1:lo + half:2] = a * s + b * c
    return out


def embed(mmproj: str, image: np.ndarray) -> np.ndarray:
    f = g.read_gguf(mmproj)
    kv = f.kv

    def t(name):
        return f.tensor(name).astype(np.float64) if name in f.tensors else None

    P = kv["clip.vision.patch_size"]
    n = kv["clip.vision.embedding_length"]
    heads = kv["clip.vision.attention.head_count"]
    hd = kv["clip.vision.attention.head_dim"]
    eps = kv["clip.vision.attention.layer_norm_epsilon"]
    m = kv["clip.vision.projector.scale_factor"]
    mean, std = np.array(kv["clip.vision.image_mean"]), np.array(kv["clip.vision.image_std"])
    img = preprocess(image, P * m, kv["clip.vision.image_min_pixels"], kv["clip.vision.image_max_pixels"])
    H, W, _ = img.shape
    gh, gw = H // P, W // P
    px = (img.astype(np.float64) / 255.0 - mean) / std  # (H, W, 3)
    patches = px.reshape(gh, P, gw, P, 3).transpose(0, 2, 4, 1, 3).reshape(gh * gw, 3 * P * P)
    x = patches @ t("v.patch_embd.weight").reshape(n, -1).T
    if t("v.patch_embd.bias") is not None:
        x += t("v.patch_embd.bias")
    x += resize_grid(t("v.position_embd.weight"), gh, gw).reshape(gh * gw, n)
    pos_h, pos_w = np.divmod(np.arange(gh * gw), gw)
    D = heads * hd
    for il in range(kv["clip.vision.block_count"]):
        p = f"v.blk.{il}."
        qkv = rms(x, t(p + "ln1.weight"), eps) @ t(p + "attn_qkv.weight").T
        q = rope2d(qkv[:, :D].reshape(-1, heads, hd), pos_w, pos_h)
        k = rope2d(qkv[:, D:2 * D].reshape(-1, heads, hd), pos_w, pos_h)
        v = qkv[:, 2 * D:].reshape(-1, heads, hd)
        s = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(hd)
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s /= s.sum(axis=-1, keepdims=True)
        o = np.einsum("hqk,khd->qhd", s, v).reshape(-1, D)
        x = x + o @ t(p + "attn_out.weight").T
        hmid = gelu_tanh(rms(x, t(p + "ln2.weight"), eps) @ t(p + "ffn_up.weight").T)
        x = x + hmid @ t(p + "ffn_down.weight").T
    if t("v.post_ln.weight") is not None:
        x = rms(x, t("v.post_ln.weight"), eps)
    GH, GW = -(-gh // m), -(-gw // m)
    grid = np.zeros((GH * m, GW * m, n))
    grid[:gh, :gw] = x.reshape(gh, gw, n)
    merged = grid.reshape(GH, m, GW, m, n).transpose(0, 2, 1, 3, 4).reshape(GH * GW, m * m * n)
    y = gelu_tanh(merged @ t("mm.1.weight").T) @ t("mm.2.weight").T
    return rms(y, t("mm.post_norm.weight"), eps)


def main(mmproj: str, image_path: str, out: str) -> None:
    e = embed(mmproj, read_png_rgb8(image_path))
    e.astype(np.float32).tofile(out)
    print(f"tokens {e.shape[0]} n_embd {e.shape[1]}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
