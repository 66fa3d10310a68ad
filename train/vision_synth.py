"""Synthetic Kimi-K3 vision towers (MoonViT-3d, image path) and test images, seeded.

Writes small `kimik3` mmproj GGUFs of different shapes (patch size, position grid, heads, head
width, merge factor, optional tensors, F32 and F16) with random weights, and PNG images of
several sizes and aspect ratios. They are the inputs of the vision golden test: llama.cpp's
mtmd embeds every image with every tower (the reference), `train/vision_ref64.py` does the same
in float64 (the exact evaluation), and `k3 embed-image` must match both (docs/vision.md).

    /usr/bin/python3 train/vision_synth.py OUT_DIR

The same seed gives the same files byte for byte (numpy's PCG64, zlib level 9).
"""
from __future__ import annotations

import os
import struct
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_io as g  # noqa: E402

# CLIP's published normalisation: distinct per channel, so a swapped channel shows.
IMAGE_MEAN = [0.48145466, 0.4578275, 0.40821073]
IMAGE_STD = [0.26862954, 0.26130258, 0.27577711]

# name: patch, n_embd, heads, head_dim, layers, ff, pos grid (h, w), merge, proj hidden,
#       max patches (the image_max_pixels limit in patches), extras, dtype of matrices
TOWERS = {
    "vt-a": dict(patch=14, n_embd=64, heads=4, head_dim=24, layers=2, ff=128, grid=(8, 8), merge=2,
                 hidden=64, max_patches=64, post_ln=False, patch_bias=False, dtype="f32"),
    "vt-b": dict(patch=16, n_embd=48, heads=2, head_dim=32, layers=3, ff=96, grid=(6, 10), merge=3,
                 hidden=96, max_patches=90, post_ln=True, patch_bias=True, dtype="f32"),
    "vt-b-f16": dict(same_as="vt-b", dtype="f16"),
    "vt-c": dict(patch=14, n_embd=96, heads=6, head_dim=16, layers=2, ff=192, grid=(4, 4), merge=2,
                 hidden=96, max_patches=48, post_ln=True, patch_bias=False, dtype="f32"),
}
TEXT_EMBD = 256  # k3-tiny's embedding length: the towers project into its token space

# name: width, height (odd sizes and aspect ratios: some need no resize, some are scaled up
# to the minimum or down to the maximum pixel count)
IMAGES = {"sq56": (56, 56), "wide100x60": (100, 60), "tall37x91": (37, 91), "big300x200": (300, 200),
          "sq96": (96, 96), "thin200x30": (200, 30)}


def spec(name: str) -> dict:
    s = dict(TOWERS[name])
    if "same_as" in s:
        base = dict(TOWERS[s.pop("same_as")])
        base.update(s)
        s = base
    return s


def tower_tensors(s: dict, rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    n, P, D, ff, m = s["n_embd"], s["patch"], s["heads"] * s["head_dim"], s["ff"], s["merge"]
    mat = np.float16 if s["dtype"] == "f16" else np.float32

    def w(rows, cols, scale=1.0):
        return (rng.standard_normal((rows, cols)) * scale / np.sqrt(cols)).astype(mat)

    def norm(k):
        return (1.0 + 0.1 * rng.standard_normal(k)).astype(np.float32)

    t = [("v.patch_embd.weight", (rng.standard_normal((n, 3, P, P)) / np.sqrt(3 * P * P)).astype(mat))]
    if s["patch_bias"]:
        t.append(("v.patch_embd.bias", (0.1 * rng.standard_normal(n)).astype(np.float32)))
    gh, gw = s["grid"]
    t.append(("v.position_embd.weight", (0.5 * rng.standard_normal((gh, gw, n))).astype(np.float32)))
    for il in range(s["layers"]):
        p = f"v.blk.{il}."
        t += [(p + "attn_qkv.weight", w(3 * D, n, 2.0)), (p + "attn_out.weight", w(n, D)),
              (p + "ffn_up.weight", w(ff, n, 2.0)), (p + "ffn_down.weight", w(n, ff)),
              (p + "ln1.weight", norm(n)), (p + "ln2.weight", norm(n))]
    if s["post_ln"]:
        t.append(("v.post_ln.weight", norm(n)))
    t += [("mm.1.weight", w(s["hidden"], m * m * n, 2.0)), ("mm.2.weight", w(TEXT_EMBD, s["hidden"])),
          ("mm.post_norm.weight", norm(TEXT_EMBD))]
    return t


def tower_kv(name: str, s: dict) -> dict:
    P = s["patch"]
    return {
        "general.architecture": g.string("clip"),
        "general.name": g.string(f"k3 synthetic vision tower {name}"),
        "general.file_type": g.u32(1 if s["dtype"] == "f16" else 0),
        "clip.has_vision_encoder": g.boolean(True),
        "clip.projector_type": g.string("kimik3"),
        "clip.use_gelu": g.boolean(True),
        "clip.vision.image_size": g.u32(s["grid"][0] * P),
        "clip.vision.patch_size": g.u32(P),
        "clip.vision.embedding_length": g.u32(s["n_embd"]),
        "clip.vision.feed_forward_length": g.u32(s["ff"]),
        "clip.vision.block_count": g.u32(s["layers"]),
        "clip.vision.projection_dim": g.u32(TEXT_EMBD),
        "clip.vision.attention.head_count": g.u32(s["heads"]),
        "clip.vision.attention.head_dim": g.u32(s["head_dim"]),
        "clip.vision.attention.layer_norm_epsilon": g.f32(1e-5),
        "clip.vision.projector.scale_factor": g.u32(s["merge"]),
        "clip.vision.image_min_pixels": g.u32(8 * P * P),
        "clip.vision.image_max_pixels": g.u32(s["max_patches"] * P * P),
        "clip.vision.image_mean": g.arr(g.T_F32, IMAGE_MEAN),
        "clip.vision.image_std": g.arr(g.T_F32, IMAGE_STD),
    }


def write_png(path: str, rgb: np.ndarray) -> None:
    """8-bit RGB, non-interlaced, filter 0 on every row."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\0" + rgb[y].astype(np.uint8).tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(png)
    os.replace(tmp, path)


def make_image(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Smooth colour gradients, a disc and pixel noise: structure at every scale."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 127 + 120 * np.sin(x / (w / 3.1) + 0.3)
    gch = 127 + 120 * np.cos(y / (h / 2.3) - 0.7)
    b = 255 * (x + y) / (w + h)
    img = np.stack([r, gch, b], axis=-1)
    disc = (x - 0.6 * w) ** 2 + (y - 0.4 * h) ** 2 < (0.2 * min(w, h)) ** 2
    img[disc] = [250, 30, 40]
    img += rng.integers(-20, 21, size=img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    for i, name in enumerate(TOWERS):
        s = spec(name)
        rng = np.random.default_rng(1000 + (i if "same_as" not in TOWERS[name] else list(TOWERS).index("vt-b")))
        g.write_gguf(os.path.join(out, f"mmproj-{name}.gguf"), tower_kv(name, s), tower_tensors(s, rng))
    rng = np.random.default_rng(77)
    for name, (w, h) in IMAGES.items():
        write_png(os.path.join(out, f"{name}.png"), make_image(w, h, rng))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
