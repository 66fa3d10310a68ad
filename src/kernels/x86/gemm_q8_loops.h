// kernels/x86/gemm_q8_loops: the 256-bit prefill product for Q8_0 weights (vec_dot.h,
// DotKernel::act_sums and gemm), written once and compiled twice over the int8 product `Dot`:
// plain AVX2 (gemm_avx2.cpp) and AVX-VNNI (gemm_vnni.cpp, chosen at run time). The scheme is
// gemm_q8_avx512.cpp's with 8 int32 lanes:
// - 8 rows at a time are repacked into a panel: per block and group of 4 columns, the 8 rows'
//   4 weights side by side in one 32-byte line; the 8 rows' scales in another;
// - a token's 4 activations of a group are broadcast to the 8 lanes, so one int8 product
//   makes 32 products for 8 rows, and after the block's 8 groups each lane holds its row's
//   block sum: one conversion, one scale product and one FMA serve 8 rows; T tokens share
//   each panel line.
// The int8 product is where the two builds differ:
// - AVX2 (Dot::kOffset false): the panel keeps the signed weights and each group is
//   maddubs(|w|, sign(a, w)) then madd with ones. The AVX-512 kernel's "+128 unsigned
//   weights" cannot go through maddubs: 255·127·2 > 32767 saturates its int16 pair sums,
//   while |w|·|a|·2 ≤ 128·127·2 < 32767 cannot. No activation sums are needed.
// - AVX-VNNI (Dot::kOffset true): vpdpbusd sums in int32 without saturating, so the panel
//   holds w + 128 (unsigned) and one instruction per group does the products and sums; the
//   128·Σa this adds is known per token and block (act_sums) and starts the accumulator
//   negated, as in the AVX-512 kernel.
// Either way the int32 lane is exactly the block's Σ w·a (|lane| ≤ 32·255·128 < 2^31), the
// integer the row kernel makes; blocks are accumulated in order, one FMA each, so results
// differ from dot() only in float rounding (VecDotGemm.* checks every output against the twin).
// Internal linkage, like simd.h: each including file keeps its own copy in its own encoding.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/act_quant.h"
#include "kernels/vec_dot.h"
#include "kernels/vec_dot_impl.h"
#include "kernels/x86/simd.h"
#include "quant/blocks.h"

namespace k3::kernels::impl {
namespace {

namespace q8gemm {

constexpr int kPanelRows = 8;   // one ymm of int32 lanes
constexpr int kGroupBytes = 4;  // one int32 lane sums 4 byte products
constexpr int kGroups = 32 / kGroupBytes;
constexpr int kPanelBlockBytes = kGroups * kPanelRows * kGroupBytes;  // 256
// The panel and its scales fit the caller's scratch (vec_dot.h, sized for the AVX-512 panel).
static_assert(kPanelBlockBytes + kPanelRows * sizeof(float) + 32 <= gemm_panel_bytes(32));

// Transposes 8 rows of 8 int32 (one Q8_0 block's 8 groups of each of the 8 rows) in place: v[g]
// then holds group g of rows 0..7, the panel line.
inline void transpose8x8_epi32(__m256i* v) {
  __m256i a[8], b[8];
  K3_UNROLL for (int i = 0; i < 8; i += 2) {
    a[i] = _mm256_unpacklo_epi32(v[i], v[i + 1]);  // r_i g0 r_i+1 g0 r_i g1 r_i+1 g1 | g4 g5
    a[i + 1] = _mm256_unpackhi_epi32(v[i], v[i + 1]);
  }
  K3_UNROLL for (int i = 0; i < 8; i += 4) {
    b[i] = _mm256_unpacklo_epi64(a[i], a[i + 2]);  // rows i..i+3 of g0 | g4
    b[i + 1] = _mm256_unpackhi_epi64(a[i], a[i + 2]);
    b[i + 2] = _mm256_unpacklo_epi64(a[i + 1], a[i + 3]);
    b[i + 3] = _mm256_unpackhi_epi64(a[i + 1], a[i + 3]);
  }
  K3_UNROLL for (int g = 0; g < 4; ++g) {
    v[g] = _mm256_permute2x128_si256(b[g], b[g + 4], 0x20);
    v[g + 4] = _mm256_permute2x128_si256(b[g], b[g + 4], 0x31);
  }
}

// The panel of rows [0, n_rows) (n_rows ≤ 8) of nb blocks, weights as Dot wants them (signed,
// or + 128), interleaved by group: per block the 8 rows' blocks transposed as int32s; scales
// as floats. Absent rows repeat row 0 (their results are never stored). Vectorised: with the
// 16 tokens an expert or a short micro-batch brings, a scalar repack cost ~20 % of the product.
template <class Dot>
void repack_panel(const uint8_t* w, size_t row_stride, int n_rows, int64_t nb, uint8_t* pw, float* ps) {
  const blk::Q8_0* x[kPanelRows];
  for (int r = 0; r < kPanelRows; ++r)
    x[r] = reinterpret_cast<const blk::Q8_0*>(w + (r < n_rows ? r : 0) * row_stride);
  const __m256i flip = _mm256_set1_epi8(Dot::kOffset ? static_cast<char>(0x80) : 0);
  for (int64_t b = 0; b < nb; ++b) {
    __m256i v[kPanelRows];
    K3_UNROLL for (int r = 0; r < kPanelRows; ++r) {
      v[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[r][b].qs));
      ps[b * kPanelRows + r] = simd::f16(x[r][b].d);
    }
    transpose8x8_epi32(v);
    __m256i* out = reinterpret_cast<__m256i*>(pw + b * kPanelBlockBytes);
    K3_UNROLL for (int g = 0; g < kGroups; ++g) _mm256_store_si256(out + g, _mm256_xor_si256(v[g], flip));
  }
}

// T tokens against one panel: out[t] = the 8 rows' dots for token t.
template <class Dot, int T>
inline void panel_tokens(int64_t nb, const uint8_t* pw, const float* ps, const BlockQ8_0A* const* y,
                         const int32_t* const* sums, __m256* out) {
  __m256 acc[T];
  K3_UNROLL for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* wb = pw + b * kPanelBlockBytes;
    __m256i s[T];
    K3_UNROLL for (int t = 0; t < T; ++t) {
      if constexpr (Dot::kOffset) s[t] = _mm256_set1_epi32(-128 * sums[t][b]);
      else s[t] = _mm256_setzero_si256();
    }
    K3_UNROLL for (int g = 0; g < kGroups; ++g) {
      const __m256i wv =
          _mm256_load_si256(reinterpret_cast<const __m256i*>(wb + g * kPanelRows * kGroupBytes));
      K3_UNROLL for (int t = 0; t < T; ++t) {
        int32_t a;
        std::memcpy(&a, y[t][b].qs + g * kGroupBytes, kGroupBytes);
        s[t] = Dot::q8(s[t], wv, _mm256_set1_epi32(a));
      }
    }
    const __m256 dw = _mm256_load_ps(ps + b * kPanelRows);
    K3_UNROLL for (int t = 0; t < T; ++t) acc[t] =
        _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[t]), _mm256_mul_ps(dw, _mm256_set1_ps(y[t][b].d)), acc[t]);
  }
  K3_UNROLL for (int t = 0; t < T; ++t) out[t] = acc[t];
}

// Lane r of the mask is set for r < n (maskstore: the lanes of absent rows are not written).
inline __m256i row_mask(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

template <class Dot, int T>
void run_tokens(int64_t nb, const uint8_t* pw, const float* ps, const uint8_t* act, size_t act_stride,
                const int32_t* sums, int64_t t0, int n_rows, float* y, size_t y_stride) {
  const BlockQ8_0A* yp[T];
  const int32_t* sp[T];
  K3_UNROLL for (int t = 0; t < T; ++t) {
    yp[t] = reinterpret_cast<const BlockQ8_0A*>(act + (t0 + t) * act_stride);
    sp[t] = sums + (t0 + t) * nb;
  }
  __m256 out[T];
  panel_tokens<Dot, T>(nb, pw, ps, yp, sp, out);
  if (n_rows == kPanelRows) {
    K3_UNROLL for (int t = 0; t < T; ++t) _mm256_storeu_ps(y + (t0 + t) * y_stride, out[t]);
    return;
  }
  const __m256i m = row_mask(n_rows);
  K3_UNROLL for (int t = 0; t < T; ++t) _mm256_maskstore_ps(y + (t0 + t) * y_stride, m, out[t]);
}

// act_sums for Dot: Σa per token and block (sums[t·nb + b]) where the weights carry the
// +128; nothing where they stay signed (the AVX2 form needs no correction).
template <class Dot>
void act_sums(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* sums) {
  if constexpr (!Dot::kOffset) return;
  const int64_t nb = n / 32;
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int64_t t = 0; t < n_tok; ++t) {
    const BlockQ8_0A* y =
        reinterpret_cast<const BlockQ8_0A*>(static_cast<const uint8_t*>(act) + t * act_stride);
    for (int64_t b = 0; b < nb; ++b) {
      // Σ (a + 128) over 32 bytes with one sad against zero, then minus 32·128.
      const __m256i u = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[b].qs)), flip);
      const __m256i q = _mm256_sad_epu8(u, _mm256_setzero_si256());
      const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      sums[t * nb + b] = static_cast<int32_t>(_mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1)) - 32 * 128;
    }
  }
}

template <class Dot>
void gemm(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act, size_t act_stride,
          const int32_t* sums, int64_t n_tok, float* y, size_t y_stride, void* panel) {
  // The caller's scratch (gemm_panel_bytes), aligned here: the panel lines are loaded whole.
  const int64_t nb = n / 32;
  uint8_t* pw = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(panel) + 31) & ~uintptr_t{31});
  float* ps = reinterpret_cast<float*>(pw + nb * kPanelBlockBytes);
  const uint8_t* a = static_cast<const uint8_t*>(act);
  constexpr int T = Dot::kTokens;
  for (int64_t r0 = 0; r0 < n_rows; r0 += kPanelRows) {
    const int rows = n_rows - r0 < kPanelRows ? static_cast<int>(n_rows - r0) : kPanelRows;
    repack_panel<Dot>(static_cast<const uint8_t*>(w) + r0 * row_stride, row_stride, rows, nb, pw, ps);
    float* yr = y + r0;
    int64_t t = 0;
    for (; t + T <= n_tok; t += T) run_tokens<Dot, T>(nb, pw, ps, a, act_stride, sums, t, rows, yr, y_stride);
    if constexpr (T > 2)
      for (; t + 2 <= n_tok; t += 2)
        run_tokens<Dot, 2>(nb, pw, ps, a, act_stride, sums, t, rows, yr, y_stride);
    for (; t < n_tok; ++t) run_tokens<Dot, 1>(nb, pw, ps, a, act_stride, sums, t, rows, yr, y_stride);
  }
}

}  // namespace q8gemm

}  // namespace
}  // namespace k3::kernels::impl
