// AVX2 dot products of the grid types IQ2_XXS, IQ2_XS, IQ1_S, IQ1_M against Q8_K activations
// (../research/ggml-formats.md §2.9–2.11, §3.15). Every 8-element group is one 64-bit grid
// lookup; four of them make a 32-byte weight vector.
// IQ2: unsigned grid magnitudes × sign-flipped activations (ksigns64 masks).
// IQ1: a value grid+δ with δ = ±1/8 is the exact integer (8·grid ± 1) over 8, so a derived
// table of 8·grid±1 bytes, indexed by (delta sign, 11-bit grid index), turns the grid and its
// delta into one signed weight byte and one integer dot, with the 1/8 folded into the scale.
#include <immintrin.h>

#include <cstring>

#include "kernels/act_quant.h"
#include "kernels/blocks.h"
#include "kernels/simd.h"
#include "kernels/vec_dot_impl.h"
#include "quant/codebooks.h"

namespace k3::kernels::impl {

namespace {

inline const __m256i* v256(const void* p) { return reinterpret_cast<const __m256i*>(p); }

// Four 64-bit table entries into one vector. Broadcast loads are pure load-port uops, so
// this costs 4 loads + 3 blends instead of GPR→vector inserts.
inline __m256i gather4(const uint64_t* table, uint32_t i0, uint32_t i1, uint32_t i2, uint32_t i3) {
  auto bc = [&](uint32_t i) {
    return _mm256_castpd_si256(_mm256_broadcast_sd(reinterpret_cast<const double*>(table + i)));
  };
  const __m256i a = _mm256_blend_epi32(bc(i0), bc(i1), 0x0C);
  const __m256i b = _mm256_blend_epi32(bc(i2), bc(i3), 0xC0);
  return _mm256_blend_epi32(a, b, 0xF0);
}

// 4096 entries: index | (delta sign << 11) → bytes 8·grid + (sign ? −1 : +1).
struct Iq1DeltaGrid {
  uint64_t v[4096];
  Iq1DeltaGrid() {
    for (int s = 0; s < 2; ++s)
      for (int i = 0; i < 2048; ++i) {
        uint64_t e = 0;
        for (int j = 0; j < 8; ++j) {
          const int g = static_cast<int8_t>((quant::kIq1sGrid[i] >> (8 * j)) & 0xFF);
          const int b = 8 * g + (s ? -1 : 1);
          e |= static_cast<uint64_t>(static_cast<uint8_t>(b)) << (8 * j);
        }
        v[s << 11 | i] = e;
      }
  }
};

const uint64_t* iq1_delta_grid() {
  static const Iq1DeltaGrid g;
  return g.v;
}

template <int NT>
void iq2_xxs_nt(int64_t n, const void* w, const void* act, size_t st, float* out) {
  const blk::IQ2_XXS* x = static_cast<const blk::IQ2_XXS*>(w);
  const BlockQ8KA* y[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8KA*>(simd::tok(act, st, t));
  const uint64_t* grid = quant::kIq2xxsGrid;
  const uint64_t* signs = quant::kKsigns64;
  __m256 acc[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    uint32_t q[16];
    std::memcpy(q, x[b].qs, 64);
    const uint8_t* qb = reinterpret_cast<const uint8_t*>(x[b].qs);
    __m256i sumi[NT];
    K3_UNROLL for (int t = 0; t < NT; ++t) sumi[t] = _mm256_setzero_si256();
    K3_UNROLL for (int sb = 0; sb < 8; ++sb) {
      const uint8_t* a = qb + 8 * sb;
      const uint32_t s = q[2 * sb + 1];
      const __m256i g = gather4(grid, a[0], a[1], a[2], a[3]);
      const __m256i sg = gather4(signs, s & 127, (s >> 7) & 127, (s >> 14) & 127, (s >> 21) & 127);
      const __m256i ls = _mm256_set1_epi16(static_cast<int16_t>(2 * (s >> 28) + 1));
      K3_UNROLL for (int t = 0; t < NT; ++t) {
        const __m256i av = _mm256_loadu_si256(v256(y[t][b].qs + 32 * sb));
        const __m256i as = _mm256_sub_epi8(_mm256_xor_si256(av, sg), sg);
        sumi[t] = _mm256_add_epi32(sumi[t], simd::dot_us(g, as, ls));
      }
    }
    const float d = blk::f16(x[b].d);
    K3_UNROLL for (int t = 0; t < NT; ++t)
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[t][b].d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
  }
  K3_UNROLL for (int t = 0; t < NT; ++t) out[t] = 0.125f * simd::hsum(acc[t]);
}

template <int NT>
void iq2_xs_nt(int64_t n, const void* w, const void* act, size_t st, float* out) {
  const blk::IQ2_XS* x = static_cast<const blk::IQ2_XS*>(w);
  const BlockQ8KA* y[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8KA*>(simd::tok(act, st, t));
  const uint64_t* grid = quant::kIq2xsGrid;
  const uint64_t* signs = quant::kKsigns64;
  __m256 acc[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    const uint16_t* q = x[b].qs;
    __m256i sumi[NT];
    K3_UNROLL for (int t = 0; t < NT; ++t) sumi[t] = _mm256_setzero_si256();
    K3_UNROLL for (int sb = 0; sb < 8; ++sb) {
      const uint16_t* v = q + 4 * sb;
      const __m256i g = gather4(grid, v[0] & 511, v[1] & 511, v[2] & 511, v[3] & 511);
      const __m256i sg = gather4(signs, v[0] >> 9, v[1] >> 9, v[2] >> 9, v[3] >> 9);
      const int sc = x[b].scales[sb];
      const __m256i ls = _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(2 * (sc >> 4) + 1)),
                                          _mm_set1_epi16(static_cast<int16_t>(2 * (sc & 15) + 1)));
      K3_UNROLL for (int t = 0; t < NT; ++t) {
        const __m256i av = _mm256_loadu_si256(v256(y[t][b].qs + 32 * sb));
        const __m256i as = _mm256_sub_epi8(_mm256_xor_si256(av, sg), sg);
        sumi[t] = _mm256_add_epi32(sumi[t], simd::dot_us(g, as, ls));
      }
    }
    const float d = blk::f16(x[b].d);
    K3_UNROLL for (int t = 0; t < NT; ++t)
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[t][b].d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
  }
  K3_UNROLL for (int t = 0; t < NT; ++t) out[t] = 0.125f * simd::hsum(acc[t]);
}

// IQ1_S per super-block unpacking: qh word b holds the high index bits of its four groups at
// 3l..3l+2, the scale at 12..14 and the delta sign at 15. Lane g of the index vectors gets word
// g/4; multiplying by 2^(13−3(g%4)) lifts that group's three bits to the top of the lane.
inline void iq1s_unpack(const blk::IQ1_S& x, uint16_t idx[32], int16_t ls[8]) {
  const __m128i qh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qh));
  const __m256i qh2 = _mm256_broadcastsi128_si256(qh);
  const __m256i mul = _mm256_setr_epi16(1 << 13, 1 << 10, 1 << 7, 1 << 4, 1 << 13, 1 << 10, 1 << 7,
                                        1 << 4, 1 << 13, 1 << 10, 1 << 7, 1 << 4, 1 << 13, 1 << 10,
                                        1 << 7, 1 << 4);
  const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qs));
  const __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qs + 16));
  for (int half = 0; half < 2; ++half) {
    const int w0 = 8 * half;  // byte offset of the first qh word of this half
    const __m256i ctrl = _mm256_setr_epi8(
        static_cast<char>(w0), static_cast<char>(w0 + 1), static_cast<char>(w0), static_cast<char>(w0 + 1),
        static_cast<char>(w0), static_cast<char>(w0 + 1), static_cast<char>(w0), static_cast<char>(w0 + 1),
        static_cast<char>(w0 + 2), static_cast<char>(w0 + 3), static_cast<char>(w0 + 2), static_cast<char>(w0 + 3),
        static_cast<char>(w0 + 2), static_cast<char>(w0 + 3), static_cast<char>(w0 + 2), static_cast<char>(w0 + 3),
        static_cast<char>(w0 + 4), static_cast<char>(w0 + 5), static_cast<char>(w0 + 4), static_cast<char>(w0 + 5),
        static_cast<char>(w0 + 4), static_cast<char>(w0 + 5), static_cast<char>(w0 + 4), static_cast<char>(w0 + 5),
        static_cast<char>(w0 + 6), static_cast<char>(w0 + 7), static_cast<char>(w0 + 6), static_cast<char>(w0 + 7),
        static_cast<char>(w0 + 6), static_cast<char>(w0 + 7), static_cast<char>(w0 + 6), static_cast<char>(w0 + 7));
    // both 128-bit lanes hold all of qh, so lane-local byte indices address any word
    const __m256i words = _mm256_shuffle_epi8(qh2, ctrl);
    const __m256i hi3 = _mm256_srli_epi16(_mm256_mullo_epi16(words, mul), 13);
    const __m256i sign = _mm256_srli_epi16(words, 15);
    const __m256i lo = _mm256_cvtepu8_epi16(half ? q1 : q0);
    const __m256i v = _mm256_or_si256(lo, _mm256_or_si256(_mm256_slli_epi16(hi3, 8), _mm256_slli_epi16(sign, 11)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(idx + 16 * half), v);
  }
  const __m128i s3 = _mm_and_si128(_mm_srli_epi16(qh, 12), _mm_set1_epi16(7));
  _mm_store_si128(reinterpret_cast<__m128i*>(ls), _mm_add_epi16(_mm_add_epi16(s3, s3), _mm_set1_epi16(1)));
}

template <int NT>
void iq1_s_nt(int64_t n, const void* w, const void* act, size_t st, float* out) {
  const blk::IQ1_S* x = static_cast<const blk::IQ1_S*>(w);
  const BlockQ8KA* y[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8KA*>(simd::tok(act, st, t));
  const uint64_t* grid = iq1_delta_grid();
  __m256 acc[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  alignas(32) uint16_t idx[32];
  alignas(16) int16_t ls[8];
  for (int64_t b = 0; b < n / 256; ++b) {
    iq1s_unpack(x[b], idx, ls);
    __m256i sumi[NT];
    K3_UNROLL for (int t = 0; t < NT; ++t) sumi[t] = _mm256_setzero_si256();
    K3_UNROLL for (int sb = 0; sb < 8; ++sb) {
      const __m256i wv = gather4(grid, idx[4 * sb], idx[4 * sb + 1], idx[4 * sb + 2], idx[4 * sb + 3]);
      const __m256i wa = _mm256_abs_epi8(wv);
      const __m256i lsv = _mm256_set1_epi16(ls[sb]);
      K3_UNROLL for (int t = 0; t < NT; ++t) {
        const __m256i av = _mm256_loadu_si256(v256(y[t][b].qs + 32 * sb));
        sumi[t] = _mm256_add_epi32(sumi[t], simd::dot_ss(wa, wv, av, lsv));
      }
    }
    const float d = blk::f16(x[b].d);
    K3_UNROLL for (int t = 0; t < NT; ++t)
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[t][b].d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
  }
  K3_UNROLL for (int t = 0; t < NT; ++t) out[t] = 0.125f * simd::hsum(acc[t]);
}

// The 32 grid indices (qs byte | qh nibble << 8, the nibble's bit 3 being the delta sign)
// and the 16 scales of a super-block are unpacked with a few vector ops into small arrays,
// so the per-group work is just an index load and a broadcast load.
inline void iq1m_unpack(const blk::IQ1_M& x, uint16_t idx[32], int16_t ls[16]) {
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
  // lane t holds word t/4; multiplying by 2^(13−3(t%4)) brings bits 3(t%4)..+2 to the top
  int64_t sc;
  std::memcpy(&sc, x.scales, 8);
  const __m256i words = _mm256_shuffle_epi8(
      _mm256_set1_epi64x(sc), _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3,
                                               4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7));
  const __m256i mul = _mm256_setr_epi16(1 << 13, 1 << 10, 1 << 7, 1 << 4, 1 << 13, 1 << 10, 1 << 7,
                                        1 << 4, 1 << 13, 1 << 10, 1 << 7, 1 << 4, 1 << 13, 1 << 10,
                                        1 << 7, 1 << 4);
  const __m256i s3 = _mm256_srli_epi16(_mm256_mullo_epi16(words, mul), 13);
  _mm256_store_si256(reinterpret_cast<__m256i*>(ls),
                     _mm256_add_epi16(_mm256_add_epi16(s3, s3), _mm256_set1_epi16(1)));
}

template <int NT>
void iq1_m_nt(int64_t n, const void* w, const void* act, size_t st, float* out) {
  const blk::IQ1_M* x = static_cast<const blk::IQ1_M*>(w);
  const BlockQ8KA* y[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8KA*>(simd::tok(act, st, t));
  const uint64_t* grid = iq1_delta_grid();
  __m256 acc[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  alignas(32) uint16_t idx[32];
  alignas(32) int16_t ls[16];
  for (int64_t b = 0; b < n / 256; ++b) {
    iq1m_unpack(x[b], idx, ls);
    __m256i sumi[NT];
    K3_UNROLL for (int t = 0; t < NT; ++t) sumi[t] = _mm256_setzero_si256();
    K3_UNROLL for (int sb = 0; sb < 8; ++sb) {
      const __m256i wv = gather4(grid, idx[4 * sb], idx[4 * sb + 1], idx[4 * sb + 2], idx[4 * sb + 3]);
      const __m256i wa = _mm256_abs_epi8(wv);
      const __m256i lsv = _mm256_set_m128i(_mm_set1_epi16(ls[2 * sb + 1]), _mm_set1_epi16(ls[2 * sb]));
      K3_UNROLL for (int t = 0; t < NT; ++t) {
        const __m256i av = _mm256_loadu_si256(v256(y[t][b].qs + 32 * sb));
        sumi[t] = _mm256_add_epi32(sumi[t], simd::dot_ss(wa, wv, av, lsv));
      }
    }
    const float d = blk::iq1m_d(x[b].scales);
    K3_UNROLL for (int t = 0; t < NT; ++t)
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[t][b].d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
  }
  K3_UNROLL for (int t = 0; t < NT; ++t) out[t] = 0.125f * simd::hsum(acc[t]);
}

}  // namespace

K3_DOT_DISPATCH(iq2_xxs)
K3_DOT_DISPATCH(iq2_xs)
K3_DOT_DISPATCH(iq1_s)
K3_DOT_DISPATCH(iq1_m)

}  // namespace k3::kernels::impl
