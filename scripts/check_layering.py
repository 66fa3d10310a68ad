#!/usr/bin/env python3
"""Include-layering check: a module includes only itself and the modules below it.

The dependency graph is read from CMakeLists.txt, the one place it is written: each
`k3_module(NAME DEPS...)` line and the `target_link_libraries(k3 ...)` of the binary (src/cli).
An include "mod/..." in src/NAME/ is allowed when mod is NAME or a module NAME depends on,
directly or through others. Exit 1 with every violation listed.

    scripts/check_layering.py [REPO]
    scripts/check_layering.py --self-test    # proves on a small made-up tree that it catches
"""
import os
import re
import subprocess
import sys
import tempfile


def self_test():
    """A three-module tree: top -> mid -> low. low including mid must be caught, top
    including low (through mid) must pass, and so must the same tree without the bad line."""
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "CMakeLists.txt"), "w").write(
            "k3_module(low fmt::fmt)\nk3_module(mid k3_low)\nk3_module(top k3_mid)\n"
            "target_link_libraries(k3 PRIVATE k3_top)\n")
        for mod, text in {"low": '#include "mid/m.h"\n', "mid": '#include "low/l.h"\n',
                          "top": '#include "low/l.h"\n#include "mid/m.h"\n', "cli": '#include "top/t.h"\n'}.items():
            os.makedirs(os.path.join(d, "src", mod))
            open(os.path.join(d, "src", mod, "x.cpp"), "w").write(text)
        run = lambda: subprocess.run([sys.executable, __file__, d], capture_output=True, text=True)
        r = run()
        assert r.returncode == 1 and "src/low/x.cpp:1: low/ includes mid/" in r.stdout \
            and "1 layering violations" in r.stdout, r.stdout
        open(os.path.join(d, "src", "low", "x.cpp"), "w").write("// nothing above\n")
        r = run()
        assert r.returncode == 0 and "0 layering violations" in r.stdout, r.stdout
    print("check_layering self-test: a violation is caught, a clean tree passes")
    sys.exit(0)


if sys.argv[1:] == ["--self-test"]:
    self_test()
repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
cmake = open(os.path.join(repo, "CMakeLists.txt"), encoding="utf-8").read()
deps = {}
for m in re.finditer(r"^k3_module\((\w+)([^)]*)\)", cmake, re.M):
    deps[m.group(1)] = [d[3:] for d in m.group(2).split() if d.startswith("k3_")]
m = re.search(r"^target_link_libraries\(k3 PRIVATE([^)]*)\)", cmake, re.M)
if not m or not deps:
    sys.exit("check_layering: cannot find the module graph in CMakeLists.txt")
deps["cli"] = [d[3:] for d in m.group(1).split() if d.startswith("k3_")]
# k3_httplib is an interface target for a vendored header, not a module of ours
deps = {k: [d for d in v if d in deps or d == "cli"] for k, v in deps.items()}


def below(name, seen=None):
    seen = set() if seen is None else seen
    for d in deps.get(name, []):
        if d not in seen:
            seen.add(d)
            below(d, seen)
    return seen


modules = set(deps)
include = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/', re.M)
bad = []
n_files = 0
for mod in sorted(modules):
    allowed = below(mod) | {mod}
    root = os.path.join(repo, "src", mod)
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith((".cpp", ".h")):
                continue
            path = os.path.join(dirpath, f)
            n_files += 1
            text = open(path, encoding="utf-8").read()
            for inc in include.finditer(text):
                target = inc.group(1)
                if target in modules and target not in allowed:
                    line = text.count("\n", 0, inc.start()) + 1
                    bad.append(f"{os.path.relpath(path, repo)}:{line}: {mod}/ includes {target}/, "
                               f"which is not below it (allowed: {', '.join(sorted(allowed))})")
for b in bad:
    print(b)
print(f"check_layering: {n_files} files in {len(modules)} modules, {len(bad)} layering violations")
sys.exit(1 if bad else 0)
