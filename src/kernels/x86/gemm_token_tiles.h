// kernels/x86/gemm_token_tiles: the repacked tokens of the IQ prefill gemms (act_sums of
// gemm_iq_avx512.cpp, tiles of 16 tokens, and of gemm_iq_loops.h, tiles of 8), written once.
// Per tile of Lanes tokens and per 256-weight super-block: 64 lines, line k = the tokens'
// activation bytes 4k..4k+3 (one int32 each); then one line per sub-block of G weights with
// −Off·Σa of each token (Off: what the gemm adds to the weights to make them unsigned); then
// the tokens' scales. Tokens past n_tok are zero. The tiles start at out rounded up to Align
// bytes (the callers' buffers, gemm_sums_ints, carry that slack).
// Plain C++, internal linkage like simd.h: each including file keeps its own copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/act_quant.h"

namespace k3::kernels::impl {
namespace {

// int32s of one tile and super-block: 64 activation lines, 16 bias lines, the scales.
template <int Lanes>
constexpr int64_t token_tile_ints() {
  return 64 * Lanes + 16 * Lanes + Lanes;
}

template <int Align>
inline int32_t* align_up(int32_t* p) {
  return reinterpret_cast<int32_t*>((reinterpret_cast<uintptr_t>(p) + (Align - 1)) & ~uintptr_t{Align - 1});
}

template <int Lanes, int Align, int G, int Off>
void token_tiles(int64_t n, const void* act, size_t act_stride, int64_t n_tok, int32_t* out) {
  constexpr int kLines = 64, kBiasLines = 16;
  const int64_t nsb = n / 256;
  int32_t* base = align_up<Align>(out);
  for (int64_t i = 0; i * Lanes < n_tok; ++i) {
    for (int64_t s = 0; s < nsb; ++s) {
      int32_t* lines = base + (i * nsb + s) * token_tile_ints<Lanes>();
      int32_t* bias = lines + kLines * Lanes;
      float* dy = reinterpret_cast<float*>(bias + kBiasLines * Lanes);
      for (int l = 0; l < Lanes; ++l) {
        const int64_t t = i * Lanes + l;
        if (t >= n_tok) {
          for (int k = 0; k < kLines; ++k) lines[k * Lanes + l] = 0;
          for (int g = 0; g < 256 / G; ++g) bias[g * Lanes + l] = 0;
          dy[l] = 0.0f;
          continue;
        }
        const BlockQ8KA& y =
            reinterpret_cast<const BlockQ8KA*>(static_cast<const uint8_t*>(act) + t * act_stride)[s];
        for (int k = 0; k < kLines; ++k) std::memcpy(&lines[k * Lanes + l], y.qs + 4 * k, 4);
        for (int g = 0; g < 256 / G; ++g) {
          int32_t sum = 0;
          for (int j = 0; j < G / 16; ++j) sum += y.bsums[g * (G / 16) + j];
          bias[g * Lanes + l] = -Off * sum;
        }
        dy[l] = y.d;
      }
    }
  }
}

}  // namespace
}  // namespace k3::kernels::impl
