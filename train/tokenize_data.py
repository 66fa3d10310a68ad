"""Turns the text corpus of make_data.py into token ids for train.py, with k3's own tokenizer.

Writes in --out:
  vocab.gguf             the vocabulary (vocab.json of bpe.py) + the K3 chat template, as a
                         vocabulary-only kimi-k3 GGUF;
  train.u16, heldout.u16, heldout_prose.u16
                         little-endian uint16 token ids, documents separated by [EOS];
  train_long_starts.u32  offsets in train.u16 of documents of >= --long-min tokens (the long
                         passkey episodes), where the long-context batches start;
  retrieval.u16, retrieval_heldout.u16, *_starts.u32
                         the retrieval stage's episodes and where each starts (when
                         make_data.py --retrieval wrote them);
  tokens.json            counts, and the ids of the assistant-turn opener (`assistant_open`)
                         and of <|close|>, <|sep|> (`close`, `sep`), which train.py uses to find answers.
Tokenizing with `k3 tokenize` (not a Python re-implementation) guarantees that training sees
exactly the ids the engine produces at inference; control-token names in the text ([EOS], the
chat markers) become their control ids, as in a raw completion.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k3_gguf  # noqa: E402


def tokenize(k3, vocab_gguf, path):
    out = subprocess.run([k3, "tokenize", "-m", vocab_gguf, "--ids", "-f", path],
                         check=True, capture_output=True, text=True).stdout
    ids = np.array(json.loads(out), dtype=np.int64)
    if ids.size and ids.max() >= 65536:
        raise SystemExit("vocabulary too large for uint16 ids")
    return ids.astype("<u2")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k3", required=True, help="the k3 binary")
    ap.add_argument("--text", required=True, help="directory of make_data.py")
    ap.add_argument("--vocab", required=True, help="vocab.json of bpe.py")
    ap.add_argument("--template", required=True, help="the K3 chat template (Kimi-K3.jinja)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--long-min", type=int, default=1024)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    vocab = json.load(open(a.vocab))
    vg = os.path.join(a.out, "vocab.gguf")
    k3_gguf.write_vocab_gguf(vg, vocab, open(a.template, encoding="utf-8").read())
    eos = len(vocab["tokens"]) + 1
    stats = {}
    for part in ("train", "heldout", "heldout_prose"):
        ids = tokenize(a.k3, vg, os.path.join(a.text, f"{part}.txt"))
        ids.tofile(os.path.join(a.out, f"{part}.u16"))
        n_docs = int((ids == eos).sum())
        stats[part] = {"tokens": int(ids.size), "documents": n_docs,
                       "bytes": os.path.getsize(os.path.join(a.text, f"{part}.txt"))}
        if part == "train":
            ends = np.flatnonzero(ids == eos)
            starts = np.concatenate([[0], ends[:-1] + 1])
            lens = ends - starts + 1
            longs = starts[lens >= a.long_min].astype("<u4")
            longs.tofile(os.path.join(a.out, "train_long_starts.u32"))
            stats[part]["long_documents"] = int(longs.size)
        print(f"{part}: {ids.size} tokens, {n_docs} documents, "
              f"{stats[part]['bytes'] / max(1, ids.size):.2f} bytes/token", flush=True)
    for part in ("retrieval", "retrieval_heldout"):
        src = os.path.join(a.text, f"{part}.txt")
        if not os.path.exists(src):
            continue
        ids = tokenize(a.k3, vg, src)
        ids.tofile(os.path.join(a.out, f"{part}.u16"))
        ends = np.flatnonzero(ids == eos)
        np.concatenate([[0], ends[:-1] + 1]).astype("<u4").tofile(os.path.join(a.out, f"{part}_starts.u32"))
        stats[part] = {"tokens": int(ids.size), "documents": int(ends.size)}
        print(f"{part}: {ids.size} tokens, {ends.size} episodes", flush=True)
    def ids_of(text):
        path = os.path.join(a.out, "marker.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        ids = [int(t) for t in tokenize(a.k3, vg, path)]
        os.remove(path)
        return ids
    stats["assistant_open"] = ids_of('<|open|>message role="assistant"<|sep|>')
    stats["close"], = ids_of("<|close|>")
    stats["sep"], = ids_of("<|sep|>")
    json.dump(stats, open(os.path.join(a.out, "tokens.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
