// kernels/x86/iq_unpack_avx2: the grid-type unpacking that the AVX2 dot kernels
// (vec_dot_iquants.cpp) and the 256-bit IQ prefill gemms (gemm_iq_rows.h) share.
// Internal linkage, like simd.h: the AVX-VNNI gemm file includes this under its own -m flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "quant/blocks.h"

namespace k3::kernels::impl {
namespace {

// Entries i0..i3 of a table of 64-bit rows, side by side. Broadcast loads are pure load-port
// uops, so this costs 4 loads + 3 blends instead of GPR→vector inserts.
inline __m256i grid4(const uint64_t* table, uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3) {
  auto bc = [&](uint32_t i) {
    return _mm256_castpd_si256(_mm256_broadcast_sd(reinterpret_cast<const double*>(table + i)));
  };
  return _mm256_blend_epi32(_mm256_blend_epi32(bc(i0), bc(i1), 0x0C),
                            _mm256_blend_epi32(bc(i2), bc(i3), 0xC0), 0xF0);
}

// IQ1_M's 32 offset-grid indices of a super-block: qs byte | qh nibble << 8 (nibble bit 3, the
// delta sign, becomes index bit 11). idx must be 16-byte aligned.
inline void iq1m_indices(const quant::blk::IQ1_M& x, uint16_t* idx) {
  const __m128i m4 = _mm_set1_epi8(0x0F);
  const __m128i qh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qh));
  const __m128i lo = _mm_and_si128(qh, m4), hi = _mm_and_si128(_mm_srli_epi16(qh, 4), m4);
  const __m128i n0 = _mm_unpacklo_epi8(lo, hi), n1 = _mm_unpackhi_epi8(lo, hi);
  const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qs));
  const __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qs + 16));
  __m128i* out = reinterpret_cast<__m128i*>(idx);
  _mm_store_si128(out + 0, _mm_unpacklo_epi8(q0, n0));
  _mm_store_si128(out + 1, _mm_unpackhi_epi8(q0, n0));
  _mm_store_si128(out + 2, _mm_unpacklo_epi8(q1, n1));
  _mm_store_si128(out + 3, _mm_unpackhi_epi8(q1, n1));
}

}  // namespace
}  // namespace k3::kernels::impl
