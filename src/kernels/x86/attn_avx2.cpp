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

void axpy_rows_f32(const float* alpha, int64_t alpha_stride, const float* x, int64_t x_stride, int64_t m,
                   float* y, int64_t n) {
  // 32 outputs at a time in four registers, the rows streaming past them: per element the
  // same fused multiply-adds in the same row order as m calls of axpy_f32.
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256 y0 = _mm256_loadu_ps(y + i), y1 = _mm256_loadu_ps(y + i + 8), y2 = _mm256_loadu_ps(y + i + 16),
           y3 = _mm256_loadu_ps(y + i + 24);
    for (int64_t s = 0; s < m; ++s) {
      const __m256 a = _mm256_broadcast_ss(alpha + s * alpha_stride);
      const float* r = x + s * x_stride + i;
      y0 = _mm256_fmadd_ps(a, _mm256_loadu_ps(r), y0);
      y1 = _mm256_fmadd_ps(a, _mm256_loadu_ps(r + 8), y1);
      y2 = _mm256_fmadd_ps(a, _mm256_loadu_ps(r + 16), y2);
      y3 = _mm256_fmadd_ps(a, _mm256_loadu_ps(r + 24), y3);
    }
    _mm256_storeu_ps(y + i, y0);
    _mm256_storeu_ps(y + i + 8, y1);
    _mm256_storeu_ps(y + i + 16, y2);
    _mm256_storeu_ps(y + i + 24, y3);
  }
  // The rest as axpy_f32 does it: eight lanes, then one element at a time.
  for (int64_t s = 0; s < m; ++s) axpy_f32(alpha[s * alpha_stride], x + s * x_stride + i, y + i, n - i);
}

void f16_to_f32_row(const uint16_t* h, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
  f16_to_f32_row_scalar(h + i, y + i, n - i);
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
