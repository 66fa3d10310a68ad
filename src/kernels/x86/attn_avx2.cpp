// kernels/x86/attn_avx2: the AVX2/FMA builds of the attention loops (attn.h); the plain-C twins
// are in attn.cpp.
#include "kernels/attn.h"

#include <immintrin.h>

#include <cmath>

#include "kernels/x86/simd.h"

namespace k3::kernels {

float dot_f32(const float* a, const float* b, int64_t n) {
  // Four independent chains: one FMA chain is latency-bound (4-5 cycles per 8 products).
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(),
         s3 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  float s = simd::hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
  for (; i < n; ++i) s = std::fma(a[i], b[i], s);
  return s;
}

void axpy_f32(float alpha, const float* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(alpha);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] = std::fma(alpha, x[i], y[i]);
}

void add_f32_to_f64(float* x, double* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    _mm256_storeu_pd(y + i, _mm256_add_pd(_mm256_loadu_pd(y + i), _mm256_cvtps_pd(_mm_loadu_ps(x + i))));
    _mm_storeu_ps(x + i, _mm_setzero_ps());
  }
  for (; i < n; ++i) {
    y[i] += static_cast<double>(x[i]);
    x[i] = 0.0f;
  }
}

}  // namespace k3::kernels
