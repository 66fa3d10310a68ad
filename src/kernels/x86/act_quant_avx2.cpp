// kernels/x86/act_quant_avx2: the AVX2 activation quantizers (act_quant.h), bit-identical to
// the plain-C twins in act_quant.cpp (same float products, same rounding rule per element;
// tested byte for byte). They run once per activation row — O(cols) against the O(rows·cols)
// of the dots they feed — but a scalar roundf/lrintf per element still showed up at a few %
// of prefill.
#include "kernels/act_quant.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/x86/simd.h"

namespace k3::kernels {

namespace {

inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// round(p) half away from zero, as roundf: trunc, then one step outwards when the dropped
// fraction (exact: p − trunc(p) has no rounding for |p| < 2^23) is at least one half.
inline __m256i round_away(__m256 p) {
  const __m256 t = _mm256_round_ps(p, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = abs_ps(_mm256_sub_ps(p, t));
  const __m256 step = _mm256_or_ps(_mm256_and_ps(p, _mm256_set1_ps(-0.0f)), _mm256_set1_ps(1.0f));
  const __m256 up = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), step);
  return _mm256_cvttps_epi32(_mm256_add_ps(t, up));
}

// Four vectors of 8 int32 (elements 0..31 in order) → 32 int8 in order.
inline __m256i pack32(__m256i i0, __m256i i1, __m256i i2, __m256i i3) {
  const __m256i c = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
  return _mm256_permutevar8x32_epi32(c, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

}  // namespace

void quantize_act_q8_0(const float* x, BlockQ8_0A* y, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, x += 32) {
    const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8), v2 = _mm256_loadu_ps(x + 16),
                 v3 = _mm256_loadu_ps(x + 24);
    const float amax =
        hmax(_mm256_max_ps(_mm256_max_ps(abs_ps(v0), abs_ps(v1)), _mm256_max_ps(abs_ps(v2), abs_ps(v3))));
    const float d = amax / 127.0f;
    const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    y[b].d = d;
    const __m256i q = pack32(round_away(_mm256_mul_ps(v0, id)), round_away(_mm256_mul_ps(v1, id)),
                             round_away(_mm256_mul_ps(v2, id)), round_away(_mm256_mul_ps(v3, id)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs), q);
  }
}

void quantize_act_q8_k(const float* x, BlockQ8KA* y, int64_t n) {
  for (int64_t b = 0; b < n / 256; ++b, x += 256) {
    BlockQ8KA& o = y[b];
    __m256 m = _mm256_setzero_ps();
    for (int j = 0; j < 256; j += 8) m = _mm256_max_ps(m, abs_ps(_mm256_loadu_ps(x + j)));
    const float amax = hmax(m);
    if (amax == 0.0f) {
      o.d = 0.0f;
      std::memset(o.qs, 0, sizeof(o.qs));
      std::memset(o.bsums, 0, sizeof(o.bsums));
      continue;
    }
    int jmax = 0;  // the first element of largest magnitude, as the scalar rule picks it
    while (std::fabs(x[jmax]) != amax) ++jmax;
    const float iscale = -127.0f / x[jmax];
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256i cap = _mm256_set1_epi32(127);
    for (int j = 0; j < 256; j += 32) {
      __m256i i[4];
      for (int k = 0; k < 4; ++k)  // ties to even (MXCSR default), as lrintf
        i[k] = _mm256_min_epi32(cap, _mm256_cvtps_epi32(_mm256_mul_ps(vs, _mm256_loadu_ps(x + j + 8 * k))));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o.qs + j), pack32(i[0], i[1], i[2], i[3]));
      o.bsums[j / 16] = static_cast<int16_t>(simd::hsum_i32(_mm256_add_epi32(i[0], i[1])));
      o.bsums[j / 16 + 1] = static_cast<int16_t>(simd::hsum_i32(_mm256_add_epi32(i[2], i[3])));
    }
    o.d = 1.0f / iscale;
  }
}

}  // namespace k3::kernels
