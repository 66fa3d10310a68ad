#!/usr/bin/env python3
"""Function-length check: no function body in src/ (*.cpp, *.h) is longer than 150 lines.

A body is counted from the line of its opening brace to the line of its closing brace; lambdas
and local classes inside a function are part of it. The scan matches braces on the source with
comments, string and character literals (raw strings included) and preprocessor lines blanked
out, so it needs no compiler. A function is named by the classes around it and its own
(possibly qualified) name: `Server::Impl::routes`, `cmd_chat`.

Exceptions live in docs/decisions/long-functions.txt, one per line: `path function-name reason`.
An exception that matches no long function is an error too, so the list only shrinks.

    scripts/check_function_length.py ROOT
    scripts/check_function_length.py --self-test    # a made-up tree: long caught, short passes
Exit 1 with every problem listed.
"""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from lint_main import lint_main  # noqa: E402

LIMIT = 150
EXCEPTIONS = os.path.join("docs", "decisions", "long-functions.txt")

IDENT = re.compile(r"[A-Za-z_]\w*")
CLASS_KEY = re.compile(r"\b(class|struct|union|enum)\b")
ATTRIBUTES = re.compile(r"\[\[.*?\]\]|\b__attribute__\s*\(\(.*?\)\)|\balignas\s*\([^)]*\)")
ACCESS = re.compile(r"^\s*(public|private|protected)\s*:(?!:)")


def blank(text):
    """The source with comments, literals and preprocessor lines replaced by spaces (newlines
    kept), so that every brace left is a brace of the code and offsets still map to lines."""
    out = list(text)
    n, i = len(text), 0
    line_start = True  # only whitespace since the last newline

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if line_start and c == "#":
            j = i
            while j < n and (text[j] != "\n" or text[j - 1] == "\\"):
                j += 1
            wipe(i, j)
            i = j
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            wipe(i, j)
            i = j
        elif c == '"':
            prefix = re.search(r"(u8|u|U|L)?R$", text[max(0, i - 3):i])
            if prefix and not (i - len(prefix.group(0)) > 0 and
                               (text[i - len(prefix.group(0)) - 1].isalnum() or
                                text[i - len(prefix.group(0)) - 1] == "_")):
                delim_end = text.find("(", i)
                close = ")" + text[i + 1:delim_end] + '"'
                j = text.find(close, delim_end)
                j = n if j < 0 else j + len(close)
            else:
                j = i + 1
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                j += 1
            wipe(i, j)
            i = j
        elif c == "'":
            k = i
            while k > 0 and (text[k - 1].isalnum() or text[k - 1] in "_'."):
                k -= 1
            if k < i and text[k].isdigit():  # a digit separator: 1'000'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            j += 1
            wipe(i, j)
            i = j
        else:
            i += 1
    return "".join(out)


def match_brace(code, i):
    """The offset of the brace that closes the one at i (len(code) if it never closes)."""
    depth = 0
    for j in range(i, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code)


def strip_template(head):
    """The head without leading `template <...>` clauses."""
    while True:
        m = re.match(r"\s*template\s*<", head)
        if not m:
            return head
        depth, j = 1, m.end()
        while j < len(head) and depth:
            depth += {"<": 1, ">": -1}.get(head[j], 0)
            j += 1
        head = head[j:]


def param_open(head):
    """The offset of the `(` that opens a function's parameters in head, or -1: the first
    parenthesis outside template brackets, after `operator...` when the name is an operator."""
    m = re.search(r"\boperator\b\s*(\(\s*\)|[^\s(\w]+|[\w\s:<>*&]+?(?=\())", head)
    if m:
        j = head.find("(", m.end())
        return j
    angle = 0
    for j, c in enumerate(head):
        if c == "<":
            angle += 1
        elif c == ">" and angle:
            angle -= 1
        elif c == "(" and angle == 0:
            return j
    return -1


def close_paren(head, j):
    depth = 0
    for k in range(j, len(head)):
        if head[k] == "(":
            depth += 1
        elif head[k] == ")":
            depth -= 1
            if depth == 0:
                return k
    return -1


def name_before(head, j):
    """The possibly qualified name just before offset j (operators and destructors too)."""
    m = re.search(r"((?:[A-Za-z_]\w*(?:<[^()]*?>)?\s*::\s*)*~?\s*(?:operator\b\s*(?:\(\s*\)|[^\s(\w]+"
                  r"|[\w\s:<>*&]+?)|[A-Za-z_]\w*))\s*$", head[:j])
    return re.sub(r"\s+", "", m.group(1)) if m else ""


def scan(code, start, end, classes, found, line_of):
    """Walks a namespace or class scope code[start:end], adding (offset, name, open, close) to
    found for every function body in it, and descending into nested namespaces and classes."""
    head_start = start
    i = start
    while i < end:
        c = code[i]
        if c == ";":
            head_start = i + 1
        elif c == "}":
            head_start = i + 1
        elif c == "{":
            raw = code[head_start:i]
            head = raw
            while True:
                stripped = ACCESS.sub("", head, count=1)
                if stripped == head:
                    break
                head = stripped
            head = ATTRIBUTES.sub(lambda m: " " * len(m.group(0)), head)
            head_off = head_start + (len(raw) - len(head))
            close = match_brace(code, i)
            if head.count("(") > head.count(")") or re.search(r"=\s*$|\breturn\s*$", head):
                # a brace inside parentheses (a lambda or braced argument) or an initializer:
                # part of a declaration still being read
                i = close + 1
                continue
            body = strip_template(head)
            body_off = head_off + (len(head) - len(body))
            p = param_open(body)
            key = CLASS_KEY.search(body)
            if key and (p < 0 or p > key.start()) and "(" not in body[key.end():]:
                m = IDENT.findall(body[key.end():].split(":")[0].replace("final", ""))
                inner = m[-1] if m and m[-1] != "class" else ""
                scan(code, i + 1, close, classes + ([inner] if inner else ["<anon>"]), found, line_of)
                head_start = i = close + 1
                continue
            if p < 0 or re.search(r"(?<![=!<>])=(?!=)", re.sub(r"\boperator\b.*", "", body[:p])):
                if re.search(r"\bnamespace\b|\bextern\b", body) and p < 0:
                    scan(code, i + 1, close, classes, found, line_of)
                head_start = i = close + 1
                continue
            q = close_paren(body, p)
            after = body[q + 1:] if q >= 0 else ""
            if re.match(r"\s*:(?!:)", after) and re.search(r"[\w>]\s*$", body):
                # a braced member initializer in a constructor's init list: `x_{1}`
                i = close + 1
                continue
            name = name_before(body, p)
            if name:
                qual = "::".join(classes + [name])
                found.append((line_of(body_off + p), qual, line_of(i), line_of(close)))
            head_start = i = close + 1
            continue
        i += 1


def functions(text):
    """(line, name, body lines) of every function body in a C++ source."""
    code = blank(text)
    starts = [m.start() for m in re.finditer("\n", code)]

    def line_of(off):
        lo, hi = 0, len(starts)
        while lo < hi:
            mid = (lo + hi) // 2
            if starts[mid] < off:
                lo = mid + 1
            else:
                hi = mid
        return lo + 1

    found = []
    scan(code, 0, len(code), [], found, line_of)
    return [(line, name, close - open_ + 1) for line, name, open_, close in found]


def read_exceptions(root):
    path = os.path.join(root, EXCEPTIONS)
    entries = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for no, line in enumerate(f, 1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                parts = line.split(None, 2)
                entries.append((no, parts[0], parts[1] if len(parts) > 1 else "",
                                parts[2] if len(parts) > 2 else ""))
    return entries


def check(root):
    long_ones = []
    for d, dirs, files in os.walk(os.path.join(root, "src")):
        dirs.sort()
        for f in sorted(files):
            if f.endswith((".cpp", ".h")):
                path = os.path.join(d, f)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                for line, name, n in functions(text):
                    if n > LIMIT:
                        long_ones.append((rel, line, name, n))
    problems, used, excused = [], set(), 0
    entries = read_exceptions(root)
    for no, path, name, reason in entries:
        if not name or not reason:
            problems.append(f"{EXCEPTIONS}:{no}: want `path function-name reason`")
    allowed = {(path, name): no for no, path, name, _ in entries}
    for rel, line, name, n in long_ones:
        no = allowed.get((rel, name))
        if no is None:
            problems.append(f"{rel}:{line} {name} ({n} lines)")
        else:
            used.add(no)
            excused += 1
    for no, path, name, _ in entries:
        if name and no not in used:
            problems.append(f"{EXCEPTIONS}:{no}: {path} {name} is no longer over {LIMIT} lines "
                            "(or no longer exists): delete the entry")
    for p in problems:
        print(p)
    print(f"check_function_length: {len(long_ones)} functions over {LIMIT} lines, {excused} of them "
          f"listed in {EXCEPTIONS}, {len(problems)} problems")
    return 1 if problems else 0


def self_test():
    body = "".join(f"  x += {k};\n" for k in range(LIMIT))
    tricky = ('  const char* s = "}{";\n  char c = \'{\';\n  // }\n  /* { */\n'
              '  auto r = R"x(})x";\n  int big = 1\'000;\n')
    src = ("#include <string>\n#define OPEN {\nnamespace a {\nstruct Box {\n  int v{0};\n"
           "  int tall(int x) {\n" + tricky + body + "    return x;\n  }\n};\n"
           "Box::Box() : v_{1}, w_(2) {\n  int x = 0;\n}\n"
           "int short_one(int x) {\n  auto f = [&] { return x; };\n  return f();\n}\n"
           "}  // namespace a\n")
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "src", "m"))
        os.makedirs(os.path.join(root, "docs", "decisions"))
        with open(os.path.join(root, "src", "m", "x.cpp"), "w") as f:
            f.write(src)
        got = functions(src)
        names = [(name, n) for _, name, n in got]
        assert names == [("Box::tall", LIMIT + 9), ("Box::Box", 3), ("short_one", 4)], names

        def run():
            import io
            import contextlib
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = check(root)
            return rc, buf.getvalue()

        rc, out = run()
        assert rc == 1 and f"src/m/x.cpp:6 Box::tall ({LIMIT + 9} lines)" in out, out
        exc = os.path.join(root, EXCEPTIONS)
        with open(exc, "w") as f:
            f.write("# path function reason\nsrc/m/x.cpp Box::tall to be split\n")
        rc, out = run()
        assert rc == 0 and "1 of them listed" in out, out
        with open(exc, "a") as f:
            f.write("src/m/x.cpp short_one to be split\n")
        rc, out = run()
        assert rc == 1 and "short_one is no longer over" in out, out
    print("check_function_length self-test: a long function is caught, a short one passes, "
          "a stale exception is an error")
    return 0


if __name__ == "__main__":
    sys.exit(lint_main(__doc__, self_test, check))
