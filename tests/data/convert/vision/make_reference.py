#!/usr/bin/env python3
"""Makes this folder's reference data: runs llama.cpp's converter (`convert_hf_to_gguf.py --mmproj`,
branch kimi-k3-vision-only, outside this repository) on the synthetic Kimi-K3 vision checkpoint
that tests/tools/convert/hf_vision_fixture.cpp writes, for each --outtype, and records of each
mmproj file its metadata bytes (`mmproj-OUTTYPE.head`: everything before the tensor data) and
SHA-256 digests (`mmproj-OUTTYPE.sha256`: the whole file under its default name, then each tensor).
The full files are ~0.2-0.8 MB each; these records are what the byte-for-byte test needs.

Usage (tests/data/README.md has the exact run):
  make_reference.py LLAMA_DIR CHECKPOINT_DIR OUT_DIR

LLAMA_DIR is the reference checkout; CHECKPOINT_DIR the checkpoint (its folder name is part of the
metadata: Kimi-K3-Vision-Synth-v0.1); OUT_DIR receives the records. Needs Debian's python3-torch,
python3-numpy, python3-tqdm and python3-yaml, and a `transformers` module on PYTHONPATH whose
AutoConfig.from_pretrained raises (the converter then reads config.json, as it does for any
architecture transformers does not know).

The converter is run through three shims, each filling a gap that is not the converter's logic:
  * torch.float8_e4m3fn / float8_e5m2 get placeholder names where Debian's torch (1.13) lacks
    them (only used to map FP8 checkpoints, which this one is not);
  * conversion.MMPROJ_MODEL_MAP gets "KimiK3ForConditionalGeneration" -> "kimivl": the branch
    registers KimiK3VisionModel in kimivl.py but leaves it out of the lazy-import map, so
    `--mmproj` on a K3 checkpoint otherwise stops at "not supported";
  * the tensor map gets "mm_projector.post_norm" -> mm.post_norm, the projector's RMSNorm after
    the projection that the kimik3 runtime loads (clip.cpp: TN_MM_POST_NORM) but the branch's
    tensor_mapping.py does not name.
"""
import hashlib
import os
import runpy
import shutil
import subprocess
import sys
import tempfile

OUTTYPES = ["f32", "f16", "bf16", "q8_0"]


def run_converter(llama_dir, argv):
    import torch
    for name in ("float8_e4m3fn", "float8_e5m2"):
        if not hasattr(torch, name):
            setattr(torch, name, "unavailable:" + name)
    sys.path[:0] = [llama_dir, os.path.join(llama_dir, "gguf-py")]
    import gguf
    import conversion
    conversion.MMPROJ_MODEL_MAP.setdefault("KimiK3ForConditionalGeneration", "kimivl")
    cfg = gguf.TensorNameMap.block_mappings_cfg
    cfg[gguf.MODEL_TENSOR.V_MM_POST_NORM] = tuple(cfg[gguf.MODEL_TENSOR.V_MM_POST_NORM]) + ("mm_projector.post_norm",)
    sys.argv = ["convert_hf_to_gguf.py"] + argv
    runpy.run_path(os.path.join(llama_dir, "convert_hf_to_gguf.py"), run_name="__main__")


def record(llama_dir, path, out_dir, outtype):
    sys.path[:0] = [os.path.join(llama_dir, "gguf-py")]
    from gguf import GGUFReader
    data = open(path, "rb").read()
    reader = GGUFReader(path)
    upper = outtype.upper()
    with open(os.path.join(out_dir, f"mmproj-{upper}.head"), "wb") as f:
        f.write(data[: reader.data_offset])
    lines = [f"{hashlib.sha256(data).hexdigest()}  {os.path.basename(path)}"]
    for t in reader.tensors:
        chunk = data[t.data_offset : t.data_offset + t.n_bytes]
        lines.append(f"{hashlib.sha256(chunk).hexdigest()}  tensor:{t.name}")
    with open(os.path.join(out_dir, f"mmproj-{upper}.sha256"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--run":
        run_converter(sys.argv[2], sys.argv[3:])
        return
    llama_dir, checkpoint, out_dir = (os.path.abspath(a) for a in sys.argv[1:4])
    name = os.path.basename(checkpoint.rstrip("/"))
    for outtype in OUTTYPES:
        with tempfile.TemporaryDirectory() as tmp:
            work = os.path.join(tmp, name)
            shutil.copytree(checkpoint, work)
            # No --outfile: the converter names the file itself, inside the checkpoint folder.
            subprocess.run([sys.executable, os.path.abspath(__file__), "--run", llama_dir, work, "--mmproj",
                            "--outtype", outtype], check=True, cwd=tmp)
            made = [f for f in os.listdir(work) if f.startswith("mmproj-") and f.endswith(".gguf")]
            assert len(made) == 1, made
            record(llama_dir, os.path.join(work, made[0]), out_dir, outtype)
            print(f"{outtype}: {made[0]}")


if __name__ == "__main__":
    main()
