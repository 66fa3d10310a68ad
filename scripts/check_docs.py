#!/usr/bin/env python3
"""Checks the project's Markdown: every relative link and every repository path written in
backticks names something that exists, every #anchor names a heading of its page, and the
reader-facing docs (README.md, ARCHITECTURE.md, docs/, bench/) cite no tracker numbers, which a reader
of the repository cannot follow.

Usage: check_docs.py ROOT        check the tree at ROOT (exit 1 with one line per problem)
       check_docs.py --self-test check the checker on made-up pages
"""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from lint_main import lint_main  # noqa: E402

# Pages checked: every Markdown file outside dependencies and build outputs.
SKIP_DIRS = {".git", "node_modules", "third_party", "build", ".cache"}
# Reader-facing pages, where "issue 19" means nothing to the reader.
NO_TRACKER = ("README.md", "ARCHITECTURE.md", "docs/", "bench/")
# Backticked text that starts like one of these is a repository path.
PATH_ROOTS = ("src/", "docs/", "tests/", "scripts/", "bench/", "train/", "fuzz/", "models/", ".ci/")

LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
TRACKER = re.compile(r"\b[Ii]ssues? #?\d+\b")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache):
    if path not in cache:
        found, seen, fence = set(), {}, False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.lstrip().startswith("```"):
                    fence = not fence
                    continue
                m = None if fence else HEADING.match(line)
                if m:
                    s = slug(m.group(1))
                    n = seen.get(s, 0)
                    seen[s] = n + 1
                    found.add(s if n == 0 else f"{s}-{n}")
        cache[path] = found
    return cache[path]


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks."""
    fence = False
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            if not fence:
                yield no, line


def looks_like_path(text):
    if not text.startswith(PATH_ROOTS) or " " in text:
        return False
    # Placeholders and patterns name no one file: globs, <...>, {a,b}, NNNN, …
    return not re.search(r"[*?<>{}…$|]|NNNN|XXXX|\b(NAME|OUT|IN|FILE|MODEL|PATH)\b", text)


def check_page(root, rel, cache, problems):
    path = os.path.join(root, rel)
    here = os.path.dirname(path)
    reader_facing = rel.startswith(NO_TRACKER)
    for no, line in prose_lines(path):
        where = f"{rel}:{no}"
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:, …
                continue
            file_part, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(here, file_part)) if file_part else path
            if not os.path.exists(dest):
                problems.append(f"{where}: link to {target}: no such file")
            elif frag and dest.endswith(".md") and frag not in anchors(dest, cache):
                problems.append(f"{where}: link to {target}: no heading with that anchor")
        for span in CODE_SPAN.findall(line):
            text = span.strip()
            text = re.sub(r":\d+(-\d+)?(,\d+(-\d+)?)*$", "", text)  # file:line
            if looks_like_path(text) and not os.path.exists(os.path.join(root, text.rstrip("/"))):
                problems.append(f"{where}: `{span}`: no such path")
        if reader_facing:
            for m in TRACKER.finditer(line):
                problems.append(f"{where}: cites the tracker ('{m.group(0)}'); say what, not which issue")


def pages(root):
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("build"))
        for f in sorted(files):
            if f.endswith(".md"):
                yield os.path.relpath(os.path.join(d, f), root)


def check_tree(root):
    problems, cache = [], {}
    for rel in pages(root):
        check_page(root, rel, cache, problems)
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        os.makedirs(os.path.join(root, "src/a"))
        open(os.path.join(root, "src/a/b.cpp"), "w").close()
        with open(os.path.join(root, "docs/x.md"), "w") as f:
            f.write("# Title\n\n## Two words\n\nSee [y](y.md), [two](#two-words), [bad](#nope),\n"
                    "[ext](https://example.com), `src/a/b.cpp:12`, `src/a/c.cpp`, `src/*.cpp`.\n"
                    "Fixed in issue 19.\n```\n[z](z.md) `src/q.cpp` issue 3\n```\n")
        with open(os.path.join(root, "docs/y.md"), "w") as f:
            f.write("Back to [x](x.md#title).\n")
        with open(os.path.join(root, "NOTES.md"), "w") as f:
            f.write("issue 7 is fine here\n")
        got = check_tree(root)
        want = ["docs/x.md:5: link to #nope: no heading with that anchor",
                "docs/x.md:6: `src/a/c.cpp`: no such path",
                "docs/x.md:7: cites the tracker ('issue 19'); say what, not which issue"]
        if got != want:
            print("self-test failed:\n  got  " + "\n       ".join(got) + "\n  want " + "\n       ".join(want))
            return 1
    print("check_docs self-test: ok")
    return 0


def report(root):
    problems = check_tree(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check_docs: {len(problems)} problem(s)")
        return 1
    print("check_docs: every link, anchor and path resolves; no tracker citations")
    return 0


if __name__ == "__main__":
    sys.exit(lint_main(__doc__, self_test, report))
