// kernels/x86/q3k_scales: the 16 signed six-bit Q3_K scales of a super-block in one vector
// (the same values as blk::q3k_scales), shared by the AVX2 (vec_dot_kquants.cpp) and AVX-512
// (vec_dot_avx512.cpp) Q3_K kernels.
// Internal linkage, like simd.h: each including file is compiled for its own target and keeps
// its own copy.
#pragma once

#include <immintrin.h>

#include "quant/blocks.h"

namespace k3::kernels::impl {
namespace {

// Low nibbles of bytes 0..7 are scales 0..7, their high nibbles scales 8..15; byte 8 + j%4
// supplies bits 4..5 of scale j at bit 2·(j/4).
inline __m128i q3k_scales_vec(const uint8_t* s) {
  const __m128i m4 = _mm_set1_epi8(0x0F);
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s));
  const __m128i low4 = _mm_unpacklo_epi64(_mm_and_si128(v, m4), _mm_and_si128(_mm_srli_epi16(v, 4), m4));
  const __m128i word = _mm_set1_epi32(static_cast<int>(quant::blk::load_u32(s + 8)));
  const __m128i high2 = _mm_and_si128(_mm_srlv_epi32(word, _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
  return _mm_sub_epi8(_mm_or_si128(low4, _mm_slli_epi16(high2, 4)), _mm_set1_epi8(32));
}

}  // namespace
}  // namespace k3::kernels::impl
