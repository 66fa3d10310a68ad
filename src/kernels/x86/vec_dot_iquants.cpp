// AVX2 dot products of the grid types IQ2_XXS, IQ2_XS, IQ1_S, IQ1_M against Q8_K activations
// (ggml's block_iq2_* / block_iq1_* layouts and grids; the pairing in docs/quant-formats.md).
// Every 8-element group is one 64-bit grid lookup; four of them make a 32-byte weight vector.
// IQ2: unsigned grid magnitudes × sign-flipped activations (±1 sign tables and psignb).
// IQ1: a value grid+δ with δ = ±1/8 is the exact integer (8·grid ± 1) over 8; a derived table
// holds 8·grid ± 1 + 9 ∈ [0, 18] per byte, indexed by (delta sign, 11-bit grid index), so one
// lookup gives unsigned weight bytes that feed maddubs directly, and the +9 is removed once per
// 16 elements with the Q8_K block sums; the 1/8 is folded into the scale.
// Sub-block scales are built once per super-block in one register and picked per group with a
// single pshufb (kPickI16), instead of being broadcast from memory for every group.
#include <immintrin.h>

#include <cstring>

#include "kernels/act_quant.h"
#include "kernels/decode_layout.h"
#include "quant/blocks.h"
#include "kernels/x86/iq_unpack_avx2.h"
#include "kernels/x86/rows_group.h"
#include "kernels/x86/simd.h"
#include "kernels/vec_dot_impl.h"
#include "quant/codebooks.h"

namespace k3::kernels::impl {

namespace {

inline const __m256i* v256(const void* p) { return reinterpret_cast<const __m256i*>(p); }

// Rows per group of the multi-row entry points; the rest go one at a time. 4 gained no more
// than 2 on short rows and lost a little on 7168-wide ones (16 ymm registers).
constexpr int kGroupRows = 2;

// 4096 entries: index | (delta sign << 11) → bytes 8·grid + 9 + (sign ? −1 : +1), in [0, 18].
struct Iq1OffsetGrid {
  uint64_t v[4096];
  Iq1OffsetGrid() {
    for (int s = 0; s < 2; ++s)
      for (int i = 0; i < 2048; ++i) {
        uint64_t e = 0;
        for (int j = 0; j < 8; ++j) {
          const int g = static_cast<int8_t>((quant::kIq1sGrid[i] >> (8 * j)) & 0xFF);
          const int b = 8 * g + 9 + (s ? -1 : 1);
          e |= static_cast<uint64_t>(static_cast<uint8_t>(b)) << (8 * j);
        }
        v[s << 11 | i] = e;
      }
  }
};

}  // namespace

// Shared with the AVX-512 kernels (vec_dot_avx512.cpp), hence outside the anonymous namespace.
const uint64_t* iq1_offset_grid() {
  static const Iq1OffsetGrid g;
  return g.v;
}

namespace {

// Signs as ±1 bytes (kKsigns64 with bit 0 set in every byte) for psignb on the activations.
struct SignsPm1 {
  uint64_t v[128];
  SignsPm1() {
    for (int i = 0; i < 128; ++i) v[i] = quant::kKsigns64[i] | 0x0101010101010101ull;
  }
};

const uint64_t* signs_pm1() {
  static const SignsPm1 s;
  return s.v;
}

// pshufb controls selecting int16 lane i of each 128-bit half.
#define K3_PICK2(i) 2 * (i), 2 * (i) + 1
#define K3_PICK8(i) K3_PICK2(i), K3_PICK2(i), K3_PICK2(i), K3_PICK2(i)
#define K3_PICK(i) \
  { K3_PICK8(i), K3_PICK8(i), K3_PICK8(i), K3_PICK8(i) }
alignas(32) constexpr uint8_t kPickI16[8][32] = {K3_PICK(0), K3_PICK(1), K3_PICK(2), K3_PICK(3),
                                                 K3_PICK(4), K3_PICK(5), K3_PICK(6), K3_PICK(7)};
#undef K3_PICK
#undef K3_PICK8
#undef K3_PICK2

inline __m256i pick_i16(__m256i v, int i) {
  return _mm256_shuffle_epi8(v, _mm256_load_si256(v256(kPickI16[i])));
}

// The Q8_K sub-block sums of token t as 16 int16.
inline __m256i bsums(const BlockQ8KA& y) { return _mm256_loadu_si256(v256(y.bsums)); }

// IQ2_XXS: the 8 group scales 2·(s>>28)+1 (s = odd u32 words) in every 128-bit half, group sb
// at int16 lane (sb < 4 ? 2·sb : 2·(sb−4)+1).
inline __m256i iq2xxs_scales(const blk::IQ2_XXS& x) {
  const __m256i v0 = _mm256_srli_epi64(_mm256_loadu_si256(v256(x.qs)), 60);
  const __m256i v1 = _mm256_srli_epi64(_mm256_loadu_si256(v256(x.qs + 16)), 60);
  const __m256i d = _mm256_or_si256(v0, _mm256_slli_epi64(v1, 32));  // [s0 s4 s1 s5 | s2 s6 s3 s7]
  const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(d, d), 0x88);
  return _mm256_add_epi16(_mm256_add_epi16(w, w), _mm256_set1_epi16(1));
}

constexpr int kIq2xxsScalePos[8] = {0, 2, 4, 6, 1, 3, 5, 7};

// Decode over R rows: each activation block is loaded once for the group, and each row's
// integer sums and float steps are the same whatever R, so R = 1 is the one-token kernel and
// every group row equals it bit for bit.
template <int R>
void iq2_xxs_rows(int64_t n, const uint8_t* w, size_t rs, const void* act, float* out) {
  const blk::IQ2_XXS* x[R];
  K3_UNROLL for (int r = 0; r < R; ++r) x[r] = reinterpret_cast<const blk::IQ2_XXS*>(w + r * rs);
  const BlockQ8KA* y = static_cast<const BlockQ8KA*>(act);
  const uint64_t* grid = quant::kIq2xxsGrid;
  const uint64_t* signs = signs_pm1();
  const size_t pf = prefetch_distance<R>(rs);
  __m256 acc[R];
  K3_UNROLL for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    __m256i scales[R], sumi[R];
    K3_UNROLL for (int r = 0; r < R; ++r) {
      prefetch_at(x[r] + b, pf);
      scales[r] = iq2xxs_scales(x[r][b]);
      sumi[r] = _mm256_setzero_si256();
    }
    K3_UNROLL for (int sb = 0; sb < 8; ++sb) {
      const __m256i av = _mm256_loadu_si256(v256(y[b].qs + 32 * sb));
      K3_UNROLL for (int r = 0; r < R; ++r) {
        const uint8_t* a = reinterpret_cast<const uint8_t*>(x[r][b].qs) + 8 * sb;
        const uint32_t s = blk::load_u32(a + 4);
        const __m256i g = grid4(grid, a[0], a[1], a[2], a[3]);
        const __m256i sg = grid4(signs, s & 127, (s >> 7) & 127, (s >> 14) & 127, (s >> 21) & 127);
        const __m256i ls = pick_i16(scales[r], kIq2xxsScalePos[sb]);
        sumi[r] = _mm256_add_epi32(sumi[r], simd::dot_us(g, _mm256_sign_epi8(av, sg), ls));
      }
    }
    K3_UNROLL for (int r = 0; r < R; ++r) {
      const float d = simd::f16(x[r][b].d);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[b].d), _mm256_cvtepi32_ps(sumi[r]), acc[r]);
    }
  }
  K3_UNROLL for (int r = 0; r < R; ++r) out[r] = 0.125f * simd::hsum(acc[r]);
}

// Several tokens against one row (prefill tiles).
template <int NT>
void iq2_xxs_tokens(int64_t n, const void* w, const void* act, size_t st, float* out) {
  const blk::IQ2_XXS* x = static_cast<const blk::IQ2_XXS*>(w);
  const BlockQ8KA* y[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8KA*>(simd::tok(act, st, t));
  const uint64_t* grid = quant::kIq2xxsGrid;
  const uint64_t* signs = signs_pm1();
  __m256 acc[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    uint32_t q[16];
    std::memcpy(q, x[b].qs, 64);
    const uint8_t* qb = reinterpret_cast<const uint8_t*>(x[b].qs);
    const __m256i scales = iq2xxs_scales(x[b]);
    __m256i sumi[NT];
    K3_UNROLL for (int t = 0; t < NT; ++t) sumi[t] = _mm256_setzero_si256();
    K3_UNROLL for (int sb = 0; sb < 8; ++sb) {
      const uint8_t* a = qb + 8 * sb;
      const uint32_t s = q[2 * sb + 1];
      const __m256i g = grid4(grid, a[0], a[1], a[2], a[3]);
      const __m256i sg = grid4(signs, s & 127, (s >> 7) & 127, (s >> 14) & 127, (s >> 21) & 127);
      const __m256i ls = pick_i16(scales, kIq2xxsScalePos[sb]);
      K3_UNROLL for (int t = 0; t < NT; ++t) {
        const __m256i av = _mm256_loadu_si256(v256(y[t][b].qs + 32 * sb));
        sumi[t] = _mm256_add_epi32(sumi[t], simd::dot_us(g, _mm256_sign_epi8(av, sg), ls));
      }
    }
    const float d = simd::f16(x[b].d);
    K3_UNROLL for (int t = 0; t < NT; ++t) acc[t] =
        _mm256_fmadd_ps(_mm256_set1_ps(d * y[t][b].d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
  }
  K3_UNROLL for (int t = 0; t < NT; ++t) out[t] = 0.125f * simd::hsum(acc[t]);
}

template <int NT>
void iq2_xxs_nt(int64_t n, const void* w, const void* act, size_t st, float* out) {
  if constexpr (NT == 1) iq2_xxs_rows<1>(n, static_cast<const uint8_t*>(w), 0, act, out);
  else iq2_xxs_tokens<NT>(n, w, act, st, out);
}

// IQ2_XS: scale byte sb holds the first-16 scale (low nibble) and the second-16 scale (high);
// as 2·s+1 with group sb at int16 lane sb, low nibbles in the low half, high in the high half.
inline __m256i iq2xs_scales(const blk::IQ2_XS& x) {
  const __m128i sc = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x.scales)));
  const __m128i m4 = _mm_set1_epi16(15);
  const __m256i s = _mm256_set_m128i(_mm_srli_epi16(sc, 4), _mm_and_si128(sc, m4));
  return _mm256_add_epi16(_mm256_add_epi16(s, s), _mm256_set1_epi16(1));
}

template <int NT>
void iq2_xs_nt(int64_t n, const void* w, const void* act, size_t st, float* out) {
  const blk::IQ2_XS* x = static_cast<const blk::IQ2_XS*>(w);
  const BlockQ8KA* y[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8KA*>(simd::tok(act, st, t));
  const uint64_t* grid = quant::kIq2xsGrid;
  const uint64_t* signs = signs_pm1();
  __m256 acc[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    if constexpr (NT == 1) prefetch_at(x + b, kPfAhead);
    const uint16_t* q = x[b].qs;
    const __m256i scales = iq2xs_scales(x[b]);
    __m256i sumi[NT];
    K3_UNROLL for (int t = 0; t < NT; ++t) sumi[t] = _mm256_setzero_si256();
    K3_UNROLL for (int sb = 0; sb < 8; ++sb) {
      const uint16_t* v = q + 4 * sb;
      const __m256i g = grid4(grid, v[0] & 511, v[1] & 511, v[2] & 511, v[3] & 511);
      const __m256i sg = grid4(signs, v[0] >> 9, v[1] >> 9, v[2] >> 9, v[3] >> 9);
      const __m256i ls = pick_i16(scales, sb);
      K3_UNROLL for (int t = 0; t < NT; ++t) {
        const __m256i av = _mm256_loadu_si256(v256(y[t][b].qs + 32 * sb));
        sumi[t] = _mm256_add_epi32(sumi[t], simd::dot_us(g, _mm256_sign_epi8(av, sg), ls));
      }
    }
    const float d = simd::f16(x[b].d);
    K3_UNROLL for (int t = 0; t < NT; ++t) acc[t] =
        _mm256_fmadd_ps(_mm256_set1_ps(d * y[t][b].d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
  }
  K3_UNROLL for (int t = 0; t < NT; ++t) out[t] = 0.125f * simd::hsum(acc[t]);
}

// Per-super-block IQ1 unpacking shared by both formats: the 32 table indices (grid index with
// the delta sign at bit 11), the scales in pick_i16 layout, and 9·ls per Q8_K sub-block of 16
// in bsums order (the offset correction).
struct Iq1Unpacked {
  alignas(32) uint16_t idx[32];
  __m256i scales;
  __m256i ls9;
};

// 2·s+1 from 3-bit fields: lane L of `words` holds the u16 containing its field, `mul` lifts the
// field to bits 13..15.
inline __m256i iq1_ls(__m256i words, __m256i mul) {
  const __m256i s3 = _mm256_srli_epi16(_mm256_mullo_epi16(words, mul), 13);
  return _mm256_add_epi16(_mm256_add_epi16(s3, s3), _mm256_set1_epi16(1));
}

// IQ1_S: qh word sb holds the high index bits of its four groups at 3l..3l+2, the scale at
// 12..14 and the delta sign at 15. Lane g of the index vectors gets word g/4; multiplying by
// 2^(13−3(g%4)) lifts that group's three bits to the top of the lane.
inline void iq1s_unpack(const blk::IQ1_S& x, Iq1Unpacked& u) {
  const __m128i qh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qh));
  const __m256i qh2 = _mm256_broadcastsi128_si256(qh);
  const __m256i mul = _mm256_setr_epi16(1 << 13, 1 << 10, 1 << 7, 1 << 4, 1 << 13, 1 << 10, 1 << 7, 1 << 4,
                                        1 << 13, 1 << 10, 1 << 7, 1 << 4, 1 << 13, 1 << 10, 1 << 7, 1 << 4);
  const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qs));
  const __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qs + 16));
  for (int half = 0; half < 2; ++half) {
    const char w0 = static_cast<char>(8 * half);  // byte offset of the first qh word of this half
    const __m256i ctrl =
        _mm256_setr_epi8(w0, w0 + 1, w0, w0 + 1, w0, w0 + 1, w0, w0 + 1, w0 + 2, w0 + 3, w0 + 2, w0 + 3,
                         w0 + 2, w0 + 3, w0 + 2, w0 + 3, w0 + 4, w0 + 5, w0 + 4, w0 + 5, w0 + 4, w0 + 5,
                         w0 + 4, w0 + 5, w0 + 6, w0 + 7, w0 + 6, w0 + 7, w0 + 6, w0 + 7, w0 + 6, w0 + 7);
    // both 128-bit lanes hold all of qh, so lane-local byte indices address any word
    const __m256i words = _mm256_shuffle_epi8(qh2, ctrl);
    const __m256i hi3 = _mm256_srli_epi16(_mm256_mullo_epi16(words, mul), 13);
    const __m256i sign = _mm256_srli_epi16(words, 15);
    const __m256i lo = _mm256_cvtepu8_epi16(half ? q1 : q0);
    const __m256i v =
        _mm256_or_si256(lo, _mm256_or_si256(_mm256_slli_epi16(hi3, 8), _mm256_slli_epi16(sign, 11)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(u.idx + 16 * half), v);
  }
  // scale of group sb at int16 lane sb of both halves; per sub-block of 16: lane t ← word t/2
  const __m256i top = _mm256_set1_epi16(1 << 1);  // bits 12..14 → 13..15
  u.scales = iq1_ls(qh2, top);
  const __m256i pairs = _mm256_set_m128i(_mm_unpackhi_epi16(qh, qh), _mm_unpacklo_epi16(qh, qh));
  const __m256i ls = iq1_ls(pairs, top);
  u.ls9 = _mm256_add_epi16(_mm256_slli_epi16(ls, 3), ls);
}

// IQ1_M's scales field (four u16: 3-bit sub-block scales, the f16 d in the top nibbles) as the
// sub-block scales in pick_i16 layout and 9·ls per Q8_K sub-block of 16 in bsums order; shared
// by the file layout and the decode layout, which keeps the field as it is.
inline void iq1m_scales(const uint8_t* field, __m256i& scales, __m256i& ls9) {
  int64_t sc;
  std::memcpy(&sc, field, 8);
  const __m256i words = _mm256_set1_epi64x(sc);
  // pick layout: low half lane p = sub-block 2p, high half lane p = sub-block 2p+1 (the two
  // 16-element halves of group p); field j sits in word j/4 at bits 3(j%4).
  scales =
      iq1_ls(_mm256_shuffle_epi8(words, _mm256_setr_epi8(0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7, 0, 1,
                                                         0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7)),
             _mm256_setr_epi16(1 << 13, 1 << 7, 1 << 13, 1 << 7, 1 << 13, 1 << 7, 1 << 13, 1 << 7, 1 << 10,
                               1 << 4, 1 << 10, 1 << 4, 1 << 10, 1 << 4, 1 << 10, 1 << 4));
  // bsums order: lane j = sub-block j
  const __m256i ls =
      iq1_ls(_mm256_shuffle_epi8(words, _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 4, 5,
                                                         4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7)),
             _mm256_setr_epi16(1 << 13, 1 << 10, 1 << 7, 1 << 4, 1 << 13, 1 << 10, 1 << 7, 1 << 4, 1 << 13,
                               1 << 10, 1 << 7, 1 << 4, 1 << 13, 1 << 10, 1 << 7, 1 << 4));
  ls9 = _mm256_add_epi16(_mm256_slli_epi16(ls, 3), ls);
}

// IQ1_M: the 32 indices are qs byte | qh nibble << 8 (nibble bit 3 = delta sign).
inline void iq1m_unpack(const blk::IQ1_M& x, Iq1Unpacked& u) {
  iq1m_indices(x, u.idx);
  iq1m_scales(x.scales, u.scales, u.ls9);
}

// Decode over R rows, sharing each activation block; each row's integer sums and float steps
// are the same whatever R, so R = 1 is the one-token kernel (both IQ1 formats).
template <int R, class Block, class Unpack, class Scale>
void iq1_rows(int64_t n, const uint8_t* w, size_t rs, const void* act, float* out, Unpack unpack,
              Scale scale) {
  const Block* x[R];
  K3_UNROLL for (int r = 0; r < R; ++r) x[r] = reinterpret_cast<const Block*>(w + r * rs);
  const BlockQ8KA* y = static_cast<const BlockQ8KA*>(act);
  const uint64_t* grid = iq1_offset_grid();
  const size_t pf = prefetch_distance<R>(rs);
  __m256 acc[R];
  K3_UNROLL for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  Iq1Unpacked u[R];
  for (int64_t b = 0; b < n / 256; ++b) {
    const __m256i bs = bsums(y[b]);
    __m256i sumi[R];
    K3_UNROLL for (int r = 0; r < R; ++r) {
      prefetch_at(x[r] + b, pf);
      unpack(x[r][b], u[r]);
      sumi[r] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_madd_epi16(u[r].ls9, bs));
    }
    K3_UNROLL for (int sb = 0; sb < 8; ++sb) {
      const __m256i av = _mm256_loadu_si256(v256(y[b].qs + 32 * sb));
      K3_UNROLL for (int r = 0; r < R; ++r) {
        uint64_t i4;
        std::memcpy(&i4, u[r].idx + 4 * sb, 8);
        const __m256i wv = grid4(grid, static_cast<uint16_t>(i4), static_cast<uint16_t>(i4 >> 16),
                                 static_cast<uint16_t>(i4 >> 32), static_cast<uint32_t>(i4 >> 48));
        sumi[r] = _mm256_add_epi32(sumi[r], simd::dot_us(wv, av, pick_i16(u[r].scales, sb)));
      }
    }
    K3_UNROLL for (int r = 0; r < R; ++r) {
      const float d = scale(x[r][b]);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[b].d), _mm256_cvtepi32_ps(sumi[r]), acc[r]);
    }
  }
  K3_UNROLL for (int r = 0; r < R; ++r) out[r] = 0.125f * simd::hsum(acc[r]);
}

// Shared IQ1 super-block loop over several tokens (prefill tiles):
// Σ_j ls_j·(Σ u·a − 9·bsum_j) per token.
template <int NT, class Block, class Unpack, class Scale>
void iq1_tokens(int64_t n, const void* w, const void* act, size_t st, float* out, Unpack unpack,
                Scale scale) {
  const Block* x = static_cast<const Block*>(w);
  const BlockQ8KA* y[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8KA*>(simd::tok(act, st, t));
  const uint64_t* grid = iq1_offset_grid();
  __m256 acc[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  Iq1Unpacked u;
  for (int64_t b = 0; b < n / 256; ++b) {
    unpack(x[b], u);
    __m256i sumi[NT];
    K3_UNROLL for (int t = 0; t < NT; ++t) sumi[t] =
        _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_madd_epi16(u.ls9, bsums(y[t][b])));
    K3_UNROLL for (int sb = 0; sb < 8; ++sb) {
      uint64_t i4;  // four indices in one GPR load
      std::memcpy(&i4, u.idx + 4 * sb, 8);
      const __m256i wv = grid4(grid, static_cast<uint16_t>(i4), static_cast<uint16_t>(i4 >> 16),
                               static_cast<uint16_t>(i4 >> 32), static_cast<uint32_t>(i4 >> 48));
      const __m256i ls = pick_i16(u.scales, sb);
      K3_UNROLL for (int t = 0; t < NT; ++t) {
        const __m256i av = _mm256_loadu_si256(v256(y[t][b].qs + 32 * sb));
        sumi[t] = _mm256_add_epi32(sumi[t], simd::dot_us(wv, av, ls));
      }
    }
    const float d = scale(x[b]);
    K3_UNROLL for (int t = 0; t < NT; ++t) acc[t] =
        _mm256_fmadd_ps(_mm256_set1_ps(d * y[t][b].d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
  }
  K3_UNROLL for (int t = 0; t < NT; ++t) out[t] = 0.125f * simd::hsum(acc[t]);
}

template <int NT, class Block, class Unpack, class Scale>
void iq1_nt(int64_t n, const void* w, const void* act, size_t st, float* out, Unpack unpack, Scale scale) {
  if constexpr (NT == 1) iq1_rows<1, Block>(n, static_cast<const uint8_t*>(w), 0, act, out, unpack, scale);
  else iq1_tokens<NT, Block>(n, w, act, st, out, unpack, scale);
}

template <int NT>
void iq1_s_nt(int64_t n, const void* w, const void* act, size_t st, float* out) {
  iq1_nt<NT, blk::IQ1_S>(n, w, act, st, out, iq1s_unpack, [](const blk::IQ1_S& x) { return simd::f16(x.d); });
}

template <int NT>
void iq1_m_nt(int64_t n, const void* w, const void* act, size_t st, float* out) {
  iq1_nt<NT, blk::IQ1_M>(n, w, act, st, out, iq1m_unpack,
                         [](const blk::IQ1_M& x) { return simd::f16(blk::iq1m_scale_bits(x.scales)); });
}

template <int R>
void iq1_m_rows(int64_t n, const uint8_t* w, size_t rs, const void* act, float* out) {
  iq1_rows<R, blk::IQ1_M>(n, w, rs, act, out, iq1m_unpack,
                          [](const blk::IQ1_M& x) { return simd::f16(blk::iq1m_scale_bits(x.scales)); });
}

// IQ1_M in its decode layout (kernels/decode_layout.h), without the grid: each group's bytes
// from Iq1mDecodeGroups (iq_unpack_avx2.h) are the offset grid's 8·grid + 9 ± 1 exactly, so
// the rest (maddubs, the scales, −9·Σa) is the file layout kernel's and the integer sums and
// float steps equal it bit for bit. Seven vector uops per 32 weights against about twelve with
// the grid gathers and the index unpacking.
template <int R>
void iq1_m_decode_rows(int64_t n, const uint8_t* w, size_t rs, const void* act, float* out) {
  const Iq1mDecodeBlock* x[R];
  K3_UNROLL for (int r = 0; r < R; ++r) x[r] = reinterpret_cast<const Iq1mDecodeBlock*>(w + r * rs);
  const BlockQ8KA* y = static_cast<const BlockQ8KA*>(act);
  const Iq1mDecodeGroups groups;
  const size_t pf = prefetch_distance<R>(rs);
  __m256 acc[R];
  K3_UNROLL for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    const __m256i bs = bsums(y[b]);
    __m256i sumi[R], scales[R];
    K3_UNROLL for (int r = 0; r < R; ++r) {
      prefetch_at(x[r] + b, pf);
      __m256i ls9;
      iq1m_scales(x[r][b].scales, scales[r], ls9);
      sumi[r] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_madd_epi16(ls9, bs));
    }
    K3_UNROLL for (int sb = 0; sb < 8; ++sb) {
      const __m256i av = _mm256_loadu_si256(v256(y[b].qs + 32 * sb));
      K3_UNROLL for (int r = 0; r < R; ++r) {
        const __m256i wv = groups.group(x[r][b], sb);
        sumi[r] = _mm256_add_epi32(sumi[r], simd::dot_us(wv, av, pick_i16(scales[r], sb)));
      }
    }
    K3_UNROLL for (int r = 0; r < R; ++r) {
      const float d = simd::f16(blk::iq1m_scale_bits(x[r][b].scales));
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[b].d), _mm256_cvtepi32_ps(sumi[r]), acc[r]);
    }
  }
  K3_UNROLL for (int r = 0; r < R; ++r) out[r] = 0.125f * simd::hsum(acc[r]);
}

// IQ2_XXS in its decode layout (kernels/decode_layout.h): Iq2xxsDecodeGroups (iq_unpack_avx2.h)
// gives each group's weights as ±grid + 64 ∈ [21, 107]: unsigned, as maddubs wants, with no
// sign table. The +64 comes out in int16, where
// maddubs(64, a) (once per group for all the rows) is subtracted from each pair sum, so the
// pairs are Σ w·a exactly as the file kernel's maddubs(|w|, ±a) makes them (|pair| ≤ 2·107·127
// < 2^15: no saturation), and madd by the group scale and the float steps are the file
// kernel's: results equal it bit for bit. Seven vector uops per 32 weights (plus half a
// maddubs) against about eleven and eight loads with the grid and sign lookups.
template <int R>
void iq2_xxs_decode_rows(int64_t n, const uint8_t* w, size_t rs, const void* act, float* out) {
  const Iq2xxsDecodeBlock* x[R];
  K3_UNROLL for (int r = 0; r < R; ++r) x[r] = reinterpret_cast<const Iq2xxsDecodeBlock*>(w + r * rs);
  const BlockQ8KA* y = static_cast<const BlockQ8KA*>(act);
  const Iq2xxsDecodeGroups groups(64);
  const __m256i k64 = _mm256_set1_epi8(64);
  const size_t pf = prefetch_distance<R>(rs);
  __m256 acc[R];
  K3_UNROLL for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    __m256i sumi[R], ls[R];
    K3_UNROLL for (int r = 0; r < R; ++r) {
      prefetch_at(x[r] + b, pf);
      ls[r] = _mm256_broadcastsi128_si256(
          _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x[r][b].ls))));
      sumi[r] = _mm256_setzero_si256();
    }
    K3_UNROLL for (int g = 0; g < 8; ++g) {
      const __m256i av = _mm256_loadu_si256(v256(y[b].qs + 32 * g));
      const __m256i bias = _mm256_maddubs_epi16(k64, av);
      K3_UNROLL for (int r = 0; r < R; ++r) {
        const __m256i wv = groups.group(x[r][b], g);
        const __m256i pairs = _mm256_sub_epi16(_mm256_maddubs_epi16(wv, av), bias);
        sumi[r] = _mm256_add_epi32(sumi[r], _mm256_madd_epi16(pairs, pick_i16(ls[r], g)));
      }
    }
    K3_UNROLL for (int r = 0; r < R; ++r) acc[r] =
        _mm256_fmadd_ps(_mm256_set1_ps(x[r][b].d * y[b].d), _mm256_cvtepi32_ps(sumi[r]), acc[r]);
  }
  K3_UNROLL for (int r = 0; r < R; ++r) out[r] = 0.125f * simd::hsum(acc[r]);
}

}  // namespace

void dot_rows_iq2_xxs(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                      float* out) {
  rows_by_group<kGroupRows, iq2_xxs_rows<kGroupRows>, iq2_xxs_rows<1>>(n, w, row_stride, n_rows, act, out);
}

void dot_rows_iq1_m(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                    float* out) {
  rows_by_group<kGroupRows, iq1_m_rows<kGroupRows>, iq1_m_rows<1>>(n, w, row_stride, n_rows, act, out);
}

void dot_rows_iq1_m_decode(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                           float* out) {
  rows_by_group<kGroupRows, iq1_m_decode_rows<kGroupRows>, iq1_m_decode_rows<1>>(n, w, row_stride, n_rows,
                                                                                 act, out);
}

void dot_rows_iq2_xxs_decode(int64_t n, const void* w, size_t row_stride, int64_t n_rows, const void* act,
                             float* out) {
  rows_by_group<kGroupRows, iq2_xxs_decode_rows<kGroupRows>, iq2_xxs_decode_rows<1>>(n, w, row_stride, n_rows,
                                                                                     act, out);
}

K3_DOT_DISPATCH(iq2_xxs)
K3_DOT_DISPATCH(iq2_xs)
K3_DOT_DISPATCH(iq1_s)
K3_DOT_DISPATCH(iq1_m)

}  // namespace k3::kernels::impl
