// kernels/x86/iq_unpack_avx2: the grid-type unpacking that the AVX2 dot kernels
// (vec_dot_iquants.cpp) and the 256-bit IQ prefill gemms (gemm_iq_rows.h) share.
// Internal linkage, like simd.h: the AVX-VNNI gemm file includes this under its own -m flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/decode_layout.h"
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

// IQ1_M's decode layout (kernels/decode_layout.h), group sb (32 weights, sb = 2p + h): the 16
// code bytes of quarter p broadcast to both 128-bit lanes; lane L wants bit pair k = 2h + L of
// every byte at bits 3..4, which is 8·code: one variable dword shift (left 3 − 2k or right
// 2k − 3; bits pushed into a neighbouring byte are masked off). The delta adds 2 to the bytes of
// dword i where bit 8·sb + i of delta_plus is set: one OR with a row of a 256-entry table
// indexed by that byte (8 KiB, stays in L1; computing the mask took four vector uops, the table
// one). The bytes are the offset grid's 8·grid + 9 ± 1 (iq1_offset_grid) exactly.
struct Iq1mDecodeGroups {
  struct PlusTwo {
    alignas(32) uint8_t v[256][32];
    PlusTwo() {
      for (int m = 0; m < 256; ++m)
        for (int i = 0; i < 32; ++i) v[m][i] = (m >> (i / 4) & 1) ? 2 : 0;
    }
  };
  const PlusTwo& plus = table();
  const __m256i code_left = _mm256_setr_epi32(3, 3, 3, 3, 1, 1, 1, 1);   // h = 0: k = 0, 1
  const __m256i code_right = _mm256_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3);  // h = 1: k = 2, 3
  const __m256i m18 = _mm256_set1_epi8(0x18);
  static const PlusTwo& table() {
    static const PlusTwo t;
    return t;
  }
  // sb is a constant in the callers' unrolled loops, so the shift choice folds away.
  __m256i group(const Iq1mDecodeBlock& x, int sb) const {
    const __m256i codes = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.codes + 16 * (sb / 2))));
    const __m256i moved =
        sb % 2 == 0 ? _mm256_sllv_epi32(codes, code_left) : _mm256_srlv_epi32(codes, code_right);
    const uint8_t plus_bits = reinterpret_cast<const uint8_t*>(&x.delta_plus)[sb];
    return _mm256_or_si256(_mm256_and_si256(moved, m18),
                           _mm256_load_si256(reinterpret_cast<const __m256i*>(plus.v[plus_bits])));
  }
};

// IQ2_XXS's decode layout, group g (32 weights): the 16 bytes broadcast to both 128-bit lanes
// and shifted down by 0 (lane 0) or 4 bits (lane 1) are pshufb indices as they stand (bits 3
// and 7 are clear) into a table of ±grid + offset (grid bytes 8, 25, 43; the offset makes them
// unsigned for maddubs: 64 in the dot kernel, 43 in the gemm), so each weight costs no lookup
// in memory.
struct Iq2xxsDecodeGroups {
  __m256i values;
  const __m256i lane_shift = _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4);
  explicit Iq2xxsDecodeGroups(int offset) {
    const __m256i signed_grid = _mm256_setr_epi8(8, 25, 43, 0, -8, -25, -43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 25,
                                                 43, 0, -8, -25, -43, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    values = _mm256_add_epi8(signed_grid, _mm256_set1_epi8(static_cast<char>(offset)));
  }
  __m256i group(const Iq2xxsDecodeBlock& x, int g) const {
    const __m256i bytes =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x.w + 16 * g)));
    return _mm256_shuffle_epi8(values, _mm256_srlv_epi32(bytes, lane_shift));
  }
};

}  // namespace
}  // namespace k3::kernels::impl
