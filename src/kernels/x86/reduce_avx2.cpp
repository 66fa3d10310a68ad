// kernels/x86/reduce_avx2: the AVX2/FMA builds of the double-accumulating reductions
// (reduce.h). Four double lanes and two independent accumulators: exact products of floats
// summed in double, at close to the speed of a float loop.
#include <immintrin.h>

#include <cmath>

#include "kernels/x86/simd.h"
#include "kernels/reduce.h"

namespace k3::kernels {

double dot_f32_f64(const float* a, const float* b, int64_t n) {
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    s0 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm_loadu_ps(a + i)), _mm256_cvtps_pd(_mm_loadu_ps(b + i)), s0);
    s1 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm_loadu_ps(a + i + 4)), _mm256_cvtps_pd(_mm_loadu_ps(b + i + 4)),
                         s1);
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(s0, s1));
  double s = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

void axpy_f32_f64(double alpha, const float* x, double* y, int64_t n) {
  const __m256d va = _mm256_set1_pd(alpha);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    _mm256_storeu_pd(y + i,
                     _mm256_fmadd_pd(va, _mm256_cvtps_pd(_mm_loadu_ps(x + i)), _mm256_loadu_pd(y + i)));
  for (; i < n; ++i) y[i] = std::fma(alpha, static_cast<double>(x[i]), y[i]);
}

double dot_f64(const double* a, const double* b, int64_t n) {
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    s0 = _mm256_fmadd_pd(_mm256_loadu_pd(a + i), _mm256_loadu_pd(b + i), s0);
    s1 = _mm256_fmadd_pd(_mm256_loadu_pd(a + i + 4), _mm256_loadu_pd(b + i + 4), s1);
  }
  double s = simd::hsum_pd(_mm256_add_pd(s0, s1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void axmy_f64(double l, const double* x, double* y, int64_t n) {
  const __m256d vl = _mm256_set1_pd(l);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    _mm256_storeu_pd(y + i, _mm256_fnmadd_pd(vl, _mm256_loadu_pd(x + i), _mm256_loadu_pd(y + i)));
  for (; i < n; ++i) y[i] = std::fma(-l, x[i], y[i]);
}

}  // namespace k3::kernels
