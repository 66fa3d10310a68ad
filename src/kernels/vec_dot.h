// kernels/vec_dot: per-weight-type dot products between one weight row (in its GGUF encoding)
// and up to kMaxDotTokens activation rows in the type's activation format (ggml's pairing,
// docs/quant-formats.md: Q8_0 for 32-blocks, Q8_K for k/i-quants, f32 for
// F32/F16/BF16 — ggml rounds the activations to f16/bf16 there; we keep them f32).
// Contract: dot(n, w, act, act_stride, nt, out) sets out[t] = Σ_k W[k]·A_t[k] for t < nt
// (1 ≤ nt ≤ kMaxDotTokens), A_t at act + t·act_stride bytes; the weight row is decoded once
// and applied to all nt tokens (the prefill tile). dot_scalar is the plain-C twin computing the
// same integer sums per block (only float accumulation order may differ). n is a multiple of
// the weight block size. dot_kernel() returns nullptr for types without a fast path (callers
// fall back to dequantize + f32 dot).
// dot_rows(n, w, row_stride, n_rows, act, out), where a type has it, is decode over several
// rows: out[r] = the one-token dot of row r (at w + r·row_stride), bit for bit what dot(n, row,
// act, 0, 1, &out[r]) gives; it shares each activation load among a few rows and pays the
// per-row setup once per group, which matters for the short rows of expert and latent
// matrices (a 1024-wide IQ1_M row is 4 super-blocks). Null: callers loop over dot.
// gemm, where a type has it, is the prefill product of a run of rows and many tokens:
//   act_sums(n, act, act_stride, n_tok, sums) once per run: what the type's gemm needs of the
//     tokens, in gemm_sums_ints(n, n_tok) int32s: Q8_0, per token and block, Σ of the
//     activation bytes (sums[t·n/32 + b]; nothing for the AVX2 form, x86/gemm_q8_loops.h);
//     IQ2_XXS and IQ1_M, the tokens repacked into tiles of 16 (x86/gemm_iq_avx512.cpp) or,
//     in the same room, of 8 (the AVX2 and AVX-VNNI forms, x86/gemm_iq_loops.h);
//   gemm(n, w, row_stride, n_rows, act, act_stride, sums, n_tok, y, y_stride, panel): y[t·y_stride
//     + r] = Σ_k W_r[k]·A_t[k] for r < n_rows, t < n_tok; panel is scratch of
//     gemm_panel_bytes(n). Each block's integer sum is the one dot() makes and blocks are
//     accumulated in order; results are within float rounding of dot(), not bit for bit.
// Null: callers use dot over groups of kMaxDotTokens tokens.
// dot_rows_decode is dot_rows over a copy of the rows in the type's decode layout, made in
// memory where the CPU has the kernel (kernels/decode_layout.h; WeightView::decode).
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace k3::kernels {

inline constexpr int kMaxDotTokens = 4;
// Minimum tokens for which the gemm form pays (its panel repack is shared by the tokens).
inline constexpr int kGemmMinTokens = 8;
inline constexpr size_t gemm_panel_bytes(int64_t n) { return static_cast<size_t>(n / 32) * (512 + 64) + 64; }
// int32s per token tile of 16 and super-block of the IQ gemms' repacked activations: 64 lines
// of 16 tokens' 4 bytes, 16 lines of sub-block sums, the 16 tokens' scales.
inline constexpr int64_t kTileSuperblockInts = 64 * 16 + 16 * 16 + 16;
inline constexpr size_t gemm_sums_ints(int64_t n, int64_t n_tok) {
  const int64_t q8_0 = n_tok * (n / 32);
  const int64_t tiles = (n_tok + 15) / 16 * (n / 256) * kTileSuperblockInts + 16;  // + 16: 64-byte alignment
  return static_cast<size_t>(q8_0 > tiles ? q8_0 : tiles);
}

// How far ahead (bytes) the decode kernels that stream a row once (Q8_0, MXFP4, F32/F16/BF16,
// the AVX2 k-quants) ask for its lines into L2: 3 KiB on Intel (x86/q8_loops.h has the
// measurements), 6 KiB on AMD (docs/kernels.md, "matmul"). K3_PREFETCH=3072|6144
// overrides it (comparisons). tools/bench/membw reads at both distances too (stream_read.h), so
// that no kernel out-prefetches the roofline.
// A plain global read (the kernels take it once per row), chosen at startup.
inline constexpr int kDecodePrefetchIntel = 3072, kDecodePrefetchAmd = 6144;
extern const int g_decode_prefetch_bytes;
inline int decode_prefetch_bytes() { return g_decode_prefetch_bytes; }

enum class ActFormat { F32, Q8_0, Q8_K };

using DotFn = void (*)(int64_t n, const void* w, const void* act, size_t act_stride, int nt, float* out);
using DotScalarFn = float (*)(int64_t n, const void* w, const void* act);
using DotRowsFn = void (*)(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                           float* out);
using ActSumsFn = void (*)(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* sums);
using GemmFn = void (*)(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                        size_t act_stride, const int32_t* sums, int64_t n_tok, float* y, size_t y_stride,
                        void* panel);

struct DotKernel {
  quant::Type type;
  ActFormat act;
  DotFn dot;               // SIMD (x86/), 1..kMaxDotTokens tokens; the twin per token in a portable build
  DotScalarFn dot_scalar;  // reference twin, one token
  DotRowsFn dot_rows = nullptr;  // decode over several rows, where the type has it
  ActSumsFn act_sums = nullptr;  // prefill over many tokens (gemm), where the type has it
  GemmFn gemm = nullptr;
  // dot_rows over rows in the type's decode layout (kernels/decode_layout.h), with dot_rows's
  // results bit for bit; null where the type has none or this CPU no kernel for it (then no
  // decode copy is made).
  DotRowsFn dot_rows_decode = nullptr;
  // gemm over the same rows in the decode layout, with the type's act_sums and gemm's results
  // bit for bit; where the path has one (the 256-bit IQ gemms), prefill reads the decode copy
  // too, whose bytes unpack without table lookups.
  GemmFn gemm_decode = nullptr;
};

const DotKernel* dot_kernel(quant::Type t);

// The kernel set this process runs: "avx512", "avx-vnni" or "avx2" (x86: the CPU's widest, or
// what K3_CPU asks for, docs/kernels.md), "portable" (the plain-C build).
const char* cpu_kernels();

// Bytes of one activation row of n elements in format f.
size_t act_row_bytes(ActFormat f, int64_t n);
// Converts n floats to format f (F32: plain copy).
void quantize_act_row(ActFormat f, const float* x, void* dst, int64_t n);

}  // namespace k3::kernels
