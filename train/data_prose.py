"""Prose corpus for k3-tiny training: Python 3.11 HTML docs + Debian fortunes.

Both sources come from Debian packages installed on the build machine, so the corpus is
offline and reproducible for a given package version:

* ``python3.11-doc``: ``/usr/share/doc/python3.11-doc/html/``.  Each page is reduced to its
  natural-language paragraphs (code, tables, signatures, navigation dropped) and split into
  documents of about 1-4 KB at paragraph boundaries.
* ``fortunes``: ``/usr/share/games/fortunes/``.  Entries are grouped 5-20 to a document.

The held-out split is made on *source units*, never on chunks: whole documentation pages
(taken in SHA-256 order of their path until they hold 3 % of the paragraph bytes) and single
fortune entries (a SHA-256 coin flip each).  So no held-out paragraph can show up in a
training document, even though the training prose is used for more than one pass with
different chunk boundaries; text the sources repeat is dropped from the held-out side.
"""

import hashlib
import html.parser
import os
import random
import re
import unicodedata

DOC_ROOT = "/usr/share/doc/python3.11-doc/html"
FORTUNE_ROOT = "/usr/share/games/fortunes"

# Control-token spellings that must never appear inside document text: the tokenizer would
# turn them into control tokens and corrupt the document structure.
FORBIDDEN_LITERALS = ("[EOS]", "[BOS]", "[EOT]", "[PAD]", "[UNK]")
_MARKER_RE = re.compile(r"<\|[^\n]*?\|>")


class SourceMissing(RuntimeError):
    pass


def has_forbidden(text):
    if any(tok in text for tok in FORBIDDEN_LITERALS):
        return True
    return _MARKER_RE.search(text) is not None


_SPACES_RE = re.compile(r"[ \u00a0\u2000-\u200a\u202f\u205f\u3000]+")
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))


def normalize(text):
    """NFC, no control characters except newline, single spaces, at most one blank line."""
    text = unicodedata.normalize("NFC", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    text = text.translate(_ZERO_WIDTH)
    text = "".join(ch for ch in text if ch == "\n" or unicodedata.category(ch) != "Cc")
    text = _SPACES_RE.sub(" ", text)
    lines = [ln.strip() for ln in text.split("\n")]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def unit_is_heldout(key, frac=0.03):
    """Deterministic held-out membership from a SHA-256 of the unit (never Python's hash())."""
    h = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big") < int(frac * 2**64)


def stable_rng(*parts):
    """An RNG whose stream depends only on its arguments, not on processing order."""
    h = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return random.Random(int.from_bytes(h[:8], "big"))


# --------------------------------------------------------------------------------------
# Python documentation
# --------------------------------------------------------------------------------------

# Pages that are navigation, indexes or boilerplate rather than prose.
_SKIP_PAGE_RE = re.compile(
    r"(^|/)(genindex[^/]*|py-modindex|search|contents|index|copyright|license|download"
    r"|changelog)\.html$")

_VOID = {"br", "img", "hr", "input", "meta", "link", "area", "base", "col", "embed",
         "source", "track", "wbr", "param"}
# Whole subtrees without running prose: code, tables, API signatures, navigation, math.
_SKIP_TAGS = {"pre", "table", "script", "style", "dt", "nav", "math", "svg", "form",
              "object", "button", "select", "textarea"}
_SKIP_CLASSES = {"highlight", "toctree-wrapper", "sphinxsidebar", "related", "footer",
                 "headerlink", "section-number", "contents", "audit-hook", "availability",
                 "admonition-title", "sig", "doctest", "rubric", "topic-title",
                 "versionmodified"}
_BLOCK_TAGS = {"p", "li", "dd", "div", "blockquote", "section", "dl", "ul", "ol",
               "figcaption", "caption", "h1", "h2", "h3", "h4", "h5", "h6", "article",
               "aside", "header", "footer", "figure", "body"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}


class _DocPageParser(html.parser.HTMLParser):
    """Collects (kind, text) blocks from the Sphinx main body: kind is 'h1'..'h6' or 'p'."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []          # (tag, skip, is_main)
        self.main_depth = None   # stack depth of <div role="main">
        self.skip_depth = 0      # number of open skipping elements
        self.buf = []
        self.buf_kind = "p"
        self.blocks = []

    def _flush(self):
        if self.buf:
            text = " ".join("".join(self.buf).split())
            if text:
                self.blocks.append((self.buf_kind, text))
        self.buf = []

    def _innermost_kind(self):
        for tag, _, _ in reversed(self.stack):
            if tag in _HEADINGS:
                return tag
        return "p"

    def handle_starttag(self, tag, attrs):
        if tag in _VOID:
            return
        ad = dict(attrs)
        classes = set((ad.get("class") or "").split())
        is_main = ad.get("role") == "main"
        skip = tag in _SKIP_TAGS or bool(classes & _SKIP_CLASSES) \
            or any(c.startswith("highlight") for c in classes)
        if tag in _BLOCK_TAGS and self.skip_depth == 0:
            self._flush()
        self.stack.append((tag, skip, is_main))
        if is_main and self.main_depth is None:
            self.main_depth = len(self.stack)
        if skip:
            self.skip_depth += 1
        if tag in _BLOCK_TAGS:
            self.buf_kind = self._innermost_kind()

    def handle_endtag(self, tag):
        if tag in _VOID:
            return
        # Pop to the matching element; tolerate stray end tags.
        idx = None
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                idx = i
                break
        if idx is None:
            return
        if tag in _BLOCK_TAGS and self.skip_depth == 0:
            self._flush()
        while len(self.stack) > idx:
            t, skip, is_main = self.stack.pop()
            if skip:
                self.skip_depth -= 1
            if self.main_depth is not None and len(self.stack) < self.main_depth:
                self._flush()
                self.main_depth = -1  # main body closed; ignore the rest of the page
        self.buf_kind = self._innermost_kind()

    def handle_data(self, data):
        if self.skip_depth or self.main_depth is None or self.main_depth < 0:
            return
        self.buf.append(data)


_SENT_END_RE = re.compile(r"[.!?][\"'”’)\]]*$")


def _good_paragraph(text):
    if len(text) < 60 or len(text.split()) < 9:
        return False
    if not _SENT_END_RE.search(text):
        return False  # "For example:" and friends lose their code block, so drop them
    if not (text[0].isalpha() or text[0] in "\"'“‘("):
        return False
    nonspace = [c for c in text if not c.isspace()]
    letters = sum(c.isalpha() for c in nonspace)
    if letters < 0.72 * len(nonspace):
        return False
    if "\ufffd" in text or has_forbidden(text):
        return False
    return True


def _clean_heading(text):
    text = text.replace("¶", "").strip()
    text = re.sub(r"^(\d+(\.\d+)*\.?\s+)", "", text)
    return text


def extract_doc_page(path):
    """Return (title, [items]) where items are ('h', text) or ('p', text)."""
    with open(path, "rb") as f:
        raw = f.read().decode("utf-8", "replace")
    parser = _DocPageParser()
    parser.feed(raw)
    parser.close()
    parser._flush()
    title = None
    items = []
    for kind, text in parser.blocks:
        text = normalize(text)
        if not text:
            continue
        if kind != "p":
            head = _clean_heading(text)
            if title is None and kind == "h1":
                title = head
            if head and 2 <= len(head) <= 120 and not has_forbidden(head):
                items.append(("h", head))
        elif _good_paragraph(text):
            items.append(("p", text))
    return title, items


def list_doc_pages(root=None):
    root = root or DOC_ROOT
    if not os.path.isdir(root):
        raise SourceMissing(
            f"Python documentation not found at {root}; install the Debian package "
            f"'python3.11-doc' (apt-get install python3.11-doc)")
    pages = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("_"))
        for fn in sorted(filenames):
            if not fn.endswith(".html"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, fn), root).replace(os.sep, "/")
            if _SKIP_PAGE_RE.search(rel):
                continue
            pages.append(rel)
    pages.sort()
    if not pages:
        raise SourceMissing(f"no HTML pages under {root}; reinstall 'python3.11-doc'")
    return pages


def chunk_page(items, rng, lo=1000, hi=4000):
    """Split a page's items into documents of ~lo..hi bytes at paragraph boundaries.

    A heading is kept only when a paragraph follows it, so no document ends on a heading.
    """
    docs = []
    cur = []
    cur_len = 0
    pending = []
    target = rng.randint(lo, hi)
    for kind, text in items:
        if kind == "h":
            pending.append(text)
            pending = pending[-2:]  # a section heading and its subsection at most
            continue
        piece = pending + [text]
        pending = []
        plen = sum(len(p.encode("utf-8")) + 2 for p in piece)
        if cur and cur_len + plen > hi:
            docs.append(cur)
            cur, cur_len = [], 0
            target = rng.randint(lo, hi)
        cur.extend(piece)
        cur_len += plen
        if cur_len >= target:
            docs.append(cur)
            cur, cur_len = [], 0
            target = rng.randint(lo, hi)
    if cur:
        # A short tail reads better merged into its predecessor than as its own document.
        if docs and cur_len < lo and sum(len(p) + 2 for p in docs[-1]) + cur_len <= hi + lo:
            docs[-1].extend(cur)
        elif cur_len >= 200:
            docs.append(cur)
    return ["\n\n".join(d) for d in docs]


def _extract_one(args):
    root, rel = args
    title, items = extract_doc_page(os.path.join(root, rel))
    return rel, title, items


def load_doc_pages(pool=None, root=None):
    """[(rel, title, items)] for every prose page, in sorted path order."""
    root = root or DOC_ROOT
    pages = list_doc_pages(root)
    work = [(root, rel) for rel in pages]
    results = pool.map(_extract_one, work, chunksize=8) if pool else map(_extract_one, work)
    out = []
    for rel, title, items in results:
        if sum(1 for k, _ in items if k == "p") == 0:
            continue
        out.append((rel, title, items))
    return out


# --------------------------------------------------------------------------------------
# Fortunes
# --------------------------------------------------------------------------------------

# ascii-art holds pictures, not prose; "off" is the offensive collection when installed.
_FORTUNE_SKIP_FILES = {"ascii-art"}
_FORTUNE_SKIP_DIRS = {"off"}


def load_fortune_entries(root=None):
    """[(file, entry_text)] in sorted file order, entries in file order."""
    root = root or FORTUNE_ROOT
    if not os.path.isdir(root):
        raise SourceMissing(
            f"fortune files not found at {root}; install the Debian package 'fortunes' "
            f"(apt-get install fortunes)")
    entries = []
    for fn in sorted(os.listdir(root)):
        path = os.path.join(root, fn)
        if fn in _FORTUNE_SKIP_DIRS or fn in _FORTUNE_SKIP_FILES:
            continue
        if "." in fn or os.path.islink(path) or not os.path.isfile(path):
            continue  # .dat indexes, .u8 symlinks
        with open(path, "rb") as f:
            raw = f.read().decode("utf-8", "replace")
        for chunk in re.split(r"^%[ \t]*$", raw, flags=re.M):
            text = normalize(chunk)
            if len(text) < 20 or "\ufffd" in text or has_forbidden(text):
                continue
            nonspace = [c for c in text if not c.isspace()]
            if sum(c.isalpha() for c in nonspace) < 0.6 * len(nonspace):
                continue  # drawings, tables and other non-prose entries
            entries.append((fn, text))
    if not entries:
        raise SourceMissing(f"no fortune entries under {root}; reinstall 'fortunes'")
    return entries


def group_fortunes(entries, rng, lo=5, hi=20, max_bytes=4000):
    """Group consecutive entries of the same file into documents of lo..hi entries
    (fewer when the group would pass max_bytes, so documents stay ~1-4 KB)."""
    by_file = []
    for fn, text in entries:
        if not by_file or by_file[-1][0] != fn:
            by_file.append((fn, []))
        by_file[-1][1].append(text)
    docs = []
    for fn, texts in by_file:
        i = 0
        while i < len(texts):
            n = rng.randint(lo, hi)
            group, size = [], 0
            while i < len(texts) and len(group) < n and (not group or size < max_bytes):
                group.append(texts[i])
                size += len(texts[i].encode("utf-8")) + 2
                i += 1
            docs.append("\n\n".join(group))
    return docs


# --------------------------------------------------------------------------------------
# The prose corpus
# --------------------------------------------------------------------------------------

def heldout_pages(pages, frac=0.03):
    """Whole pages, taken in SHA-256 order until they hold `frac` of the paragraph bytes.

    Pages differ a lot in size, so a per-page coin flip would miss the target share badly;
    walking a hash order reaches it while staying independent of file order and seed.
    """
    size = {rel: sum(len(t.encode("utf-8")) for k, t in items if k == "p")
            for rel, _, items in pages}
    total = sum(size.values())
    order = sorted(size, key=lambda rel: hashlib.sha256(("doc:" + rel).encode()).hexdigest())
    held, acc = set(), 0
    for rel in order:
        if acc >= frac * total:
            break
        if size[rel] > 0.01 * total:
            continue  # one huge page would overshoot; leave it to train
        held.add(rel)
        acc += size[rel]
    return held


class ProseCorpus:
    """Train and held-out prose documents, plus the train paragraphs other kinds reuse."""

    def __init__(self, seed, pool=None):
        self.seed = seed
        self.pages = load_doc_pages(pool)
        self.fortunes = load_fortune_entries()
        held = heldout_pages(self.pages)
        self.train_pages = [p for p in self.pages if p[0] not in held]
        self.heldout_pages = [p for p in self.pages if p[0] in held]
        self.train_fortunes = [e for e in self.fortunes
                               if not unit_is_heldout("fortune:" + e[0] + ":" + e[1])]
        self.heldout_fortunes = [e for e in self.fortunes
                                 if unit_is_heldout("fortune:" + e[0] + ":" + e[1])]
        # Paragraphs of training pages only: haystacks and summaries must not leak held-out text.
        self.train_paragraphs = [t for _, _, items in self.train_pages
                                 for k, t in items if k == "p"]
        # The sources repeat themselves a little (a paragraph shared by two pages, a fortune
        # in two files); such text is dropped from the held-out side so it is truly unseen.
        seen_p = set(self.train_paragraphs)
        self.heldout_pages = [(rel, title, [(k, t) for k, t in items
                                            if k != "p" or t not in seen_p])
                              for rel, title, items in self.heldout_pages]
        seen_f = {t for _, t in self.train_fortunes}
        self.heldout_fortunes = [e for e in self.heldout_fortunes if e[1] not in seen_f]

    def _docs(self, pages, fortunes, epoch):
        docs = []
        for rel, title, items in pages:
            rng = stable_rng(self.seed, "chunk", epoch, rel)
            chunks = chunk_page(items, rng)
            if chunks and title and not chunks[0].startswith(title):
                chunks[0] = title + "\n\n" + chunks[0]
            docs.extend(chunks)
        docs.extend(group_fortunes(fortunes, stable_rng(self.seed, "fortune", epoch)))
        return docs

    def heldout_docs(self):
        return self._docs(self.heldout_pages, self.heldout_fortunes, 0)

    def train_docs(self, target_bytes):
        """Training documents totalling about target_bytes.

        Each epoch is the whole unique corpus in a seeded order; when the corpus is smaller
        than the target, further epochs are re-chunked with fresh boundaries (and fortune
        groupings) and added until the target is met, the last one only partly.
        """
        out = []
        total = 0
        epoch = 0
        while total < target_bytes:
            docs = self._docs(self.train_pages, self.train_fortunes, epoch)
            stable_rng(self.seed, "epoch-order", epoch).shuffle(docs)
            for d in docs:
                if total >= target_bytes:
                    break
                out.append(d)
                total += len(d.encode("utf-8")) + 5
            epoch += 1
            if epoch > 20:
                break
        self.epochs_used = epoch
        return out
