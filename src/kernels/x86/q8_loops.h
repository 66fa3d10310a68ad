// kernels/x86/q8_loops: the Q8_0 and MXFP4 dot-product loops (ggml's block_q8_0 and
// block_mxfp4 against Q8_0 activations, docs/quant-formats.md), written once and compiled twice
// over the int8 product `Dot`: with AVX2 (vec_dot_q8.cpp) and with AVX-VNNI (vec_dot_vnni.cpp,
// chosen at run time).
// Dot::sum(|w|, w, a) returns 8 int32 lanes, each the sum of 4 products w·a; both forms are
// exact (AVX2's int16 pair sums cannot saturate: |w| ≤ 128, |a| ≤ 127), so the two builds
// agree bit for bit. Per block: one int8·int8 sum of 32 products, scaled by (d_w·d_a).
// Internal linkage, like simd.h: each including file is compiled for its own target and keeps
// its own copy.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/act_quant.h"
#include "kernels/vec_dot_impl.h"
#include "kernels/x86/simd.h"
#include "quant/blocks.h"
#include "quant/codebooks.h"

namespace k3::kernels::impl {
namespace {

// Decode streams each Q8_0 row once. On some hosts one core's hardware prefetchers keep too
// few lines in flight for this loop, so it asks for the line decode_prefetch_bytes() ahead. Into L2 (T1), not
// L1: measured on a 2-vCPU Xeon VM (2026-12-03), two threads over 4.5 MB matrices went from
// 19 GB/s (T0, 2 KiB ahead) to 21.5-22 GB/s (T1 or T2, 4 KiB ahead; 2 and 16 KiB a little
// less), one thread over 1 GiB from 10.5 to 12.1 GB/s; without any prefetch the same host
// gave 14 GB/s on two threads. Earlier hosts gained nothing and lost nothing. With four FMA
// chains per row (below) 3 KiB ahead beat 4 KiB: one thread over 1 GiB 13.5 -> 14.5 GB/s, two
// threads 26-27 -> 29 GB/s, 4.5 MB product chains +4 %, bench-m tg +3 % (2.5 KiB the same,
// 2 KiB less). On the AMD EPYC (Zen 4) VMs 6 KiB beat 3 KiB: two threads over 4.5 MB
// matrices +13-22 %, bench-m tg +4-6 % (bench/RESULTS.md), hence the distance per vendor.

// Independent FMA chains per token: two where several tokens share the loop, four for decode.
// One token streams its row from memory; with two chains the loop-carried FMA latency held
// back how far ahead the core ran, and four measured +4-7 % on 2048-wide Q8_0 decode (chains
// of 4.5 MB products, 2 threads) and +4 % bench-m tg (2026-12-03 Intel VM); eight lost ~5 %
// on 8192-wide rows.
template <class Dot, int NT>
void q8_0_loop(int64_t n, const void* w, const void* act, size_t st, float* out) {
  const blk::Q8_0* x = static_cast<const blk::Q8_0*>(w);
  const BlockQ8_0A* y[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8_0A*>(simd::tok(act, st, t));
  constexpr int NA = NT == 1 ? 4 : 2;
  const int64_t pf = NT == 1 ? decode_prefetch_bytes() : 0;
  __m256 acc[NT][NA];
  K3_UNROLL for (int t = 0; t < NT; ++t) K3_UNROLL for (int a = 0; a < NA; ++a) acc[t][a] =
      _mm256_setzero_ps();
  const int64_t nb = n / 32;
  int64_t b = 0;
  auto step = [&](int64_t i, int slot) {
    if constexpr (NT == 1) _mm_prefetch(reinterpret_cast<const char*>(x + i) + pf, _MM_HINT_T1);
    const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs));
    const __m256i ax = _mm256_abs_epi8(qx);
    const float dx = simd::f16(x[i].d);
    K3_UNROLL for (int t = 0; t < NT; ++t) {
      const __m256i qy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][i].qs));
      const __m256i p = Dot::sum(ax, qx, qy);
      acc[t][slot] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dx * y[t][i].d), acc[t][slot]);
    }
  };
  for (; b + NA <= nb; b += NA) K3_UNROLL for (int a = 0; a < NA; ++a) step(b + a, a);
  for (; b < nb; ++b) step(b, 0);
  K3_UNROLL for (int t = 0; t < NT; ++t) {
    K3_UNROLL for (int a = 2; a < NA; ++a) acc[t][a % 2] = _mm256_add_ps(acc[t][a % 2], acc[t][a]);
    out[t] = simd::hsum(_mm256_add_ps(acc[t][0], acc[t][1]));
  }
}

template <class Dot, int NT>
void mxfp4_loop(int64_t n, const void* w, const void* act, size_t st, float* out) {
  const blk::MXFP4* x = static_cast<const blk::MXFP4*>(w);
  const BlockQ8_0A* y[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8_0A*>(simd::tok(act, st, t));
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i table =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::kValuesFp4)));
  // Decode (one token) streams its row: four FMA chains, block b into chain b % 4, and the
  // row prefetched ahead, as for Q8_0 (one chain made it latency-bound: one core 2.5 -> 8.1
  // GB/s). The AVX-512 kernel (vec_dot_avx512.cpp) keeps the same chains, bit for bit.
  constexpr int NA = NT == 1 ? 4 : 1;
  const int64_t pf = NT == 1 ? decode_prefetch_bytes() : 0;
  __m256 acc[NT][NA];
  K3_UNROLL for (int t = 0; t < NT; ++t) K3_UNROLL for (int a = 0; a < NA; ++a) acc[t][a] =
      _mm256_setzero_ps();
  // low nibbles are elements 0..15, high nibbles 16..31: the 16 bytes broadcast (a load-port
  // op) and the high lane shifted down 4 bits, one vector uop fewer than shift + insert
  const __m256i lane_shift = _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4);
  auto step = [&](int64_t b, int slot) {
    if constexpr (NT == 1) _mm_prefetch(reinterpret_cast<const char*>(x + b) + pf, _MM_HINT_T1);
    const __m256i q = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].qs)));
    const __m256i codes = _mm256_and_si256(_mm256_srlv_epi32(q, lane_shift), m4);
    const __m256i qx = _mm256_shuffle_epi8(table, codes);
    const __m256i ax = _mm256_abs_epi8(qx);
    const float dx = blk::e8m0_half(x[b].e);
    K3_UNROLL for (int t = 0; t < NT; ++t) {
      const __m256i qy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[t][b].qs));
      const __m256i p = Dot::sum(ax, qx, qy);
      acc[t][slot] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dx * y[t][b].d), acc[t][slot]);
    }
  };
  const int64_t nb = n / 32;
  int64_t b = 0;
  for (; b + NA <= nb; b += NA) K3_UNROLL for (int a = 0; a < NA; ++a) step(b + a, a);
  for (; b < nb; ++b) step(b, static_cast<int>(b % NA));
  K3_UNROLL for (int t = 0; t < NT; ++t) {
    if constexpr (NA == 4)
      acc[t][0] = _mm256_add_ps(_mm256_add_ps(acc[t][0], acc[t][2]), _mm256_add_ps(acc[t][1], acc[t][3]));
    out[t] = simd::hsum(acc[t][0]);
  }
}

}  // namespace
}  // namespace k3::kernels::impl
