#!/usr/bin/env python3
"""Deterministic byte-level BPE vocabulary trainer for tiny K3 models (stdlib only).

Usage:
  python3 train/bpe.py --k3 build/bin/k3 --pre-vocab tests/data/text/k3-synth-vocab.gguf \
      --input TRAIN.txt --vocab-size 4096 --n-control 256 --out vocab.json [--check]

Design
------
1. Control-token names ([BOS] [EOS] [EOT] <|open|> <|close|> <|sep|> <|end_of_msg|>, plus
   every `<|...|>` / `[...]` control token of --pre-vocab) are replaced by "\\n" before
   anything else, so they can never become (parts of) BPE merges: at inference they are
   matched as control tokens before the pre-tokenizer runs.
2. Pre-tokenization is the engine's own (`k3 tokenize --split`, the Kimi-K2 pattern), never a
   re-implementation, so training pieces are exactly the pieces the engine will BPE-encode.
   The text is fed in chunks of at most --chunk-bytes, cut only at "safe" positions: after
   a "\\n" and before a printable ASCII non-space byte. No pattern alternative can span such
   a point (the letter rules' optional prefix excludes CR/LF; the punctuation rule's
   trailing [\\r\\n]* and the whitespace rules stop at a non-space), and the whitespace/
   non-whitespace run counter restarts there, so the chunked split equals the split of the
   whole text (checked by test_bpe.py). Chunks stay below Kimi's 400,000-character slice,
   so that slicing never kicks in inside a chunk (a single --split of a whole 30 MB file
   would also cut pieces at every 400,000th character; those few artificial cuts are not
   reproduced). Every chunk is verified: unescape(concat(lines)) == chunk.
3. Training is classic byte-level BPE: ids 0..255 are the bytes, merge i creates id 256+i
   with the concatenated bytes. The most frequent adjacent pair (weighted by piece
   frequency) merges next; ties go to the smallest (bytes_a + bytes_b, bytes_a), a total
   order over pairs, so the result never depends on dict/set iteration order. The
   implementation is incremental: pair -> count, pair -> set of word indices, and a max-heap
   of (count, key) entries with lazy invalidation. Counts of pairs that do not contain the
   newest token can only fall, so a heap entry is always an upper bound; a popped entry
   whose count is stale is re-pushed with its current count, and only pairs containing the
   new token get fresh entries.
4. Invariant needed because the engine encodes with tiktoken rank BPE (rank = id) while
   llama.cpp uses the merge list: every merged token is the concatenation of the two
   lower-id tokens of its merge, and all token byte strings are distinct. A pair whose
   concatenation already is a token (reachable by another split) is dropped rather than
   creating a duplicate; the count of dropped pairs is reported (normally 0). --check
   encodes every training piece with both algorithms and reports any disagreement.
5. Output: vocab.json {"tokens": [hex of id 0..], "merges": [[l, r], ...], "n_control",
   "source": {...}} written atomically (temp file + rename). Nothing run-dependent (time,
   paths of temp files) goes into it, so two runs on the same input are byte-identical.
"""

import argparse
import collections
import hashlib
import heapq
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time

DEFAULT_CONTROL = ["[BOS]", "[EOS]", "[EOT]", "[PAD]", "[UNK]", "<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"]

# Kimi slices text into 400,000-character pieces before splitting; chunks must stay below
# that (bytes >= characters, so a byte bound suffices).
KIMI_SLICE_CHARS = 400000


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------
# GGUF: just enough to read the control-token names of the pre-tokenizer vocabulary.

def _gguf_control_tokens(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    pos = 8  # magic + version
    _n_tensors, n_kv = struct.unpack_from("<QQ", data, pos)
    pos += 16
    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def read_str(p):
        (n,) = struct.unpack_from("<Q", data, p)
        return data[p + 8:p + 8 + n], p + 8 + n

    def read_val(t, p):
        if t in scalar:
            fmt = "<" + scalar[t]
            return struct.unpack_from(fmt, data, p)[0], p + struct.calcsize(fmt)
        if t == 8:
            return read_str(p)
        if t == 9:
            et, n = struct.unpack_from("<IQ", data, p)
            p += 12
            if et in scalar:  # bulk-read numeric arrays
                fmt = "<%d%s" % (n, scalar[et])
                return list(struct.unpack_from(fmt, data, p)), p + struct.calcsize(fmt)
            out = []
            for _ in range(n):
                v, p = read_val(et, p)
                out.append(v)
            return out, p
        raise ValueError(f"{path}: unknown GGUF value type {t}")

    kv = {}
    for _ in range(n_kv):
        key, pos = read_str(pos)
        (t,) = struct.unpack_from("<I", data, pos)
        val, pos = read_val(t, pos + 4)
        if key in (b"tokenizer.ggml.tokens", b"tokenizer.ggml.token_type"):
            kv[key] = val
    toks = kv.get(b"tokenizer.ggml.tokens", [])
    types = kv.get(b"tokenizer.ggml.token_type", [])
    return [t for t, ty in zip(toks, types) if ty == 3]  # 3 = CONTROL


def control_names(pre_vocab, extra):
    names = {s.encode() for s in DEFAULT_CONTROL}
    names.update(s.encode() for s in extra)
    if pre_vocab:
        for t in _gguf_control_tokens(pre_vocab):
            # Only marker-shaped names: a control token spelt like ordinary text (rare, but
            # possible in a foreign vocabulary) must not eat training text.
            if (t.startswith(b"<|") and t.endswith(b"|>")) or (t.startswith(b"[") and t.endswith(b"]") and len(t) > 2):
                names.add(t)
    # Longest first so that a name containing another one is removed whole.
    return sorted(names, key=lambda s: (-len(s), s))


def strip_controls(data, names):
    if not names:
        return data, {}
    rx = re.compile(b"|".join(re.escape(n) for n in names))
    seen = collections.Counter()

    def repl(m):
        seen[m.group()] += 1
        return b"\n"

    out = rx.sub(repl, data)
    return out, {k.decode(): v for k, v in sorted(seen.items())}


# ---------------------------------------------------------------------------------------
# `k3 tokenize --split` output: one piece per line, escaped as in src/cli/cmd_tokenize.cpp
# (\\ \n \t \r, and \xNN with uppercase hex for control characters and invalid UTF-8).

_ESC_RX = re.compile(rb"\\(x[0-9A-F]{2}|[ntr\\])|\\")
_ESC_SIMPLE = {b"n": b"\n", b"t": b"\t", b"r": b"\r", b"\\": b"\\"}


def _unesc(m):
    g = m.group(1)
    if g is None:
        raise ValueError("bad escape in k3 --split output")
    if len(g) == 3:
        return bytes((int(g[1:], 16),))
    return _ESC_SIMPLE[g]


def unescape(s):
    """Exact inverse of the engine's escape() for one line (or a concatenation of lines)."""
    if b"\\" not in s:
        return s
    return _ESC_RX.sub(_unesc, s)


_SAFE_RX = re.compile(rb"\n[\x21-\x7e]")


def safe_chunks(data, chunk_bytes):
    """Yield (start, end) ranges covering data, each cut at a safe point (see docstring)."""
    n, start = len(data), 0
    while start < n:
        if n - start <= chunk_bytes:
            yield start, n
            return
        lim = start + chunk_bytes
        cut = -1
        p = data.rfind(b"\n", start, lim)
        while p >= start:
            if 0x21 <= data[p + 1] <= 0x7E:
                cut = p + 1
                break
            p = data.rfind(b"\n", start, p)
        if cut <= start:
            m = _SAFE_RX.search(data, lim)
            cut = m.start() + 1 if m else n
            if cut - start >= KIMI_SLICE_CHARS:
                log(f"warning: no safe cut point in {cut - start} bytes at offset {start}; "
                    "the engine's 400k-character slicing applies inside this chunk")
        yield start, cut
        start = cut


def k3_split_raw(k3, model, chunk):
    """The escaped --split lines of one chunk (bytes, without the newlines), verified."""
    r = subprocess.run([k3, "tokenize", "-m", model, "--split", "-f", "-"], input=chunk,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"k3 tokenize --split failed ({r.returncode}): {r.stderr.decode(errors='replace')}")
    out = r.stdout
    if not chunk:
        return []
    if not out.endswith(b"\n") or out.startswith(b"\n") or b"\n\n" in out:
        raise RuntimeError("unexpected k3 --split output (empty piece or missing newline)")
    lines = out[:-1].split(b"\n")
    if unescape(b"".join(lines)) != chunk:
        raise RuntimeError("k3 --split pieces do not concatenate to the input chunk")
    return lines


def k3_piece_counts(k3, model, data, chunk_bytes):
    """Counter {piece bytes: frequency} over all chunks."""
    esc = collections.Counter()  # counted on escaped lines: escaping is a bijection, and
    n_pieces = 0                 # unescaping only the unique keys is far cheaper
    done, t0 = 0, time.time()
    for a, b in safe_chunks(data, chunk_bytes):
        lines = k3_split_raw(k3, model, data[a:b])
        esc.update(lines)
        n_pieces += len(lines)
        done = b
        if time.time() - t0 > 10:
            log(f"  split {done / 1e6:.1f}/{len(data) / 1e6:.1f} MB")
            t0 = time.time()
    counts = {}
    for k, v in esc.items():
        u = unescape(k)
        counts[u] = counts.get(u, 0) + v
    return counts, n_pieces


def k3_pieces(k3, model, data, chunk_bytes):
    out = []
    for a, b in safe_chunks(data, chunk_bytes):
        out.extend(unescape(s) for s in k3_split_raw(k3, model, data[a:b]))
    return out


# Only for tests and machines without the engine: a GPT-2-like regex, NOT the Kimi split.
_PY_SPLIT_RX = re.compile(r"""'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d{1,3}| ?(?:[^\s\w]|_)+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")


def python_pieces(data):
    text = data.decode("utf-8", "surrogateescape")
    pieces = [m.group().encode("utf-8", "surrogateescape") for m in _PY_SPLIT_RX.finditer(text)]
    if b"".join(pieces) != data:
        raise AssertionError("python split lost text")
    return pieces


# ---------------------------------------------------------------------------------------
# Training

def train(counts, n_merges, progress=True):
    """Learn n_merges merges from {piece: freq}. Returns (tokens, merges, stats)."""
    items = sorted(counts.items())  # fixed word order (results do not depend on it anyway)
    words = [list(p) for p, _ in items]
    freq = [c for _, c in items]
    tok = [bytes((i,)) for i in range(256)]
    by_bytes = {t: i for i, t in enumerate(tok)}

    pc = collections.defaultdict(int)
    where = collections.defaultdict(set)
    for wi, w in enumerate(words):
        f = freq[wi]
        for p in zip(w, w[1:]):
            pc[p] += f
            where[p].add(wi)
    heap = [(-c, tok[a] + tok[b], tok[a], a, b) for (a, b), c in pc.items()]
    heapq.heapify(heap)

    merges, dropped, t0 = [], 0, time.time()
    while len(merges) < n_merges:
        if not heap:
            raise RuntimeError(f"only {len(merges)} merges possible: the input is too small for this vocab size")
        negc, cat, left, a, b = heapq.heappop(heap)
        cur = pc.get((a, b), 0)
        if cur <= 0:
            continue
        if cur != -negc:  # stale upper bound: requeue with the true count
            heapq.heappush(heap, (-cur, cat, left, a, b))
            continue
        if cat in by_bytes:
            # Same bytes as an existing token: merging would create a duplicate (breaks
            # rank BPE == merge-list BPE). Never push it again (only pairs with the newest
            # token get new entries, and this pair has none).
            dropped += 1
            continue
        c = len(tok)
        tok.append(cat)
        by_bytes[cat] = c
        merges.append((a, b))
        fresh = set()
        for wi in where.pop((a, b)):
            w = words[wi]
            n = len(w)
            new, i, hit = [], 0, False
            while i < n:
                if w[i] == a and i + 1 < n and w[i + 1] == b:
                    new.append(c)
                    i += 2
                    hit = True
                else:
                    new.append(w[i])
                    i += 1
            if not hit:  # stale index: the word lost this pair in an earlier merge
                continue
            f = freq[wi]
            for p in zip(w, w[1:]):
                pc[p] -= f
            for p in zip(new, new[1:]):
                pc[p] += f
                # Pairs without c already existed in the old word, so wi is in their set.
                if p[0] == c or p[1] == c:
                    where[p].add(wi)
                    fresh.add(p)
            words[wi] = new
        if pc.pop((a, b), 0) != 0:
            raise AssertionError("merged pair still has a count")
        for p in fresh:
            x, y = p
            if pc[p] > 0:
                heapq.heappush(heap, (-pc[p], tok[x] + tok[y], tok[x], x, y))
        if progress and time.time() - t0 > 10:
            log(f"  {len(merges)}/{n_merges} merges, last count {cur}")
            t0 = time.time()
    stats = {"dropped_duplicate_pairs": dropped, "last_merge_count": -negc if merges else 0}
    final = {items[i][0]: words[i] for i in range(len(words))}
    return tok, merges, stats, final


def check_invariants(tok, merges):
    assert len(tok) == 256 + len(merges)
    assert all(tok[i] == bytes((i,)) for i in range(256))
    assert len(set(tok)) == len(tok), "two ids have the same bytes"
    for i, (a, b) in enumerate(merges):
        c = 256 + i
        assert a < c and b < c, f"merge {i} uses a later id"
        assert tok[c] == tok[a] + tok[b], f"token {c} is not the concatenation of its merge"


# ---------------------------------------------------------------------------------------
# Encoders (for --check and tests)

class RankBPE:
    """tiktoken-style: a piece that is a token is emitted whole; otherwise the adjacent pair
    whose concatenation has the lowest rank (= id) merges first, leftmost on ties."""

    def __init__(self, tok):
        self.rank = {t: i for i, t in enumerate(tok)}
        self.cache = {}

    def encode_piece(self, piece):
        r = self.cache.get(piece)
        if r is not None:
            return r
        rank = self.rank
        if piece in rank:
            r = [rank[piece]]
        else:
            parts = [piece[i:i + 1] for i in range(len(piece))]
            while len(parts) > 1:
                best, bi = None, -1
                for i in range(len(parts) - 1):
                    k = rank.get(parts[i] + parts[i + 1])
                    if k is not None and (best is None or k < best):
                        best, bi = k, i
                if best is None:
                    break
                parts[bi:bi + 2] = [parts[bi] + parts[bi + 1]]
            r = [rank[p] for p in parts]
        self.cache[piece] = r
        return r


class MergeBPE:
    """llama.cpp-style: the adjacent pair with the lowest merge index merges first."""

    def __init__(self, merges):
        self.mrank = {m: i for i, m in enumerate(merges)}

    def encode_piece(self, piece):
        ids = list(piece)
        mrank = self.mrank
        while len(ids) > 1:
            best, bi = None, -1
            for i in range(len(ids) - 1):
                k = mrank.get((ids[i], ids[i + 1]))
                if k is not None and (best is None or k < best):
                    best, bi = k, i
            if best is None:
                break
            ids[bi:bi + 2] = [256 + best]
        return ids


def load_vocab(path):
    with open(path) as f:
        v = json.load(f)
    return [bytes.fromhex(h) for h in v["tokens"]], [tuple(m) for m in v["merges"]], v


def show(b):
    """Token bytes on one line, escaped like `k3 tokenize` (\\ \\n \\t \\r \\xNN)."""
    out = []
    for ch in b.decode("utf-8", "surrogateescape"):
        o = ord(ch)
        if ch in "\\\n\t\r":
            out.append({"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch])
        elif 0xDC80 <= o <= 0xDCFF:  # a byte that is not valid UTF-8
            out.append("\\x%02X" % (o - 0xDC00))
        elif o < 0x20 or o == 0x7F or 0x80 <= o < 0xA0:
            out.append("".join("\\x%02X" % x for x in ch.encode()))
        else:
            out.append(ch)
    return "".join(out)


# ---------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k3", help="the k3 binary (for the engine's pre-tokenizer)")
    ap.add_argument("--pre-vocab", help="GGUF whose tokenizer.ggml.pre is kimi-k2 (only its split is used)")
    ap.add_argument("--pre-split-python", action="store_true",
                    help="use a simple regex split instead of k3 (tests only; not the Kimi split)")
    ap.add_argument("--input", required=True)
    ap.add_argument("--vocab-size", type=int, required=True, help="total, control tokens included")
    ap.add_argument("--n-control", type=int, default=256)
    ap.add_argument("--out", required=True)
    ap.add_argument("--control", action="append", default=[], help="extra control-token name to strip")
    ap.add_argument("--chunk-bytes", type=int, default=256 * 1024)
    ap.add_argument("--check", action="store_true", help="report compression and encoder agreement")
    ap.add_argument("--check-bytes", type=int, default=1 << 20)
    args = ap.parse_args(argv)

    n_merges = args.vocab_size - args.n_control - 256
    if n_merges < 0:
        ap.error("vocab-size - n-control must be at least 256")
    if not args.pre_split_python and not (args.k3 and args.pre_vocab):
        ap.error("--k3 and --pre-vocab are required (or --pre-split-python for tests)")
    if args.chunk_bytes >= KIMI_SLICE_CHARS:
        ap.error(f"--chunk-bytes must be below {KIMI_SLICE_CHARS}")

    t_start = time.time()
    with open(args.input, "rb") as f:
        raw = f.read()
    names = control_names(args.pre_vocab, args.control)
    data, n_ctl = strip_controls(raw, names)
    log(f"input {len(raw)} bytes; control-token strings replaced by newlines: {n_ctl}")

    t0 = time.time()
    if args.pre_split_python:
        pieces = python_pieces(data)
        counts = dict(collections.Counter(pieces))
        n_pieces = len(pieces)
    else:
        counts, n_pieces = k3_piece_counts(args.k3, args.pre_vocab, data, args.chunk_bytes)
    log(f"pre-tokenized: {n_pieces} pieces, {len(counts)} unique, {time.time() - t0:.1f} s")

    t0 = time.time()
    tok, merges, stats, final = train(counts, n_merges)
    check_invariants(tok, merges)
    log(f"trained {len(merges)} merges in {time.time() - t0:.1f} s "
        f"(last merge count {stats['last_merge_count']}, dropped duplicate pairs {stats['dropped_duplicate_pairs']})")

    def sha(b):
        return hashlib.sha256(b).hexdigest()

    source = {
        "input": os.path.basename(args.input),
        "input_sha256": sha(raw),
        "input_bytes": len(raw),
        "bytes_after_control_strip": len(data),
        "control_strings_replaced": n_ctl,
        "control_names_stripped": len(names),
        "pre_tokenizer": "python-regex (test only)" if args.pre_split_python else "k3 kimi-k2 --split",
        "pre_vocab_sha256": sha(open(args.pre_vocab, "rb").read()) if args.pre_vocab else None,
        "pieces": n_pieces,
        "unique_pieces": len(counts),
        "merges": len(merges),
        "dropped_duplicate_pairs": stats["dropped_duplicate_pairs"],
        "last_merge_count": stats["last_merge_count"],
    }
    out = {"tokens": [t.hex() for t in tok], "merges": [list(m) for m in merges],
           "n_control": args.n_control, "source": source}
    d = os.path.dirname(os.path.abspath(args.out))
    fd, tmp = tempfile.mkstemp(prefix=".vocab.", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(out, f, separators=(",", ":"))
            f.write("\n")
        os.replace(tmp, args.out)
    except BaseException:
        os.unlink(tmp)
        raise
    log(f"wrote {args.out}: {len(tok)} tokens + {args.n_control} control; total {time.time() - t_start:.1f} s")

    if args.check:
        run_check(args, tok, merges, data, final)
    return 0


def run_check(args, tok, merges, data, final):
    t0 = time.time()
    rank, mlist = RankBPE(tok), MergeBPE(merges)
    # Encoder agreement on every training piece: the training's final segmentation is by
    # construction the merge-list encoding; rank BPE (the engine) must give the same.
    bad = 0
    for piece, ids in final.items():
        if rank.encode_piece(piece) != ids:
            bad += 1
            if bad <= 5:
                log(f"  MISMATCH {show(piece)!r}: rank {rank.encode_piece(piece)} merge-list {ids}")
    log(f"check: rank BPE vs merge-list BPE on {len(final)} unique pieces: {bad} mismatches")
    # Cut the sample at a safe point so that its split is that of the full text.
    cut = next(safe_chunks(data, args.check_bytes), (0, 0))[1]
    sample = data[:cut]
    if args.pre_split_python:
        pieces = python_pieces(sample)
    else:
        pieces = k3_pieces(args.k3, args.pre_vocab, sample, args.chunk_bytes)
    n_tok, dec, bad2 = 0, [], 0
    for p in pieces:
        ids = rank.encode_piece(p)
        if ids != mlist.encode_piece(p):
            bad2 += 1
        n_tok += len(ids)
        dec.extend(tok[i] for i in ids)
    assert b"".join(dec) == sample, "encode/decode round trip failed"
    log(f"check: {len(sample)} bytes -> {n_tok} tokens: {len(sample) / max(1, n_tok):.3f} bytes/token "
        f"(byte-level: 1.000); merge-list disagreements {bad2}; round trip ok; {time.time() - t0:.1f} s")
    longest = sorted(range(len(tok)), key=lambda i: (-len(tok[i]), i))[:50]
    print("50 longest tokens:")
    for i in longest:
        print(f"{i:6d} {len(tok[i]):3d} [{show(tok[i])}]")


if __name__ == "__main__":
    sys.exit(main())
