#!/usr/bin/env python3
"""Checks the commit messages made since this check was added: a subject of at most 72
characters in the form `area: change` (areas may be joined, `grammar+server:`), and a body
that says why for any commit that changes more than 40 lines. Merge commits are not checked.

Usage: check_commits.py ROOT        check ROOT's history (exit 77 when there is none to read:
                                    not a git checkout, or a shallow one without the start)
       check_commits.py --self-test check the rules on made-up messages
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from lint_main import lint_main  # noqa: E402

MAX_SUBJECT = 72
BODY_OVER_LINES = 40
SUBJECT = re.compile(r"^[a-z0-9][a-z0-9_./+-]*(, ?[a-z0-9][a-z0-9_./+-]*)*: \S")
SKIP = 77  # CTest's SKIP_RETURN_CODE for this test


def problems_of(sha, subject, body, lines):
    out = []
    if len(subject) > MAX_SUBJECT:
        out.append(f"{sha}: subject is {len(subject)} characters (at most {MAX_SUBJECT}): {subject[:80]}")
    if not SUBJECT.match(subject):
        out.append(f"{sha}: subject is not 'area: change': {subject[:80]}")
    if lines > BODY_OVER_LINES and not body.strip():
        out.append(f"{sha}: changes {lines} lines but has no body saying why")
    return out


def git(root, *args):
    return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, check=True).stdout


def check(root):
    try:
        git(root, "rev-parse", "--git-dir")
    except (subprocess.CalledProcessError, FileNotFoundError):
        print("check_commits: not a git checkout; skipped")
        return SKIP
    added = git(root, "log", "--diff-filter=A", "--format=%H", "--", "scripts/check_commits.py").split()
    if not added:
        print("check_commits: this check is not committed yet; nothing to check")
        return 0
    start = added[-1]
    has_parent = subprocess.run(["git", "-C", root, "rev-parse", "--verify", "--quiet", start + "^"],
                                capture_output=True).returncode == 0
    rev_range = f"{start}^..HEAD" if has_parent else "HEAD"
    shas = git(root, "rev-list", "--no-merges", rev_range).split()
    problems = []
    for sha in shas:
        msg = git(root, "log", "-1", "--format=%B", sha)
        subject, _, body = msg.partition("\n")
        lines = 0
        for row in git(root, "show", "--numstat", "--format=", sha).splitlines():
            cols = row.split("\t")
            if len(cols) == 3 and cols[0].isdigit() and cols[1].isdigit():
                lines += int(cols[0]) + int(cols[1])
        problems += problems_of(sha[:10], subject.strip(), body, lines)
    for p in problems:
        print(p)
    if problems:
        print(f"check_commits: {len(problems)} problem(s) in {len(shas)} commits since {start[:10]}")
        return 1
    print(f"check_commits: {len(shas)} commits since {start[:10]} are well formed")
    return 0


def self_test():
    cases = [
        (("grammar: bounded masks", "", 10), 0),
        (("grammar+server: bounded masks", "why", 500), 0),
        (("docs, bench: numbers", "", 3), 0),
        (("Fix the thing", "", 3), 1),
        (("grammar: " + "x" * 70, "", 3), 1),
        (("grammar: big change", "", 41), 1),
        (("grammar: big change", "\nbecause", 41), 0),
        (("area:missing space", "", 1), 1),
    ]
    bad = 0
    for (subject, body, lines), want in cases:
        got = len(problems_of("0000000000", subject, body, lines))
        if got != want:
            print(f"self-test: {subject!r} ({lines} lines): {got} problems, want {want}")
            bad += 1
    if bad:
        return 1
    print("check_commits self-test: ok")
    return 0


if __name__ == "__main__":
    sys.exit(lint_main(__doc__, self_test, check))
