// quant/fp_strict: turns off floating-point contraction (a·b + c → fma) for the rest of the
// including file. The reference quantizers were built without FMA (docs/quant-formats.md, ground
// rules), and the build targets FMA hosts, where g++ would otherwise fuse multiply-adds even in ISO
// C++ mode. Include it first in every k3_quant source that does float arithmetic whose rounding
// must match ggml.
#pragma once

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
