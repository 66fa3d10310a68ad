// kernels/x86/situ_f64_avx2: SiTU in double with AVX2 exp/tanh polynomials (situ_f64.h); the
// libm form is situ_f64_scalar in situ_f64.cpp.
#include "kernels/situ_f64.h"

#include <immintrin.h>

#include <cmath>

namespace k3::kernels {

namespace {

// e^x, 4 lanes: x = k·ln2 + r with |r| ≤ ln2/2 (Cody–Waite split, k·ln2_hi exact), e^r by its
// Taylor polynomial through r^13 (truncation < 1e-17 relative), 2^k built in the exponent
// bits. x is clamped to [−708, 709], where 2^k stays a normal double.
inline __m256d exp4(__m256d x) {
  x = _mm256_min_pd(_mm256_max_pd(x, _mm256_set1_pd(-708.0)), _mm256_set1_pd(709.0));
  const __m256d k = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(1.4426950408889634)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256d r = _mm256_fnmadd_pd(k, _mm256_set1_pd(6.93147180369123816490e-01), x);
  r = _mm256_fnmadd_pd(k, _mm256_set1_pd(1.90821492927058770002e-10), r);
  static constexpr double kInvFact[14] = {1.0,
                                          1.0,
                                          1.0 / 2,
                                          1.0 / 6,
                                          1.0 / 24,
                                          1.0 / 120,
                                          1.0 / 720,
                                          1.0 / 5040,
                                          1.0 / 40320,
                                          1.0 / 362880,
                                          1.0 / 3628800,
                                          1.0 / 39916800,
                                          1.0 / 479001600,
                                          1.0 / 6227020800};
  __m256d p = _mm256_set1_pd(kInvFact[13]);
  for (int i = 12; i >= 0; --i) p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kInvFact[i]));
  const __m128i ki = _mm256_cvtpd_epi32(k);
  const __m256i bits =
      _mm256_slli_epi64(_mm256_add_epi64(_mm256_cvtepi32_epi64(ki), _mm256_set1_epi64x(1023)), 52);
  return _mm256_mul_pd(p, _mm256_castsi256_pd(bits));
}

// tanh, 4 lanes: (1 − e^−2|y|)/(1 + e^−2|y|) with y's sign; below |y| = 1/16 the odd Taylor
// series through y^11 instead (no cancellation; truncation < 1e-18 relative).
inline __m256d tanh4(__m256d y) {
  const __m256d sign = _mm256_set1_pd(-0.0);
  const __m256d a = _mm256_andnot_pd(sign, y);
  const __m256d t = exp4(_mm256_mul_pd(a, _mm256_set1_pd(-2.0)));
  const __m256d big =
      _mm256_div_pd(_mm256_sub_pd(_mm256_set1_pd(1.0), t), _mm256_add_pd(_mm256_set1_pd(1.0), t));
  const __m256d a2 = _mm256_mul_pd(a, a);
  __m256d s = _mm256_set1_pd(-1382.0 / 155925.0);
  s = _mm256_fmadd_pd(s, a2, _mm256_set1_pd(62.0 / 2835.0));
  s = _mm256_fmadd_pd(s, a2, _mm256_set1_pd(-17.0 / 315.0));
  s = _mm256_fmadd_pd(s, a2, _mm256_set1_pd(2.0 / 15.0));
  s = _mm256_fmadd_pd(s, a2, _mm256_set1_pd(-1.0 / 3.0));
  const __m256d small = _mm256_fmadd_pd(_mm256_mul_pd(s, a2), a, a);
  const __m256d r = _mm256_blendv_pd(big, small, _mm256_cmp_pd(a, _mm256_set1_pd(0.0625), _CMP_LT_OQ));
  return _mm256_or_pd(r, _mm256_and_pd(y, sign));
}

}  // namespace

void situ_f64(const float* g, const float* u, float* y, int64_t n, float beta, float lambda) {
  int64_t i = 0;
  if (beta > 0.0f && std::isfinite(beta)) {
    const __m256d b = _mm256_set1_pd(beta), one = _mm256_set1_pd(1.0);
    const __m256d l = _mm256_set1_pd(lambda);
    const bool cap = lambda > 0.0f;
    for (; i + 4 <= n; i += 4) {
      const __m256d gd = _mm256_cvtps_pd(_mm_loadu_ps(g + i));
      const __m256d ud = _mm256_cvtps_pd(_mm_loadu_ps(u + i));
      const __m256d gate = _mm256_div_pd(_mm256_mul_pd(b, tanh4(_mm256_div_pd(gd, b))),
                                         _mm256_add_pd(one, exp4(_mm256_sub_pd(_mm256_setzero_pd(), gd))));
      const __m256d up = cap ? _mm256_mul_pd(l, tanh4(_mm256_div_pd(ud, l))) : ud;
      _mm_storeu_ps(y + i, _mm256_cvtpd_ps(_mm256_mul_pd(gate, up)));
    }
  }
  for (; i < n; ++i) y[i] = situ_f64_scalar(g[i], u[i], beta, lambda);
}

}  // namespace k3::kernels
