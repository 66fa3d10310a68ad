"""Passkey retrieval episodes: find one sentence hidden in a long prose haystack.

The haystack is training prose only (never held-out text), 256-4096 tokens long (tokens
approximated as bytes / 4), with the needle inserted at a uniformly random depth, always
at a paragraph or sentence boundary so the surrounding text stays intact.  The key is drawn
again if the haystack happens to contain it, so the key occurs exactly twice in the user
message (both inside the needle) and once in the answer.
"""

import re

from data_render import Sample, Turn

NEEDLE = "The pass key is {k}. Remember it. {k} is the pass key."
QUESTION = "\n\nWhat is the pass key?"
_SENT_BOUNDARY = re.compile(r"(?<=[.!?]) (?=[A-Z])")


def _haystack(rng, docs, target):
    parts = []
    size = 0
    while size < target:
        d = rng.choice(docs)
        parts.append(d)
        size += len(d.encode("utf-8")) + 2
    text = "\n\n".join(parts)
    # Cut at the last paragraph (else sentence) boundary before the target length.
    cut = text.rfind("\n\n", 0, target)
    if cut < target * 0.8:
        m = None
        for m in _SENT_BOUNDARY.finditer(text, 0, target):
            pass
        cut = m.start() if m and m.start() > target * 0.5 else target
    return text[:cut].rstrip()


def _insert(text, depth, needle):
    """Insert at the paragraph or sentence boundary nearest to depth * len(text)."""
    spots = [(0, "para")]
    spots += [(m.start(), "para") for m in re.finditer(r"\n\n", text)]
    spots += [(m.start(), "sent") for m in _SENT_BOUNDARY.finditer(text)]
    spots.append((len(text), "para"))
    want = depth * len(text)
    pos, how = min(spots, key=lambda s: (abs(s[0] - want), s[0]))
    if how == "sent":
        return text[:pos] + " " + needle + text[pos:], pos / max(1, len(text))
    if pos == 0:
        return needle + "\n\n" + text, 0.0
    if pos == len(text):
        return text + "\n\n" + needle, 1.0
    return text[:pos] + "\n\n" + needle + text[pos:], pos / len(text)


def retrieval_tokens(rng, lo=64, hi=7168):
    """A haystack length for the retrieval stage: log-uniform in [lo, hi] tokens, so that
    short episodes (many answers per step, the mechanism learned fast) and long ones (the
    lengths `k3 niah` asks for) both get their share."""
    return int(round(lo * (hi / lo) ** rng.random()))


def passkey_sample(rng, train_docs, tokens=None, p_thinking=0.5):
    thinking = rng.random() < p_thinking
    effort = rng.choice([None, None, "low", "high", "max"]) if thinking else None
    tokens = tokens if tokens is not None else rng.randint(256, 4096)
    budget = tokens * 4 - len(NEEDLE) - len(QUESTION) - 20
    hay = _haystack(rng, train_docs, max(120, budget))
    while True:
        key = str(rng.randint(10000, 99999))
        if key not in hay:
            break
    needle = NEEDLE.format(k=key)
    text, depth = _insert(hay, rng.random(), needle)
    msgs = []
    if rng.random() < 0.15:
        msgs.append({"role": "system", "content": "You are a helpful assistant."})
    msgs.append({"role": "user", "content": text + QUESTION})
    think = f"The text says: The pass key is {key}." if thinking else ""
    return Sample("passkey", msgs, thinking, Turn(think, key), effort=effort,
                  meta={"key": key, "tokens": tokens, "depth": round(depth, 3)})
