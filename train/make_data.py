#!/usr/bin/env python3
"""Seeded, offline training-data generator for k3-tiny.

    python3 train/make_data.py --out DIR --seed 1234 [--k3 build/bin/k3] [--scale 1.0]
    python3 train/make_data.py --check [--k3 ...]      # print samples, run every check
    python3 train/make_data.py --out DIR --retrieval N  # the retrieval stage's episodes

Output (documents each followed by the literal control text ``[EOS]``, nothing between):
  DIR/train.txt          ~30 MB at --scale 1.0, all kinds, shuffled
  DIR/heldout.txt        held-out documents of every kind, shuffled
  DIR/heldout_prose.txt  held-out prose only (for perplexity)
  DIR/stats.json         documents and bytes per kind, seed, sources, generator settings

Sources and mix (by bytes of train text):
  prose    55%  Python 3.11 HTML docs (Debian python3.11-doc) and fortunes (Debian fortunes),
                see data_prose.py.  The unique training prose is ~7.7 MB, so the 16.5 MB
                share is filled with ~2.1 epochs, each re-chunked at fresh paragraph
                boundaries and fortune groupings (stats.json: prose.epochs_started).
  chat     15%  knowledge-base Q&A, small talk, multi-turn chats (data_chat.py)
  tool     10%  OpenAI-style tools, calls, results, answers (data_tools.py)
  arith    10%  step-by-step arithmetic with verification (data_arith.py)
  passkey  10%  pass-key retrieval from 256-4096-token prose haystacks (data_passkey.py)

Every chat document is the prompt exactly as ``k3 chat-render`` writes it (generation prompt
included) followed by the assistant completion, see data_render.py.

Determinism: the same seed, the same installed packages and the same renderer give
byte-identical files.  Every random choice comes from random.Random objects seeded from the
seed (per kind, or per source unit through SHA-256), files are read in sorted order,
renders are collected in input order, and nothing depends on time, dict order or hash().
Held-out membership is a SHA-256 of the source unit (prose page or fortune entry) or of
the episode's first document (chat kinds): ~3 % of each kind, disjoint from train by
construction, and exact duplicate documents are dropped.
"""

import argparse
import fractions
import hashlib
import json
import multiprocessing
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import data_arith  # noqa: E402
import data_chat  # noqa: E402
import data_passkey  # noqa: E402
import data_prose  # noqa: E402
import data_tools  # noqa: E402
from data_prose import has_forbidden, stable_rng, unit_is_heldout  # noqa: E402
from data_render import CLOSE, EOM, OPEN, SEP, SPLIT_TEXT, Renderer  # noqa: E402

EOS = "[EOS]"
TRAIN_BYTES = 30_000_000
MIX = {"prose": 0.55, "chat": 0.15, "tool": 0.10, "arith": 0.10, "passkey": 0.10}
KINDS = ["prose", "chat", "tool", "arith", "passkey"]
HELDOUT_FRAC = 0.03
BATCH = 256   # episodes rendered per round; the byte target is checked between rounds

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# Checks that run on every generated document
# --------------------------------------------------------------------------------------

_NUM = r"-?\d+(?:\.\d+)?"
_EXPR = rf"\(?{_NUM}\)?(?: [-+×x*/÷] \(?{_NUM}\)?)*"
# Not preceded by a word, a decimal point or an operator: a chain starts at its first number.
_CHAIN = re.compile(rf"(?<![\w.])(?<![-+×x*/÷] )(?<![-+×x*/÷] \(){_EXPR}(?: = {_EXPR})+(?!\w|\.\d)")


def _eval_num(expr):
    """Exact value of an arithmetic expression written with our operators (Fractions)."""
    # A chain like "(10 × 3 = 30)" splits into "(10 × 3" and "30)": drop the stray bracket.
    while expr.count("(") > expr.count(")") and expr.startswith("("):
        expr = expr[1:]
    while expr.count(")") > expr.count("(") and expr.endswith(")"):
        expr = expr[:-1]
    e = expr.replace("×", "*").replace("÷", "/").replace(" x ", " * ")
    assert re.fullmatch(r"[-+*/ .\d()]+", e), expr
    e = re.sub(r"\d+(?:\.\d+)?", lambda m: f"F('{m.group(0)}')", e)
    return eval(e, {"__builtins__": {}, "F": fractions.Fraction})  # noqa: S307


def verify_equations(text):
    """Every 'a op b = c [= ...]' chain in the text must hold; returns how many were seen."""
    n = 0
    for m in _CHAIN.finditer(text):
        vals = [_eval_num(p) for p in m.group(0).split(" = ")]
        assert len(set(vals)) == 1, f"false equation {m.group(0)!r} in: {text}"
        n += 1
    return n


def _texts_of(sample):
    """All free text that ends up inside the document (what must not spell markers)."""
    out = []
    for m in sample.messages:
        for k in ("content", "reasoning_content"):
            if isinstance(m.get(k), str):
                out.append(m[k])
        for tc in m.get("tool_calls") or []:
            out.append(tc["function"]["arguments"])
    out += [sample.final.reasoning, sample.final.content]
    out += [json.dumps(a, ensure_ascii=False) for _, a in sample.final.calls]
    if sample.tools:
        out.append(json.dumps(sample.tools, ensure_ascii=False))
    return out


def check_sample(s):
    for t in _texts_of(s):
        assert not has_forbidden(t), f"forbidden marker text in {s.kind}: {t[:200]!r}"
    if s.kind == "arith":
        assert _eval_num(s.meta["expr"].replace("//", "/")) == s.meta["result"], s.meta
        assert str(s.meta["result"]) in s.final.content
        if s.thinking:
            assert verify_equations(s.final.reasoning) > 0, s.final.reasoning
            assert "Check:" in s.final.reasoning and s.final.reasoning.endswith("Correct.")
    if s.kind in ("chat", "arith", "tool"):
        for t in (s.final.reasoning, s.final.content):
            verify_equations(t)
    if s.kind == "passkey":
        key = s.meta["key"]
        user = s.messages[-1]["content"]
        assert re.fullmatch(r"[1-9]\d{4}", key)
        assert user.count(key) == 2, "pass key must appear exactly twice in the haystack"
        assert data_passkey.NEEDLE.format(k=key) in user
        assert user.endswith("\n\nWhat is the pass key?")
        assert s.final.content == key
        assert (s.final.reasoning == f"The text says: The pass key is {key}.") == s.thinking
    if s.kind == "tool":
        for m in s.messages:
            for tc in m.get("tool_calls") or []:
                data_tools.validate_args(tc["function"]["name"],
                                         json.loads(tc["function"]["arguments"]))
        declared = {t["function"]["name"] for t in s.tools}
        for name, args in s.final.calls:
            assert name in declared, f"call to undeclared tool {name}"
            data_tools.validate_args(name, args)


# --------------------------------------------------------------------------------------
# A reader of completions, after the output-parser rules of docs/CHAT-FORMAT.md
# --------------------------------------------------------------------------------------

_MARK = re.compile(r"(<\|open\|>|<\|close\|>|<\|sep\|>|<\|end_of_msg\|>)")


def parse_completion(text, thinking, schema_types):
    """(reasoning, content, [(name, args_json)]) from well-formed model output."""
    parts = [p for p in _MARK.split(text) if p != ""]
    chan = "think" if thinking else "response"
    reasoning, content, calls = [], [], []
    i = 0
    cur_call = None
    cur_arg = None
    while i < len(parts):
        p = parts[i]
        if p in (OPEN, CLOSE):
            header = parts[i + 1]
            assert parts[i + 2] == SEP, f"header without sep: {header!r}"
            i += 3
            name, _, attrs = header.partition(" ")
            av = {k: v.replace("&quot;", '"').replace("&amp;", "&")
                  for k, v in re.findall(r'(\w+)="([^"]*)"', attrs)}
            if p == OPEN:
                if name in ("think", "response", "tools"):
                    chan = name
                elif name == "call":
                    cur_call = (av["tool"], {})
                elif name == "argument":
                    cur_arg = (av["key"], av.get("type"), [])
                else:
                    raise AssertionError(f"unexpected tag {name}")
            else:
                if name == "argument":
                    key, typ, buf = cur_arg
                    raw = "".join(buf)
                    typ = typ or schema_types.get((cur_call[0], key), "string")
                    cur_call[1][key] = raw if typ == "string" else json.loads(raw)
                    cur_arg = None
                elif name == "call":
                    calls.append((cur_call[0], json.dumps(cur_call[1], ensure_ascii=False,
                                                          separators=(",", ":"))))
                    cur_call = None
                elif name == "message":
                    assert parts[i:] == [EOM], f"trailing output {parts[i:]!r}"
                    break
                chan = None if name in ("think", "response", "tools") else chan
            continue
        if cur_arg is not None:
            cur_arg[2].append(p)
        elif chan == "think":
            reasoning.append(p)
        elif chan == "response":
            content.append(p)
        else:
            assert not p.strip(), f"text between channels: {p!r}"
        i += 1
    else:
        raise AssertionError("completion does not end with C(message) + <|end_of_msg|>")
    return "".join(reasoning), "".join(content), calls


def check_parse(s):
    types = {(t["function"]["name"], k): v["type"]
             for t in (s.tools or []) for k, v in t["function"]["parameters"]["properties"].items()}
    r, c, calls = parse_completion(s.completion(), s.thinking, types)
    assert r == (s.final.reasoning if s.thinking else ""), (r, s.final.reasoning)
    assert c == s.final.content, (c, s.final.content)
    want = [(n, json.dumps(a, ensure_ascii=False, separators=(",", ":"))) for n, a in s.final.calls]
    assert calls == want, (calls, want)


# --------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------

def episode_factory(kind, corpus, train_prose_docs):
    if kind == "chat":
        return lambda rng: [data_chat.chat_sample(rng, corpus)]
    if kind == "tool":
        return lambda rng: data_tools.tool_samples(rng, corpus)
    if kind == "arith":
        def arith(rng):
            sysmsg, _ = data_chat.pick_system(rng, p_none=0.7)
            thinking, effort = data_chat.pick_settings(rng)
            return [data_arith.arithmetic_sample(rng, (thinking, effort, sysmsg))]
        return arith
    if kind == "passkey":
        return lambda rng: [data_passkey.passkey_sample(rng, train_prose_docs)]
    raise ValueError(kind)


def generate_kind(kind, seed, target, renderer, corpus, train_prose_docs, limit=None):
    """Episodes of one kind until the train part reaches `target` bytes.

    Returns (train_docs, heldout_docs, episodes, samples); each doc is a str.
    """
    rng = stable_rng(seed, "kind", kind)
    make = episode_factory(kind, corpus, train_prose_docs)
    train, held = [], []
    train_bytes = 0
    seen = set()
    episodes = []
    n_samples = 0
    all_bytes = 0
    while train_bytes < target and (limit is None or len(episodes) < limit):
        # Size the round by what is still missing, so little is rendered only to be dropped.
        want = 64
        if episodes and target != float("inf"):
            per_ep = all_bytes / len(episodes)
            want = int((target - train_bytes) / (per_ep * (1 - HELDOUT_FRAC)) * 1.05) + 4
        want = max(8, min(BATCH, want))
        batch = []
        while len(batch) < want and (limit is None or len(episodes) + len(batch) < limit):
            batch.append(make(rng))
        flat = [s for ep in batch for s in ep]
        for s in flat:
            check_sample(s)
        prompts = renderer.render_samples(flat)
        k = 0
        for ep in batch:
            docs = []
            for s in ep:
                docs.append(prompts[k] + s.completion())
                k += 1
            assert not any(SPLIT_TEXT in d for d in docs)
            key = hashlib.sha256(docs[0].encode("utf-8")).hexdigest()
            if key in seen:
                continue  # an exact repeat adds nothing and would blur the split
            seen.add(key)
            episodes.append((ep, docs))
            n_samples += len(ep)
            all_bytes += sum(len(d.encode("utf-8")) + len(EOS) for d in docs)
            if unit_is_heldout(f"{kind}:{key}", HELDOUT_FRAC):
                held.extend(docs)
            else:
                train.extend(docs)
                train_bytes += sum(len(d.encode("utf-8")) + len(EOS) for d in docs)
            if train_bytes >= target:
                break
    return train, held, episodes, n_samples


def package_version(pkg):
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg],
                             capture_output=True, text=True, check=False)
        return out.stdout.strip() or None
    except OSError:
        return None


def find_k3(arg):
    path = arg or os.path.join(REPO, "build", "bin", "k3")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        sys.exit(f"make_data: k3 binary not found at {path}; build it (cmake --build build) "
                 f"or pass --k3 PATH")
    return path


def write_docs(path, docs):
    with open(path, "w", encoding="utf-8", newline="") as f:
        for d in docs:
            assert EOS not in d
            f.write(d)
            f.write(EOS)


def run(args):
    t0 = time.time()
    renderer = Renderer(find_k3(args.k3), batching=not args.no_batch)
    with multiprocessing.Pool(2) as pool:
        corpus = data_prose.ProseCorpus(args.seed, pool)
    log(f"prose corpus: {len(corpus.pages)} pages, {len(corpus.fortunes)} fortunes "
        f"({time.time() - t0:.1f} s)")
    total = TRAIN_BYTES * args.scale
    out_train, out_held = {}, {}
    counts = {}

    prose_train = corpus.train_docs(total * MIX["prose"])
    prose_held = corpus.heldout_docs()
    for d in prose_train + prose_held:
        assert not has_forbidden(d), d[:200]
    out_train["prose"], out_held["prose"] = prose_train, prose_held
    counts["prose"] = {"epochs_started": corpus.epochs_used,
                       "unique_train_bytes": sum(len(d.encode("utf-8")) + len(EOS)
                                                 for d in corpus._docs(corpus.train_pages,
                                                                       corpus.train_fortunes, 0))}
    # Passkey haystacks use one epoch of training prose only.
    haystack_docs = corpus._docs(corpus.train_pages, corpus.train_fortunes, 0)

    for kind in KINDS[1:]:
        t = time.time()
        calls0 = renderer.calls
        tr, he, eps, ns = generate_kind(kind, args.seed, total * MIX[kind], renderer, corpus,
                                        haystack_docs)
        out_train[kind], out_held[kind] = tr, he
        counts[kind] = {"episodes": len(eps), "samples": ns}
        log(f"{kind}: {len(eps)} episodes, {len(tr)} train + {len(he)} held-out docs, "
            f"{renderer.calls - calls0} renders, {time.time() - t:.1f} s")

    rng = stable_rng(args.seed, "shuffle")
    train = [d for k in KINDS for d in out_train[k]]
    held = [d for k in KINDS for d in out_held[k]]
    rng.shuffle(train)
    rng.shuffle(held)
    held_prose = list(out_held["prose"])
    rng.shuffle(held_prose)

    os.makedirs(args.out, exist_ok=True)
    write_docs(os.path.join(args.out, "train.txt"), train)
    write_docs(os.path.join(args.out, "heldout.txt"), held)
    write_docs(os.path.join(args.out, "heldout_prose.txt"), held_prose)

    def nbytes(docs):
        return sum(len(d.encode("utf-8")) + len(EOS) for d in docs)

    tb = nbytes(train)
    stats = {
        "seed": args.seed, "scale": args.scale, "mix_target": MIX,
        "heldout_fraction": HELDOUT_FRAC,
        "train": {"docs": len(train), "bytes": tb},
        "heldout": {"docs": len(held), "bytes": nbytes(held)},
        "heldout_prose": {"docs": len(held_prose), "bytes": nbytes(held_prose)},
        "kinds": {k: dict(counts.get(k, {}),
                          train_docs=len(out_train[k]), train_bytes=nbytes(out_train[k]),
                          train_share=round(nbytes(out_train[k]) / max(1, tb), 4),
                          heldout_docs=len(out_held[k]), heldout_bytes=nbytes(out_held[k]))
                  for k in KINDS},
        "sources": {
            "python3.11-doc": {"path": data_prose.DOC_ROOT,
                               "version": package_version("python3.11-doc"),
                               "pages": len(corpus.pages),
                               "heldout_pages": len(corpus.heldout_pages)},
            "fortunes": {"path": data_prose.FORTUNE_ROOT,
                         "version": package_version("fortunes"),
                         "entries": len(corpus.fortunes),
                         "heldout_entries": len(corpus.heldout_fortunes)},
            "renderer": "k3 chat-render (engine mode)",
        },
        "eos": EOS,
    }
    with open(os.path.join(args.out, "stats.json"), "w", encoding="utf-8") as f:
        json.dump(stats, f, indent=1, sort_keys=True)
        f.write("\n")
    log(f"wrote {args.out}: train {tb / 1e6:.2f} MB in {len(train)} docs, held-out "
        f"{stats['heldout']['bytes'] / 1e6:.2f} MB; {renderer.calls} renders; "
        f"{time.time() - t0:.1f} s")
    log(f"  batched renders verified against single renders: {renderer.verified}"
        + ("" if renderer.batching else " (batching was switched off)"))
    for k in KINDS:
        ks = stats["kinds"][k]
        log(f"  {k:8s} train {ks['train_bytes'] / 1e6:7.2f} MB ({ks['train_share'] * 100:4.1f} %) "
            f"{ks['train_docs']:6d} docs   held-out {ks['heldout_bytes'] / 1e6:5.2f} MB "
            f"{ks['heldout_docs']:5d} docs")


# --------------------------------------------------------------------------------------
# --check
# --------------------------------------------------------------------------------------

def _show(doc, limit):
    if len(doc) <= limit:
        return doc
    half = limit // 2
    return doc[:half] + f"\n[... {len(doc) - limit} chars elided ...]\n" + doc[-half:]


def self_check(args):
    renderer = Renderer(find_k3(args.k3), batching=not args.no_batch)
    with multiprocessing.Pool(2) as pool:
        corpus = data_prose.ProseCorpus(args.seed, pool)
    rng = stable_rng(args.seed, "check")
    n = args.check_n

    # Prose: the whole corpus is scanned for forbidden strings, 20 documents are shown.
    prose = corpus._docs(corpus.train_pages, corpus.train_fortunes, 0)
    held = corpus.heldout_docs()
    for d in prose + held:
        assert not has_forbidden(d)
        assert d == data_prose.normalize(d), "prose is not normalized"
    train_units = {rel for rel, _, _ in corpus.train_pages}
    assert not train_units & {rel for rel, _, _ in corpus.heldout_pages}
    print(f"##### prose: {len(prose)} train docs (one epoch), {len(held)} held-out; "
          f"no forbidden strings")
    for d in rng.sample(prose, n):
        print("----- prose"), print(_show(d, args.show))

    haystack_docs = prose
    total_eqs = 0
    for kind in KINDS[1:]:
        _, _, eps, _ = generate_kind(kind, args.seed + 7, float("inf"), renderer, corpus,
                                     haystack_docs, limit=n)
        samples = [s for ep, _ in eps for s in ep]
        docs = [d for _, ds in eps for d in ds]
        # The completion must be exactly how the renderer writes that turn in history, and
        # the parser rules must read it back into the same reasoning/content/tool calls.
        hist = renderer.render_history(samples)
        for s, d, h in zip(samples, docs, hist):
            assert d == h, f"completion differs from the rendered history:\n{d!r}\n{h!r}"
            check_parse(s)
            check_sample(s)
            total_eqs += verify_equations(s.final.reasoning)
        print(f"##### {kind}: {len(eps)} episodes, {len(samples)} documents; history renders "
              f"match, completions parse back, checks pass")
        for s, d in zip(samples, docs):
            print(f"----- {kind} thinking={s.thinking} effort={s.effort} meta={s.meta}")
            print(_show(d, args.show))

    # Larger sweep of the cheap checks (no rendering).
    sweep = 3000
    for kind in KINDS[1:]:
        make = episode_factory(kind, corpus, haystack_docs)
        r = stable_rng(args.seed, "sweep", kind)
        for _ in range(sweep if kind != "passkey" else 300):
            for s in make(r):
                check_sample(s)
                check_parse(s)
                total_eqs += verify_equations(s.final.reasoning)
    print(f"##### all checks passed ({total_eqs} equations verified)")


def run_retrieval(args):
    """The retrieval stage's data (docs/training.md): --retrieval pass-key episodes with
    haystacks of training prose, log-uniform 64-7168 tokens (bytes / 4: about 8K real tokens at most), and --retrieval-heldout episodes
    whose haystacks are held-out prose only (to measure retrieval on text never seen)."""
    t0 = time.time()
    renderer = Renderer(find_k3(args.k3), batching=not args.no_batch)
    with multiprocessing.Pool(2) as pool:
        corpus = data_prose.ProseCorpus(args.seed, pool)
    parts = {"retrieval": (args.retrieval, corpus._docs(corpus.train_pages, corpus.train_fortunes, 0)),
             "retrieval_heldout": (args.retrieval_heldout, corpus.heldout_docs())}
    os.makedirs(args.out, exist_ok=True)
    stats = {}
    for name, (n, hay) in parts.items():
        rng = stable_rng(args.seed, "retrieval", name)
        samples = []
        for _ in range(n):
            samples.append(data_passkey.passkey_sample(
                rng, hay, tokens=data_passkey.retrieval_tokens(rng), p_thinking=0.25))
        for s in samples:
            check_sample(s)
        docs = []
        for i in range(0, len(samples), BATCH):
            chunk = samples[i:i + BATCH]
            prompts = renderer.render_samples(chunk)
            docs += [p + s.completion() for p, s in zip(prompts, chunk)]
        write_docs(os.path.join(args.out, f"{name}.txt"), docs)
        stats[name] = {"episodes": len(docs), "bytes": sum(len(d.encode("utf-8")) + len(EOS) for d in docs)}
        log(f"{name}: {len(docs)} episodes, {stats[name]['bytes'] / 1e6:.2f} MB ({time.time() - t0:.1f} s)")
    with open(os.path.join(args.out, "retrieval_stats.json"), "w", encoding="utf-8") as f:
        json.dump({"seed": args.seed, **stats}, f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--k3", help="k3 binary (default: build/bin/k3 in the repository)")
    ap.add_argument("--scale", type=float, default=1.0, help="1.0 = ~30 MB of train text")
    ap.add_argument("--no-batch", action="store_true",
                    help="render one conversation per k3 process (slow; same output)")
    ap.add_argument("--retrieval", type=int, default=0,
                    help="write only the retrieval stage's data: this many pass-key episodes")
    ap.add_argument("--retrieval-heldout", type=int, default=200,
                    help="held-out-prose episodes written with --retrieval")
    ap.add_argument("--check", action="store_true", help="print samples and run self-checks")
    ap.add_argument("--check-n", type=int, default=20, help="episodes per kind for --check")
    ap.add_argument("--show", type=int, default=3000, help="characters shown per --check doc")
    args = ap.parse_args()
    if not (args.check or args.out):
        ap.error("give --out DIR (or --check)")
    try:
        if args.check:
            self_check(args)
        elif args.retrieval:
            run_retrieval(args)
        else:
            run(args)
    except data_prose.SourceMissing as e:
        sys.exit(f"make_data: {e}")


if __name__ == "__main__":
    main()
