// AVX2 dot products of the k-quants Q2_K, Q3_K, Q4_K, Q6_K against Q8_K activations
// (ggml's block_q*_K layouts; the pairing in docs/quant-formats.md). Weights are unpacked to
// non-negative bytes (q2 ∈ 0..3, q3+4 ∈ 0..7, q4 ∈ 0..15, q6+32 ∈ 0..63) so maddubs can take
// them as the unsigned operand; the offsets and the k-quant mins become one term per 16
// elements through the activation block sums (bsums), exactly as in the scalar twins.
#include <immintrin.h>

#include "kernels/act_quant.h"
#include "quant/blocks.h"
#include "kernels/x86/q3k_scales.h"
#include "kernels/x86/simd.h"
#include "kernels/vec_dot_impl.h"

namespace k3::kernels::impl {

namespace {

using simd::dot_us;

inline const __m256i* v256(const void* p) { return reinterpret_cast<const __m256i*>(p); }

// Decode (one token) streams each row once: ask for the super-block decode_prefetch_bytes() ahead
// into L2, as the Q8_0 kernel does (x86/q8_loops.h); every line it touches, however it is
// aligned.
template <int NT, class Block>
inline void prefetch_ahead(const Block* b) {
  if constexpr (NT == 1) {
    const char* p = reinterpret_cast<const char*>(b) + decode_prefetch_bytes();
    K3_UNROLL for (size_t o = 0; o < sizeof(Block); o += 64) _mm_prefetch(p + o, _MM_HINT_T1);
    _mm_prefetch(p + sizeof(Block) - 1, _MM_HINT_T1);
  }
}

// [s_a ×8 | s_b ×8] as int16 from 16 int8 scales held in a 128-bit register.
inline __m256i pair_scales_i8(__m128i scales, int a, int b) {
  const __m128i ctrl = _mm_set_epi64x(static_cast<int64_t>(0x0101010101010101ull * b),
                                      static_cast<int64_t>(0x0101010101010101ull * a));
  return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, ctrl));
}

template <int NT>
void q2_k_nt(int64_t n, const void* w, const void* act, size_t st, float* out) {
  const blk::Q2_K* x = static_cast<const blk::Q2_K*>(w);
  const BlockQ8KA* y[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8KA*>(simd::tok(act, st, t));
  const __m256i m3 = _mm256_set1_epi8(3);
  __m256 acc[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    prefetch_ahead<NT>(x + b);
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].scales));
    const __m128i sc = _mm_and_si128(raw, _mm_set1_epi8(0x0F));
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(0x0F)));
    const float dall = simd::f16(x[b].d), dmin = simd::f16(x[b].dmin);
    __m256i sumi[NT];
    K3_UNROLL for (int t = 0; t < NT; ++t) sumi[t] = _mm256_setzero_si256();
    K3_UNROLL for (int h = 0; h < 2; ++h) {
      const __m256i q = _mm256_loadu_si256(v256(x[b].qs + 32 * h));
      K3_UNROLL for (int l = 0; l < 4; ++l) {
        const __m256i ql = _mm256_and_si256(_mm256_srli_epi16(q, 2 * l), m3);
        const __m256i s = pair_scales_i8(sc, 8 * h + 2 * l, 8 * h + 2 * l + 1);
        K3_UNROLL for (int t = 0; t < NT; ++t) {
          const __m256i a = _mm256_loadu_si256(v256(y[t][b].qs + 128 * h + 32 * l));
          sumi[t] = _mm256_add_epi32(sumi[t], dot_us(ql, a, s));
        }
      }
    }
    K3_UNROLL for (int t = 0; t < NT; ++t) {
      const __m256i bs = _mm256_loadu_si256(v256(y[t][b].bsums));
      const __m256 fm = _mm256_cvtepi32_ps(_mm256_madd_epi16(bs, mins));
      const __m256 fi = _mm256_cvtepi32_ps(sumi[t]);
      const float dy = y[t][b].d;
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dall * dy), fi, acc[t]);
      acc[t] = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * dy), fm, acc[t]);
    }
  }
  K3_UNROLL for (int t = 0; t < NT; ++t) out[t] = simd::hsum(acc[t]);
}

template <int NT>
void q3_k_nt(int64_t n, const void* w, const void* act, size_t st, float* out) {
  const blk::Q3_K* x = static_cast<const blk::Q3_K*>(w);
  const BlockQ8KA* y[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8KA*>(simd::tok(act, st, t));
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m256i four = _mm256_set1_epi8(4);
  __m256 acc[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    prefetch_ahead<NT>(x + b);
    const __m128i sc = q3k_scales_vec(x[b].scales);
    const __m256i sc16 = _mm256_cvtepi8_epi16(sc);
    const __m256i hm = _mm256_loadu_si256(v256(x[b].hmask));
    __m256i sumi[NT];
    K3_UNROLL for (int t = 0; t < NT; ++t) sumi[t] = _mm256_setzero_si256();
    K3_UNROLL for (int h = 0; h < 2; ++h) {
      const __m256i q = _mm256_loadu_si256(v256(x[b].qs + 32 * h));
      K3_UNROLL for (int l = 0; l < 4; ++l) {
        const __m256i bit = _mm256_set1_epi8(static_cast<char>(1 << (4 * h + l)));
        const __m256i hb = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit), four);
        const __m256i u = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * l), m3), hb);
        const __m256i s = pair_scales_i8(sc, 8 * h + 2 * l, 8 * h + 2 * l + 1);
        K3_UNROLL for (int t = 0; t < NT; ++t) {
          const __m256i a = _mm256_loadu_si256(v256(y[t][b].qs + 128 * h + 32 * l));
          sumi[t] = _mm256_add_epi32(sumi[t], dot_us(u, a, s));
        }
      }
    }
    const float d = simd::f16(x[b].d);
    K3_UNROLL for (int t = 0; t < NT; ++t) {
      // q3 = u − 4: remove 4·Σ_j s_j·bsums_j
      const __m256i bs = _mm256_loadu_si256(v256(y[t][b].bsums));
      const __m256i corr = _mm256_slli_epi32(_mm256_madd_epi16(bs, sc16), 2);
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[t][b].d),
                               _mm256_cvtepi32_ps(_mm256_sub_epi32(sumi[t], corr)), acc[t]);
    }
  }
  K3_UNROLL for (int t = 0; t < NT; ++t) out[t] = simd::hsum(acc[t]);
}

template <int NT>
void q4_k_nt(int64_t n, const void* w, const void* act, size_t st, float* out) {
  const blk::Q4_K* x = static_cast<const blk::Q4_K*>(w);
  const BlockQ8KA* y[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8KA*>(simd::tok(act, st, t));
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  __m256 acc[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    prefetch_ahead<NT>(x + b);
    // six-bit scales/mins four at a time in 32-bit words (same result as blk::q4k_scale_min)
    const uint32_t w0 = blk::load_u32(x[b].scales), w1 = blk::load_u32(x[b].scales + 4),
                   w2 = blk::load_u32(x[b].scales + 8);
    const uint64_t scw = static_cast<uint64_t>(w0 & 0x3f3f3f3fu) |
                         static_cast<uint64_t>((w2 & 0x0f0f0f0fu) | ((w0 >> 2) & 0x30303030u)) << 32;
    const uint64_t mw = static_cast<uint64_t>(w1 & 0x3f3f3f3fu) |
                        static_cast<uint64_t>(((w2 >> 4) & 0x0f0f0f0fu) | ((w1 >> 2) & 0x30303030u)) << 32;
    const __m128i mb = _mm_cvtsi64_si128(static_cast<int64_t>(mw));
    const __m256i mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mb, mb));  // m0 m0 m1 m1 ...
    int sc[8];
    K3_UNROLL for (int j = 0; j < 8; ++j) sc[j] = static_cast<int>((scw >> (8 * j)) & 0xFF);
    __m256i sumi[NT];
    K3_UNROLL for (int t = 0; t < NT; ++t) sumi[t] = _mm256_setzero_si256();
    K3_UNROLL for (int c = 0; c < 4; ++c) {
      const __m256i q4 = _mm256_loadu_si256(v256(x[b].qs + 32 * c));
      const __m256i lo = _mm256_and_si256(q4, m4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q4, 4), m4);
      const __m256i slo = _mm256_set1_epi16(static_cast<int16_t>(sc[2 * c]));
      const __m256i shi = _mm256_set1_epi16(static_cast<int16_t>(sc[2 * c + 1]));
      K3_UNROLL for (int t = 0; t < NT; ++t) {
        const __m256i a0 = _mm256_loadu_si256(v256(y[t][b].qs + 64 * c));
        const __m256i a1 = _mm256_loadu_si256(v256(y[t][b].qs + 64 * c + 32));
        sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(dot_us(lo, a0, slo), dot_us(hi, a1, shi)));
      }
    }
    const float dall = simd::f16(x[b].d), dmin = simd::f16(x[b].dmin);
    K3_UNROLL for (int t = 0; t < NT; ++t) {
      const __m256i bs = _mm256_loadu_si256(v256(y[t][b].bsums));
      const __m256 fm = _mm256_cvtepi32_ps(_mm256_madd_epi16(bs, mins));
      const float dy = y[t][b].d;
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(dall * dy), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
      acc[t] = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * dy), fm, acc[t]);
    }
  }
  K3_UNROLL for (int t = 0; t < NT; ++t) out[t] = simd::hsum(acc[t]);
}

template <int NT>
void q6_k_nt(int64_t n, const void* w, const void* act, size_t st, float* out) {
  const blk::Q6_K* x = static_cast<const blk::Q6_K*>(w);
  const BlockQ8KA* y[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8KA*>(simd::tok(act, st, t));
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i m30 = _mm256_set1_epi8(0x30);
  __m256 acc[NT];
  K3_UNROLL for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / 256; ++b) {
    prefetch_ahead<NT>(x + b);
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[b].scales));
    const __m256i sc16 = _mm256_cvtepi8_epi16(sc);
    __m256i sumi[NT];
    K3_UNROLL for (int t = 0; t < NT; ++t) sumi[t] = _mm256_setzero_si256();
    K3_UNROLL for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = _mm256_loadu_si256(v256(x[b].ql + 64 * h));
      const __m256i ql1 = _mm256_loadu_si256(v256(x[b].ql + 64 * h + 32));
      const __m256i qh = _mm256_loadu_si256(v256(x[b].qh + 32 * h));
      __m256i q[4];
      q[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
      q[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
      q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(qh, m30));
      q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                             _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
      K3_UNROLL for (int k = 0; k < 4; ++k) {
        const __m256i s = pair_scales_i8(sc, 8 * h + 2 * k, 8 * h + 2 * k + 1);
        K3_UNROLL for (int t = 0; t < NT; ++t) {
          const __m256i a = _mm256_loadu_si256(v256(y[t][b].qs + 128 * h + 32 * k));
          sumi[t] = _mm256_add_epi32(sumi[t], dot_us(q[k], a, s));
        }
      }
    }
    const float d = simd::f16(x[b].d);
    K3_UNROLL for (int t = 0; t < NT; ++t) {
      // q6 = u − 32: remove 32·Σ_j s_j·bsums_j
      const __m256i bs = _mm256_loadu_si256(v256(y[t][b].bsums));
      const __m256i corr = _mm256_slli_epi32(_mm256_madd_epi16(bs, sc16), 5);
      acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * y[t][b].d),
                               _mm256_cvtepi32_ps(_mm256_sub_epi32(sumi[t], corr)), acc[t]);
    }
  }
  K3_UNROLL for (int t = 0; t < NT; ++t) out[t] = simd::hsum(acc[t]);
}

}  // namespace

K3_DOT_DISPATCH(q2_k)
K3_DOT_DISPATCH(q3_k)
K3_DOT_DISPATCH(q4_k)
K3_DOT_DISPATCH(q6_k)

}  // namespace k3::kernels::impl
