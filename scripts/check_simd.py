#!/usr/bin/env python3
"""SIMD-placement check (docs/ARCHITECTURE.md, "Kernels and their twins").

Two rules, each a way a portable or mixed-ISA build breaks silently:
  1. x86 intrinsics (<immintrin.h>, _mm*_ calls, __m128/__m256/__m512 types) appear only in
     src/kernels/x86/, and in src/quant/ files that guard them with K3_SIMD_X86 (the
     quantizer's search, below kernels/ in the layering, keeps its AVX2 form beside its twin).
  2. With --objects BUILD_DIR: the objects of the files compiled with wider -m flags than the
     rest (src/kernels/x86/vec_dot_avx512.cpp, vec_dot_vnni.cpp) define no weak or unique
     symbols. An inline function or template instantiated there with external linkage is
     emitted in the wider encoding, and the linker may keep that copy for every caller, so an
     AVX2-only host would fault in code that never meant to use AVX-512.

    scripts/check_simd.py [REPO]
    scripts/check_simd.py --objects BUILD_DIR
    scripts/check_simd.py --self-test
Exit 1 with every violation listed.
"""
import os
import re
import subprocess
import sys
import tempfile

INTRINSIC = re.compile(r"#\s*include\s*<(immintrin|x86intrin|emmintrin|xmmintrin|smmintrin)\.h>|\b_mm\d*_\w+\s*\(|\b__m(128|256|512)[id]?\b")
WIDE_FILES = ("x86/vec_dot_avx512.cpp", "x86/gemm_q8_avx512.cpp", "x86/gemm_iq_avx512.cpp", "x86/vec_dot_vnni.cpp",
              "x86/gemm_vnni.cpp")


def check_sources(repo):
    bad = []
    src = os.path.join(repo, "src")
    for root, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".h", ".cpp")):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, repo)
            if rel.startswith(os.path.join("src", "kernels", "x86") + os.sep):
                continue
            text = open(path, encoding="utf-8").read()
            guarded = rel.startswith(os.path.join("src", "quant") + os.sep) and "K3_SIMD_X86" in text
            for no, line in enumerate(text.splitlines(), 1):
                code = line.split("//", 1)[0]
                if INTRINSIC.search(code) and not guarded:
                    bad.append(f"{rel}:{no}: x86 intrinsics outside src/kernels/x86/: {line.strip()}")
    return bad


def check_objects(build_dir):
    bad, seen = [], 0
    for root, _, files in os.walk(build_dir):
        for f in files:
            path = os.path.join(root, f)
            if not any(path.endswith(w + ".o") for w in WIDE_FILES):
                continue
            seen += 1
            out = subprocess.run(["nm", "-C", "--defined-only", path], capture_output=True, text=True,
                                 check=True).stdout
            for line in out.splitlines():
                parts = line.split(maxsplit=2)
                if len(parts) == 3 and parts[1] in ("W", "V", "u"):
                    bad.append(f"{os.path.relpath(path, build_dir)}: shared symbol ({parts[1]}) {parts[2]}")
    if seen == 0:
        bad.append(f"no object of {', '.join(WIDE_FILES)} under {build_dir} (not built, or a portable build)")
    return bad


def report(bad, what):
    for b in bad:
        print(b)
    print(f"{len(bad)} {what}")
    return 1 if bad else 0


def self_test():
    with tempfile.TemporaryDirectory() as d:
        files = {
            "src/kernels/x86/a.cpp": "#include <immintrin.h>\n__m256 f();\n",
            "src/quant/q.cpp": "#if defined(K3_SIMD_X86)\n#include <immintrin.h>\n#endif\n",
            "src/model/m.cpp": "// _mm256_add_ps( in a comment is fine\nfloat x = _mm256_cvtss_f32(v);\n",
        }
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            open(os.path.join(d, rel), "w").write(text)
        bad = check_sources(d)
        assert len(bad) == 1 and bad[0].startswith("src/model/m.cpp:2:"), bad
        # An object exporting an inline function is caught; one with internal linkage passes.
        obj_dir = os.path.join(d, "build", "x86")
        os.makedirs(obj_dir)
        for name, code in (("vec_dot_avx512.cpp", "inline int f(int x) { return x + 1; }\nint (*g)(int) = f;\n"),
                           ("vec_dot_vnni.cpp", "namespace { int f(int x) { return x + 1; } }\nint (*g)(int) = f;\n")):
            srcf = os.path.join(d, name)
            open(srcf, "w").write(code)
            subprocess.run(["c++", "-c", "-O1", srcf, "-o", os.path.join(obj_dir, name + ".o")], check=True)
        bad = check_objects(os.path.join(d, "build"))
        assert len(bad) == 1 and "vec_dot_avx512" in bad[0] and "f(int)" in bad[0], bad
    print("check_simd self-test: a stray intrinsic and an exported inline function are caught")
    return 0


def main(argv):
    if argv[1:2] == ["--self-test"]:
        return self_test()
    if argv[1:2] == ["--objects"]:
        return report(check_objects(argv[2]), "shared symbols in the wider-ISA objects")
    repo = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    return report(check_sources(repo), "intrinsics outside src/kernels/x86/")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
