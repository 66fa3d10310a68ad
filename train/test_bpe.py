#!/usr/bin/env python3
"""Tests for train/bpe.py. Run: python3 train/test_bpe.py  (about 10 s).

The core tests use --pre-split-python and need no engine. The k3 tests (unescape round trip
of the engine's --split output, chunked split == whole split) run only when build/bin/k3
exists; set K3_BIN / K3_PRE_VOCAB to point elsewhere.
"""

import os
import random
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bpe  # noqa: E402

K3 = os.environ.get("K3_BIN", os.path.join(ROOT, "build", "bin", "k3"))
PRE_VOCAB = os.environ.get("K3_PRE_VOCAB", os.path.join(ROOT, "tests", "data", "text", "k3-synth-vocab.gguf"))
HAVE_K3 = os.access(K3, os.X_OK) and os.path.exists(PRE_VOCAB)


def synthetic_text(seed=1, n_docs=300):
    """Deterministic mixed text: English-ish words, code, numbers, non-ASCII, control markers."""
    rng = random.Random(seed)
    words = ("the of and to in is that for it with as was on be by this are from or have an "
             "model token vocabulary merge encoder decoder layer attention expert router "
             "Hello World JSONParser camelCase naïve café über straße 你好 世界 日本語 "
             "def return import class self None True False print(x) {} [] -> => == != "
             "don't it's we're they've I'm you'll he'd").split()
    docs = []
    for _ in range(n_docs):
        lines = []
        for _ in range(rng.randint(1, 6)):
            n = rng.randint(3, 18)
            line = " ".join(rng.choice(words) for _ in range(n))
            if rng.random() < 0.3:
                line = "    " + line
            if rng.random() < 0.2:
                line += " %d.%02d" % (rng.randint(0, 99999), rng.randint(0, 99))
            if rng.random() < 0.1:
                line += "\t\\tab\\ \r"
            lines.append(line + rng.choice([".", "!", "?", ":", ""]))
        body = "\n".join(lines)
        if rng.random() < 0.3:
            body = "<|open|>user<|sep|>" + body + "<|close|><|end_of_msg|>"
        docs.append(body)
    return ("\n[EOS]".join(docs) + "\n").encode()


def run_bpe(inp, out, vocab_size, n_control, check=False):
    argv = ["--pre-split-python", "--input", inp, "--vocab-size", str(vocab_size),
            "--n-control", str(n_control), "--out", out]
    if check:
        argv.append("--check")
    return subprocess.run([sys.executable, os.path.join(HERE, "bpe.py")] + argv,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)


class TestUnescape(unittest.TestCase):
    def test_escapes(self):
        self.assertEqual(bpe.unescape(b"a\\\\b\\n\\t\\r\\x00\\xFF"), b"a\\b\n\t\r\x00\xff")
        self.assertEqual(bpe.unescape(b"\\\\x41"), b"\\x41")  # escaped backslash, then text
        self.assertEqual(bpe.unescape("é你".encode()), "é你".encode())
        for bad in (b"\\", b"\\q", b"\\x4", b"\\xff"):  # engine prints uppercase hex only
            with self.assertRaises(ValueError):
                bpe.unescape(bad)

    def test_show_matches_engine_escaping(self):
        self.assertEqual(bpe.unescape(bpe.show(b"a\\\n\t\r\x01\xff\xc3").encode()), b"a\\\n\t\r\x01\xff\xc3")


class TestStrip(unittest.TestCase):
    def test_controls_become_newlines(self):
        names = bpe.control_names(None, [])
        data, seen = bpe.strip_controls(b"a[EOS]b<|open|>c<|sep|>d<|end_of_msg|>[EOS]", names)
        self.assertEqual(data, b"a\nb\nc\nd\n\n")
        self.assertEqual(seen, {"<|end_of_msg|>": 1, "<|open|>": 1, "<|sep|>": 1, "[EOS]": 2})


class TestTrain(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.inp = os.path.join(cls.tmp.name, "train.txt")
        with open(cls.inp, "wb") as f:
            f.write(synthetic_text())
        cls.vocab_size, cls.n_control = 768, 64
        cls.out1 = os.path.join(cls.tmp.name, "v1.json")
        cls.out2 = os.path.join(cls.tmp.name, "v2.json")
        cls.res1 = run_bpe(cls.inp, cls.out1, cls.vocab_size, cls.n_control, check=True)
        run_bpe(cls.inp, cls.out2, cls.vocab_size, cls.n_control)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_deterministic(self):
        with open(self.out1, "rb") as a, open(self.out2, "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_format_and_invariants(self):
        tok, merges, v = bpe.load_vocab(self.out1)
        self.assertEqual(len(tok), self.vocab_size - self.n_control)
        self.assertEqual(v["n_control"], self.n_control)
        self.assertEqual(len(merges), len(tok) - 256)
        bpe.check_invariants(tok, merges)  # concatenation of lower ids, no duplicates
        for t in tok:  # control markers were stripped, so no token may contain one
            for name in (b"<|", b"|>", b"[EOS"):
                self.assertNotIn(name, t)

    def test_round_trip_and_encoders_agree(self):
        tok, merges, _ = bpe.load_vocab(self.out1)
        rank, mlist = bpe.RankBPE(tok), bpe.MergeBPE(merges)
        texts = [synthetic_text(seed=7, n_docs=40), "ünseen wörds ½ 🙂 \x00\xff".encode("utf-8", "surrogatepass"),
                 bytes(range(256)), b"\xff\xfe\xc3 broken utf8 \xe4\xbd"]
        for k, text in enumerate(texts):
            text, _ = bpe.strip_controls(text, bpe.control_names(None, []))
            ids = []
            for p in bpe.python_pieces(text):
                r = rank.encode_piece(p)
                self.assertEqual(r, mlist.encode_piece(p), p)
                ids.extend(r)
            self.assertEqual(b"".join(tok[i] for i in ids), text)
            if k == 0:  # in-distribution text must compress well
                self.assertGreater(len(text) / len(ids), 3.0)
        self.assertIn(b"0 mismatches", self.res1.stderr)
        self.assertIn(b"round trip ok", self.res1.stderr)

    def test_tie_break(self):
        # "ab" and "ba" both occur twice: (b"ab", b"a") < (b"ba", b"b"), so ab wins.
        tok, merges, _, _ = bpe.train({b"abab": 1, b"ba": 1}, 1, progress=False)
        self.assertEqual(tok[256], b"ab")
        tok, merges, _, _ = bpe.train({b"xy": 3, b"yx": 3}, 1, progress=False)
        self.assertEqual(tok[256], b"xy")

    def test_rank_equals_merge_list_random(self):
        # Small alphabets provoke competing splits (aa|a vs a|aa, ab|c vs a|bc).
        rng = random.Random(1)
        for _ in range(300):
            alpha = rng.choice([b"ab", b"abc", b"aab"])
            counts = {}
            for _ in range(rng.randint(1, 8)):
                w = bytes(rng.choice(alpha) for _ in range(rng.randint(2, 9)))
                counts[w] = counts.get(w, 0) + rng.randint(1, 5)
            try:
                tok, merges, _, final = bpe.train(counts, rng.randint(1, 12), progress=False)
            except RuntimeError:  # fewer pairs than merges asked for
                continue
            bpe.check_invariants(tok, merges)
            rank, mlist = bpe.RankBPE(tok), bpe.MergeBPE(merges)
            extra = [bytes(rng.choice(alpha) for _ in range(rng.randint(2, 12))) for _ in range(10)]
            for p in list(final) + extra:
                self.assertEqual(rank.encode_piece(p), mlist.encode_piece(p), (counts, p))
            for p, ids in final.items():  # training segmentation == merge-list encoding
                self.assertEqual(ids, mlist.encode_piece(p))

    def test_matches_naive_bpe(self):
        # The incremental trainer must equal a from-scratch recount at every step.
        counts = {}
        for p in bpe.python_pieces(synthetic_text(seed=3, n_docs=30)):
            counts[p] = counts.get(p, 0) + 1
        n = 120
        tok, merges, _, _ = bpe.train(counts, n, progress=False)
        words = {p: list(p) for p in counts}
        ntok = [bytes((i,)) for i in range(256)]
        for _ in range(n):
            pc = {}
            for p, w in words.items():
                for q in zip(w, w[1:]):
                    pc[q] = pc.get(q, 0) + counts[p]
            cand = [q for q in pc if ntok[q[0]] + ntok[q[1]] not in ntok]
            best = min(cand, key=lambda q: (-pc[q], ntok[q[0]] + ntok[q[1]], ntok[q[0]]))
            c = len(ntok)
            ntok.append(ntok[best[0]] + ntok[best[1]])
            for p, w in words.items():
                out, i = [], 0
                while i < len(w):
                    if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                        out.append(c)
                        i += 2
                    else:
                        out.append(w[i])
                        i += 1
                words[p] = out
        self.assertEqual(ntok, tok)


@unittest.skipUnless(HAVE_K3, "build/bin/k3 not built")
class TestEngineSplit(unittest.TestCase):
    SAMPLES = [b"a.\n\nThe \\ x\ty\r\nz \xe4\xbd\xa0\xe5\xa5\xbd \xef\xbb\xbf\xc3\xa9\x01",
               b"\\x41\\\\n\\", bytes(range(256)) * 2, b"\xff\xfe\xc3\n\xe4\xbd",
               "héllo wörld\u2028\u0085 naïve\n\n\n  x  \n\t\nE\u0301COLE camelCaseJSON don't".encode()]

    def test_unescape_round_trip(self):
        for s in self.SAMPLES:  # k3_split_raw itself asserts unescape(concat) == input
            lines = bpe.k3_split_raw(K3, PRE_VOCAB, s)
            self.assertEqual(b"".join(bpe.unescape(x) for x in lines), s)
            self.assertTrue(all(b"\n" not in x for x in lines))

    def test_chunked_split_equals_whole(self):
        text = synthetic_text(seed=5, n_docs=60)
        text, _ = bpe.strip_controls(text, bpe.control_names(PRE_VOCAB, []))
        text += b"".join(self.SAMPLES) * 3
        whole = bpe.k3_split_raw(K3, PRE_VOCAB, text)
        for cb in (500, 4000):
            chunks = list(bpe.safe_chunks(text, cb))
            self.assertGreater(len(chunks), 3)
            got = []
            for a, b in chunks:
                got.extend(bpe.k3_split_raw(K3, PRE_VOCAB, text[a:b]))
            self.assertEqual(got, whole)

    def test_gguf_control_names(self):
        names = bpe.control_names(PRE_VOCAB, [])
        for n in (b"[EOS]", b"<|open|>", b"<|close|>", b"<|sep|>", b"<|end_of_msg|>"):
            self.assertIn(n, names)


if __name__ == "__main__":
    unittest.main()
