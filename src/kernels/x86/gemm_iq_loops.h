// kernels/x86/gemm_iq_loops: the 256-bit prefill products for the expert types IQ2_XXS and
// IQ1_M against Q8_K activations (vec_dot.h, DotKernel::act_sums and gemm), written once and
// compiled twice over the int8 product `Dot`: plain AVX2 (gemm_avx2.cpp) and AVX-VNNI
// (gemm_vnni.cpp). The scheme is gemm_iq_avx512.cpp's — the lanes are tokens, not rows, since
// an expert sees too few tokens (~16 per 512-token micro-batch on bench-m) to pay for decoding
// a panel of rows — with 8 int32 lanes:
// - act_sums repacks the tokens once per run of rows (shared by every row): per tile of 8
//   tokens and per super-block, 64 lines, line k = the 8 tokens' activation bytes 4k..4k+3;
//   then one line per sub-block with −off·Σa of each token (from bsums); then the tokens'
//   scales. Tokens past the end are zero. Two tiles of 8 take no more room than the AVX-512
//   form's tile of 16, so gemm_sums_ints() sizes both.
// - gemm decodes 4 rows at a time (gemm_iq_rows.h) to their weights + off as unsigned bytes
//   in weight order (off = 43 for IQ2_XXS, whose weights are ±{8, 25, 43}; 9 for IQ1_M, whose
//   offset grid holds 8·grid ± 1 + 9 already), the sub-block scales as int32 and d;
//   then per tile and 4-weight group one load of the group's line and, per row, one
//   broadcast of the row's 4 bytes and one Dot::us make 32 products for 8 tokens.
// - Dot::us is maddubs + madd (AVX2) or vpdpbusd (AVX-VNNI). The offsets keep maddubs'
//   int16 pair sums exact: (43 + 43)·128·2 and 18·128·2 < 32767 (the AVX-512 form's +128
//   would saturate them).
// - Per sub-block (32 weights for IQ2_XXS, 16 for IQ1_M) the lanes start at −off·Σa, so after
//   its products they hold Σ w·a exactly; times the sub-block scale and summed over the
//   super-block they are the decode kernels' integer sum (|lane| < 2^26); one conversion and
//   one FMA with d·d_y per super-block, 0.125 at the end: the AVX-512 gemm's float steps, so
//   all three builds agree bit for bit, and differ from dot() only in float rounding.
// Internal linkage, like simd.h: each including file keeps its own copy in its own encoding.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/act_quant.h"
#include "kernels/vec_dot.h"
#include "kernels/vec_dot_impl.h"
#include "kernels/x86/gemm_iq_rows.h"
#include "kernels/x86/gemm_token_tiles.h"
#include "kernels/x86/simd.h"
#include "quant/blocks.h"

namespace k3::kernels::impl {
namespace {

namespace iqgemm {

constexpr int kLanes = 8;   // tokens per tile: one ymm of int32 lanes
constexpr int kLines = 64;  // 4-byte groups per 256-weight super-block
constexpr int kBiasLines = 16;
constexpr int64_t kTileInts = token_tile_ints<kLanes>();
static_assert(2 * kTileInts <= kTileSuperblockInts, "two tiles of 8 in the room of one of 16");
// The four row buffers fit the caller's scratch from the smallest row on.
static_assert(4 * ((256 + 68 + 31) & ~31) + 32 <= gemm_panel_bytes(256));

inline const int32_t* align32(const int32_t* p) {
  return reinterpret_cast<const int32_t*>((reinterpret_cast<uintptr_t>(p) + 31) & ~uintptr_t{31});
}

// The repacked tokens (layout above) for sub-blocks of G weights and weights + Off.
template <int G, int Off>
void act_tiles(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* out) {
  token_tiles<kLanes, 32, G, Off>(n, act, act_stride, n_tok, out);
}

// R decoded rows against one tile: out[r·8 + l] = row r's dot with the tile's token l. The R
// rows share every load of an activation line.
template <class Dot, int G, int R>
inline void rows_tile(int64_t nsb, const RowBuf* rows, const int32_t* tile, float* out) {
  __m256 acc[R];
  K3_UNROLL for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t s = 0; s < nsb; ++s) {
    const int32_t* lines = tile + s * kTileInts;
    const int32_t* bias = lines + kLines * kLanes;
    __m256i isum[R];
    K3_UNROLL for (int r = 0; r < R; ++r) isum[r] = _mm256_setzero_si256();
    K3_UNROLL for (int g = 0; g < 256 / G; ++g) {
      __m256i sg[R];
      const __m256i b = _mm256_load_si256(reinterpret_cast<const __m256i*>(bias + g * kLanes));
      K3_UNROLL for (int r = 0; r < R; ++r) sg[r] = b;
      K3_UNROLL for (int k = 0; k < G / 4; ++k) {
        const int line = g * (G / 4) + k;
        const __m256i a = _mm256_load_si256(reinterpret_cast<const __m256i*>(lines + line * kLanes));
        K3_UNROLL for (int r = 0; r < R; ++r) {
          int32_t wq;
          std::memcpy(&wq, rows[r].w + 256 * s + 4 * line, 4);
          sg[r] = Dot::us(sg[r], _mm256_set1_epi32(wq), a);
        }
      }
      K3_UNROLL for (int r = 0; r < R; ++r) isum[r] =
          _mm256_add_epi32(isum[r], _mm256_mullo_epi32(sg[r], _mm256_set1_epi32(rows[r].mult[16 * s + g])));
    }
    const __m256 dy = _mm256_load_ps(reinterpret_cast<const float*>(bias + kBiasLines * kLanes));
    K3_UNROLL for (int r = 0; r < R; ++r) acc[r] =
        _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[r]), _mm256_mul_ps(dy, _mm256_set1_ps(rows[r].d[s])), acc[r]);
  }
  K3_UNROLL for (int r = 0; r < R; ++r)
      _mm256_store_ps(out + r * kLanes, _mm256_mul_ps(acc[r], _mm256_set1_ps(0.125f)));
}

// R decoded rows (starting at row r0 of the output) against every tile of the tokens.
template <class Dot, int G, int R>
void rows_all_tiles(int64_t nsb, const RowBuf* rows, const int32_t* base, int64_t n_tok, int64_t r0, float* y,
                    size_t y_stride) {
  for (int64_t i = 0; i * kLanes < n_tok; ++i) {
    const int64_t nl = n_tok - i * kLanes < kLanes ? n_tok - i * kLanes : kLanes;
    alignas(32) float out[R * kLanes];
    rows_tile<Dot, G, R>(nsb, rows, base + i * nsb * kTileInts, out);
    K3_UNROLL for (int r = 0; r < R; ++r) for (int64_t l = 0; l < nl; ++l)
        y[(i * kLanes + l) * y_stride + r0 + r] = out[r * kLanes + l];
  }
}

template <class Dot, class Row>
void gemm(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const int32_t* sums, int64_t n_tok,
          float* y, size_t y_stride, void* panel) {
  constexpr int kRowsPerPass = 4;
  const int64_t nsb = n / 256;
  const int32_t* base = align32(sums);
  // Four row buffers in the caller's scratch (gemm_panel_bytes(n) ≥ 4·(n + 68·n/256) + 32 bytes).
  uint8_t* pw = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(panel) + 31) & ~uintptr_t{31});
  const size_t row_bytes = static_cast<size_t>(n + 68 * nsb + 31) & ~size_t{31};
  RowBuf rows[kRowsPerPass];
  for (int r = 0; r < kRowsPerPass; ++r) {
    uint8_t* p = pw + r * row_bytes;
    rows[r] = RowBuf{p, reinterpret_cast<int32_t*>(p + n), reinterpret_cast<float*>(p + n + 64 * nsb)};
  }
  const uint8_t* wr = static_cast<const uint8_t*>(w);
  const Row dec;
  int64_t r = 0;
  for (; r + kRowsPerPass <= n_rows; r += kRowsPerPass) {
    for (int k = 0; k < kRowsPerPass; ++k) dec.decode(wr + (r + k) * row_stride, nsb, rows[k]);
    rows_all_tiles<Dot, Row::kGroup, kRowsPerPass>(nsb, rows, base, n_tok, r, y, y_stride);
  }
  for (; r < n_rows; ++r) {
    dec.decode(wr + r * row_stride, nsb, rows[0]);
    rows_all_tiles<Dot, Row::kGroup, 1>(nsb, rows, base, n_tok, r, y, y_stride);
  }
}

}  // namespace iqgemm

}  // namespace
}  // namespace k3::kernels::impl

// Defines the GemmFn entry point `name` (vec_dot_impl.h) over iqgemm::gemm<Dot, iqgemm::Row>: the
// files that compile these loops for one instruction set each (gemm_avx2.cpp, gemm_vnni.cpp).
// act and act_stride are unused: the tokens come repacked in sums.
#define K3_IQ_GEMM(name, Dot, Row)                                                             \
  void name(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void*, size_t,  \
            const int32_t* sums, int64_t n_tok, float* y, size_t y_stride, void* panel) {      \
    iqgemm::gemm<Dot, iqgemm::Row>(n, w, row_stride, n_rows, sums, n_tok, y, y_stride, panel); \
  }
