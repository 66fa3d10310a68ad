// kernels/x86/iq_unpack_avx512: the AVX-512 unpacking of IQ2_XXS and IQ1_M super-blocks that the
// decode dot products (vec_dot_avx512.cpp) and the prefill gemm (gemm_iq_avx512.cpp) share:
// grid values, sign masks, sub-block scales. Each step is described where it is defined.
// Include only from files compiled with the AVX-512 flags (CMakeLists.txt); internal linkage,
// as simd.h explains, so that no wide encoding can leak into an AVX2 object.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/vec_dot_impl.h"
#include "kernels/x86/simd.h"
#include "quant/blocks.h"
#include "quant/codebooks.h"

namespace k3::kernels::impl::iq512 {
namespace {

// Constant index vectors spelled out by constexpr generators, so the layouts are computed
// rather than typed as long literal lists.
struct alignas(64) Bytes64 {
  uint8_t v[64];
};

// A vpermw control for the gathers: qword lane j ← int16 lane 8p + j (IQ1_M indices).
inline __m512i qword_lanes_from_words(int p) {
  return _mm512_set_epi64(8 * p + 7, 8 * p + 6, 8 * p + 5, 8 * p + 4, 8 * p + 3, 8 * p + 2, 8 * p + 1, 8 * p);
}

// ---------------------------------------------------------------------------------------------
// IQ2_XXS's grid as 2-bit codes: every grid byte is 8, 25 or 43 (codes 0, 1, 2), so entry i is
// 16 bits, weight t of it at bits 2t. Split for vpermt2b, which looks up 128 bytes:
// v[2h + b][i] = byte b of the codes of entry 128h + i. 512 bytes: four lookups cover the grid
// where a gather or eight scalar loads fetch eight 8-byte entries.
struct alignas(64) Iq2xxsCodeTables {
  uint8_t v[4][128];
};

inline const Iq2xxsCodeTables& iq2xxs_code_tables() {
  static const Iq2xxsCodeTables tables = [] {
    Iq2xxsCodeTables t{};
    for (int i = 0; i < 256; ++i) {
      unsigned codes = 0;
      for (int k = 0; k < 8; ++k) {
        const unsigned g = static_cast<unsigned>(quant::kIq2xxsGrid[i] >> (8 * k)) & 0xFF;
        codes |= (g == 8 ? 0u : g == 25 ? 1u : 2u) << (2 * k);
      }
      t.v[2 * (i / 128)][i % 128] = static_cast<uint8_t>(codes);
      t.v[2 * (i / 128) + 1][i % 128] = static_cast<uint8_t>(codes >> 8);
    }
    return t;
  }();
  return tables;
}

// vpermb control putting the 32 grid indices where the code lookup wants them: byte 8j + 2p + b
// (j = 0..7, quarter p = 0..3, code byte b) ← index 8p + j, which is qs byte 16p + 8(j/4) + j%4.
// After the lookup, qword j holds the codes of indices j, 8 + j, 16 + j, 24 + j at bits 16p, so
// one vpmultishiftqb per quarter spreads index 8p + j's eight codes over the bytes of qword j:
// weights 64p + 8j..+7, in weight order.
constexpr Bytes64 make_iq2xxs_code_bytes() {
  Bytes64 r{};
  for (int j = 0; j < 8; ++j)
    for (int p = 0; p < 4; ++p)
      for (int b = 0; b < 2; ++b) r.v[8 * j + 2 * p + b] = static_cast<uint8_t>(16 * p + 8 * (j / 4) + j % 4);
  return r;
}
constexpr Bytes64 kIq2xxsCodeBytes = make_iq2xxs_code_bytes();

// The grid bytes of a whole IQ2_XXS super-block from its 2-bit codes, without a memory lookup:
// the faster way on AMD Zen 4 (cpu_iq_lookup()).
struct Iq2xxsByCodes {
  __m512i tab[4];
  __m512i tab_hi[4];  // the upper 64 bytes of each table
  __m512i code_bytes = _mm512_load_si512(kIq2xxsCodeBytes.v);
  __m512i value = _mm512_set1_epi32(0x002B1908);  // byte i ← the grid byte of code i & 3
  __m512i spread[4];                              // quarter p: byte t of each qword ← bits 16p + 2t
  Iq2xxsByCodes() {
    const Iq2xxsCodeTables& t = iq2xxs_code_tables();
    K3_UNROLL for (int k = 0; k < 4; ++k) {
      tab[k] = _mm512_load_si512(t.v[k]);
      tab_hi[k] = _mm512_load_si512(t.v[k] + 64);
    }
    K3_UNROLL for (int p = 0; p < 4; ++p) {
      long long c = 0;
      for (int b = 0; b < 8; ++b) c |= static_cast<long long>(16 * p + 2 * b) << (8 * b);
      spread[p] = _mm512_set1_epi64(c);
    }
  }
  // The super-block's codes: qword j, bits 16p..16p+15 = the codes of index 8p + j.
  __m512i codes(__m512i q) const {
    const __m512i e = _mm512_permutexvar_epi8(code_bytes, q);
    const __mmask64 upper = _mm512_movepi8_mask(e);  // index ≥ 128 (vpermt2b reads bits 0..6)
    const __m512i lo = _mm512_mask_blend_epi8(upper, _mm512_permutex2var_epi8(tab[0], e, tab_hi[0]),
                                              _mm512_permutex2var_epi8(tab[2], e, tab_hi[2]));
    const __m512i hi = _mm512_mask_blend_epi8(upper, _mm512_permutex2var_epi8(tab[1], e, tab_hi[1]),
                                              _mm512_permutex2var_epi8(tab[3], e, tab_hi[3]));
    return _mm512_mask_blend_epi8(0xAAAAAAAAAAAAAAAAull, lo, hi);
  }
  // The grid bytes (8, 25 or 43) of the weights 64p..64p+63, in weight order.
  __m512i grid_quarter(__m512i codes, int p) const {
    return _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(spread[p], codes), value);
  }
};

// What a kernel holds for the code tables: Iq2xxsByCodes where it reads them, nothing where it
// fetches the grid another way (so those paths do not load the tables on every call).
struct NoIq2xxsCodes {
  NoIq2xxsCodes() {}  // user-provided, so a const member of this type needs no initialiser
};
template <bool kCodes>
using Iq2xxsCodesIf = std::conditional_t<kCodes, Iq2xxsByCodes, NoIq2xxsCodes>;

// ---------------------------------------------------------------------------------------------
// IQ2_XXS. The 64 qs bytes of a super-block hold, per 32-weight group k, one qword: four grid
// index bytes, then a u32 s_k with four 7-bit sign indices (bits 0..27) and the scale (28..31).
struct Iq2xxs {
  const long long* grid = reinterpret_cast<const long long*>(quant::kIq2xxsGrid);
  __m512i ks_lo = _mm512_loadu_si512(quant::kKsignsIq2xs);
  __m512i ks_hi = _mm512_loadu_si512(quant::kKsignsIq2xs + 64);
  // qword p ← s_{2p} | s_{2p+1} << 32 (dwords 4p+1, 4p+3), so its eight sign indices start
  // at bits 0, 7, 14, 21, 32, 39, 46, 53: one vpmultishiftqb puts them in bytes, in the
  // order of the 64 weights the pair covers (vpermt2b ignores bit 7, a stray bit 28/60).
  __m512i sel_s = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
  __m512i sign_bits = _mm512_set1_epi64(0x352E2720150E0700ll);
  __m512i one = _mm512_set1_epi64(1);
  // Pair p = groups 2p, 2p+1: grid index bytes 16p+0..3 and 16p+8..11 into qword lanes.
  __m512i gsel[4];
  Iq2xxs() {
    K3_UNROLL for (int p = 0; p < 4; ++p) {
      const int o = 16 * p;
      gsel[p] = _mm512_set_epi64(o + 11, o + 10, o + 9, o + 8, o + 3, o + 2, o + 1, o);
    }
  }
  // The group scales: qword k = 2·(s_k >> 28) + 1 (s >> 27 = 2·(s >> 28) + bit 27; or-ing 1).
  __m512i scales(__m512i q) const { return _mm512_or_si512(_mm512_srli_epi64(q, 59), one); }
  // The four 64-bit negation masks of the super-block (bit i of neg[p]: weight 64p + i is
  // negative), written to the caller's aligned array: kmovq from a load is one load uop, where
  // GCC's own choice (vmovq/vpextrq/valignq to GPRs, then kmovq) costs about three port-0/5
  // uops per mask.
  void sign_masks(__m512i q, __mmask64* neg) const {
    const __m512i sidx = _mm512_multishift_epi64_epi8(sign_bits, _mm512_permutexvar_epi32(sel_s, q));
    _mm256_store_si256(reinterpret_cast<__m256i*>(neg),
                       _mm512_castsi512_si256(_mm512_permutex2var_epi8(ks_lo, sidx, ks_hi)));
  }
  // The same from the block's bytes in memory by eight scalar loads (no gather): faster than
  // the gather on AMD Zen 4, slower on Intel (cpu_iq_lookup(); on AMD the code tables above
  // now beat both). IQ1_M's lookups stay
  // gathers everywhere: its indices are computed in a register, and storing them for scalar
  // loads measured no faster on Zen 4 (3.7–4.0 against 4.1 GB/s per core).
  __m512i grid_pair_loads(const blk::IQ2_XXS& x, int p) const {
    const uint8_t* b = reinterpret_cast<const uint8_t*>(x.qs) + 16 * p;
    const __m256i lo = _mm256_setr_epi64x(grid[b[0]], grid[b[1]], grid[b[2]], grid[b[3]]);
    const __m256i hi = _mm256_setr_epi64x(grid[b[8]], grid[b[9]], grid[b[10]], grid[b[11]]);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
  // The unsigned grid bytes (8, 25 or 43) of the 64 weights of pair p, in weight order.
  __m512i grid_pair(__m512i q, int p) const {
    const __m512i gi = _mm512_maskz_permutexvar_epi8(0x0101010101010101ull, gsel[p], q);
    return _mm512_i64gather_epi64(gi, grid, 8);
  }
};

// ---------------------------------------------------------------------------------------------
// IQ1_M: index g (0..31) = qs[g] | nibble g of qh << 8, into the offset grid of
// vec_dot_iquants.cpp (weights + 9 as unsigned bytes; the 9·Σa is taken back with bsums).

// vpermb control: int16 lane g ← qs[g] (block byte g) | qh[g/2] (byte 32 + g/2) << 8.
constexpr Bytes64 make_iq1m_gather_bytes() {
  Bytes64 r{};
  for (int g = 0; g < 32; ++g) {
    r.v[2 * g] = static_cast<uint8_t>(g);
    r.v[2 * g + 1] = static_cast<uint8_t>(32 + g / 2);
  }
  return r;
}
constexpr Bytes64 kIq1mGatherBytes = make_iq1m_gather_bytes();

// vpmultishiftqb control per qword (four int16 lanes g): low byte from bit 16i, high byte
// from bit 16i + 8 (even g: low nibble of its qh byte) or 16i + 12 (odd g: high nibble).
constexpr long long kIq1mNibbleShift = 0x3C3028201C100800ll;

// vpmultishiftqb control for the 16 sub-block scales, one per int16 lane j: field j (3 bits at
// 16·(j/4) + 3·(j%4) of the scale qword) read one bit early, so the low byte is 2·field + a
// stray bit, which the ternary op below replaces by the +1 (2·field + 1).
constexpr Bytes64 make_iq1m_scale_shift() {
  Bytes64 r{};
  for (int j = 0; j < 16; ++j) r.v[2 * j] = static_cast<uint8_t>((16 * (j / 4) + 3 * (j % 4) + 63) % 64);
  return r;
}
constexpr Bytes64 kIq1mScaleShift = make_iq1m_scale_shift();

// One IQ1_M super-block unpacked: the 32 table indices (int16 lane g: grid index | delta sign
// << 11, into the offset grid), the 16 sub-block scales 2s+1 (int16 lanes in bsums order) and
// the super-block scale d. Pure-load broadcasts, one multishift per field, a dword-masked load
// (byte masks cost an extra uop). kLast: the row's last block, whose 64-byte load is masked to
// the block's 56 bytes so that it stays inside the row.
struct Iq1mScales {
  __m256i ls;
  float d;
};
struct Iq1mFields : Iq1mScales {
  __m512i idx;
};

// IQ1_M's 8-byte scales field (also in the decode layout, kernels/decode_layout.h, unchanged):
// the sub-block scales in one multishift, d in one pext.
inline Iq1mScales iq1m_scales(const uint8_t* scales) {
  const __m256i scale_shift = _mm256_load_si256(reinterpret_cast<const __m256i*>(kIq1mScaleShift.v));
  const __m256i sc = _mm256_castpd_si256(_mm256_broadcast_sd(reinterpret_cast<const double*>(scales)));
  Iq1mScales s;
  // (f2 & 14) | 1 in one ternary op
  s.ls = _mm256_ternarylogic_epi32(_mm256_multishift_epi64_epi8(scale_shift, sc), _mm256_set1_epi16(14),
                                   _mm256_set1_epi16(1), 0xEA);
  // blk::iq1m_d's nibble assembly in one pext (the f16 bits are the scale words' top nibbles)
  uint64_t sc64;
  std::memcpy(&sc64, scales, 8);
  s.d = simd::f16(static_cast<uint16_t>(_pext_u64(sc64, 0xF000F000F000F000ull)));
  return s;
}

template <bool kLast>
inline Iq1mFields iq1m_fields(const blk::IQ1_M& x) {
  const __m512i gather_bytes = _mm512_load_si512(kIq1mGatherBytes.v);
  const __m512i nibble_shift = _mm512_set1_epi64(kIq1mNibbleShift);
  const __m512i bytes = kLast ? _mm512_maskz_loadu_epi32(0x3FFF, &x) : _mm512_loadu_si512(&x);
  Iq1mFields f;
  f.idx = _mm512_and_si512(
      _mm512_multishift_epi64_epi8(nibble_shift, _mm512_permutexvar_epi8(gather_bytes, bytes)),
      _mm512_set1_epi16(0x0FFF));
  static_cast<Iq1mScales&>(f) = iq1m_scales(x.scales);
  return f;
}

// The offset-grid bytes (8·grid + delta + 9, in [0, 18]) of the 64 weights 64p..64p+63, in
// weight order: qword lane j of the gather index ← int16 lane 8p + j of idx.
inline __m512i iq1_grid_quad(const long long* grid, __m512i idx, int p) {
  const __m512i gi = _mm512_maskz_permutexvar_epi16(0x11111111u, qword_lanes_from_words(p), idx);
  return _mm512_i64gather_epi64(gi, grid, 8);
}

}  // namespace
}  // namespace k3::kernels::impl::iq512
