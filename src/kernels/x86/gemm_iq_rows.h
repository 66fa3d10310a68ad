// kernels/x86/gemm_iq_rows: the row decoders of the 256-bit IQ gemms (gemm_iq_loops.h). A row
// is decoded once per gemm pass and shared by every token, so these favour few instructions
// per weight over registers: per super-block the 256 weights + off as unsigned bytes, the
// sub-block scales as int32 and d, in a RowBuf. The grid lookups are the AVX2 dot kernels'
// (vec_dot_iquants.cpp): four 64-bit entries by broadcast loads and blends; IQ1_M through the
// shared offset grid (iq1_offset_grid(): 8·grid ± 1 + 9, so off = 9 comes free).
// Internal linkage, like simd.h: each including file keeps its own copy in its own encoding.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/vec_dot_impl.h"
#include "kernels/x86/iq_unpack_avx2.h"
#include "kernels/x86/simd.h"
#include "quant/blocks.h"
#include "quant/codebooks.h"

namespace k3::kernels::impl {
namespace {

namespace iqgemm {

// A decoded row: per super-block s, w[256·s ..] the weights + off, mult[16·s ..] the sub-block
// scales (IQ2_XXS uses 8 of the 16 slots), d[s].
struct RowBuf {
  uint8_t* w;
  int32_t* mult;
  float* d;
};

// IQ2_XXS: per 32 weights two u32, 4 grid bytes and 4 × 7-bit sign indices + a 4-bit scale s
// (2s + 1). Weights ±{8, 25, 43}: + 43 makes them unsigned and keeps maddubs' pair sums exact.
struct Iq2xxsRow {
  static constexpr int kGroup = 32, kOffset = 43;
  void decode(const uint8_t* row, int64_t nsb, const RowBuf& out) const {
    const blk::IQ2_XXS* x = reinterpret_cast<const blk::IQ2_XXS*>(row);
    const __m256i off = _mm256_set1_epi8(kOffset);
    for (int64_t b = 0; b < nsb; ++b) {
      const uint8_t* q = reinterpret_cast<const uint8_t*>(x[b].qs);
      K3_UNROLL for (int sb = 0; sb < 8; ++sb) {
        const uint8_t* a = q + 8 * sb;
        const uint32_t s = blk::load_u32(a + 4);
        const __m256i g = grid4(quant::kIq2xxsGrid, a[0], a[1], a[2], a[3]);
        // sign bytes 0 or −1: (g ^ m) − m is ±g, and − (m − 43) adds the offset with it
        const __m256i m = grid4(quant::kKsigns64, s & 127, (s >> 7) & 127, (s >> 14) & 127, (s >> 21) & 127);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.w + 256 * b + 32 * sb),
                            _mm256_sub_epi8(_mm256_xor_si256(g, m), _mm256_sub_epi8(m, off)));
        out.mult[16 * b + sb] = 2 * static_cast<int32_t>(s >> 28) + 1;
      }
      out.d[b] = simd::f16(x[b].d);
    }
  }
};

// IQ1_M: per 8 weights an offset-grid index, qs byte | qh nibble << 8 (nibble bit 3 = the
// delta sign, index bit 11); the 16 sub-block scales are 3-bit fields of the four u16 scale
// words (field j in word j/4 at bit 3(j%4); the top nibbles are the f16 d).
struct Iq1mRow {
  static constexpr int kGroup = 16, kOffset = 9;
  const uint64_t* grid = iq1_offset_grid();
  static void scales(const uint8_t* field, int32_t* mult) {
    int64_t sc;
    std::memcpy(&sc, field, 8);
    const __m128i words = _mm_set1_epi64x(sc);
    const __m256i shift = _mm256_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9);
    for (int h = 0; h < 2; ++h) {  // sub-blocks 8h..8h+7: words 2h, 2h + 1, each four times
      const char w0 = static_cast<char>(4 * h), w1 = static_cast<char>(4 * h + 2);
      const __m128i pick = _mm_setr_epi8(w0, w0 + 1, w0, w0 + 1, w0, w0 + 1, w0, w0 + 1, w1, w1 + 1, w1,
                                         w1 + 1, w1, w1 + 1, w1, w1 + 1);
      const __m256i f =
          _mm256_and_si256(_mm256_srlv_epi32(_mm256_cvtepu16_epi32(_mm_shuffle_epi8(words, pick)), shift),
                           _mm256_set1_epi32(7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(mult + 8 * h),
                          _mm256_add_epi32(_mm256_add_epi32(f, f), _mm256_set1_epi32(1)));
    }
  }
  void decode(const uint8_t* row, int64_t nsb, const RowBuf& out) const {
    const blk::IQ1_M* x = reinterpret_cast<const blk::IQ1_M*>(row);
    alignas(16) uint16_t idx[32];
    for (int64_t b = 0; b < nsb; ++b) {
      iq1m_indices(x[b], idx);
      K3_UNROLL for (int sb = 0; sb < 8; ++sb) {
        uint64_t i4;  // four indices in one GPR load
        std::memcpy(&i4, idx + 4 * sb, 8);
        const __m256i wv = grid4(grid, static_cast<uint16_t>(i4), static_cast<uint16_t>(i4 >> 16),
                                 static_cast<uint16_t>(i4 >> 32), static_cast<uint32_t>(i4 >> 48));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.w + 256 * b + 32 * sb), wv);
      }
      scales(x[b].scales, out.mult + 16 * b);
      out.d[b] = simd::f16(blk::iq1m_scale_bits(x[b].scales));
    }
  }
};

// The same rows from their decode layouts (kernels/decode_layout.h), where the expert store made
// one: the bytes come from shifts and byte shuffles instead of table lookups in memory, and are
// the file decoders' bytes exactly (so the gemm's results are too).
// IQ2_XXS: each 3-bit weight (code | sign << 2) indexes ±grid + 43 (Iq2xxsDecodeGroups).
struct Iq2xxsDecodeRow {
  static constexpr int kGroup = 32, kOffset = 43;
  const Iq2xxsDecodeGroups groups{kOffset};
  void decode(const uint8_t* row, int64_t nsb, const RowBuf& out) const {
    const Iq2xxsDecodeBlock* x = reinterpret_cast<const Iq2xxsDecodeBlock*>(row);
    for (int64_t b = 0; b < nsb; ++b) {
      K3_UNROLL for (int g = 0; g < 8; ++g) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.w + 256 * b + 32 * g), groups.group(x[b], g));
        out.mult[16 * b + g] = x[b].ls[g];
      }
      out.d[b] = x[b].d;
    }
  }
};

// IQ1_M: Iq1mDecodeGroups gives the offset grid's bytes; the scales field is IQ1_M's.
struct Iq1mDecodeRow {
  static constexpr int kGroup = 16, kOffset = 9;
  const Iq1mDecodeGroups groups;
  void decode(const uint8_t* row, int64_t nsb, const RowBuf& out) const {
    const Iq1mDecodeBlock* x = reinterpret_cast<const Iq1mDecodeBlock*>(row);
    for (int64_t b = 0; b < nsb; ++b) {
      K3_UNROLL for (int sb = 0; sb < 8; ++sb)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.w + 256 * b + 32 * sb), groups.group(x[b], sb));
      Iq1mRow::scales(x[b].scales, out.mult + 16 * b);
      out.d[b] = simd::f16(blk::iq1m_scale_bits(x[b].scales));
    }
  }
};

}  // namespace iqgemm

}  // namespace
}  // namespace k3::kernels::impl
