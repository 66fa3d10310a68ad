// RMSNorm / L2Norm (see norms.h). The double accumulation follows ggml-cpu so float results
// track llama.cpp; 4-wide double FMA keeps it cheap.
#include "kernels/norms.h"

#include <immintrin.h>

#include <cmath>

namespace k3::kernels {

double sum_squares(const float* x, int64_t n) {
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256d lo = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
    const __m256d hi = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4));
    a0 = _mm256_fmadd_pd(lo, lo, a0);
    a1 = _mm256_fmadd_pd(hi, hi, a1);
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(a0, a1));
  double s = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

namespace {

void scale_row(const float* x, const float* w, float* y, int64_t n, float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  int64_t i = 0;
  if (w) {
    // (x·scale)·w: the same two roundings as ggml's rms_norm followed by the weight multiply
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(y + i,
                       _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), s), _mm256_loadu_ps(w + i)));
    for (; i < n; ++i) y[i] = (x[i] * scale) * w[i];
  } else {
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), s));
    for (; i < n; ++i) y[i] = x[i] * scale;
  }
}

}  // namespace

void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  const float mean = static_cast<float>(sum_squares(x, n) / static_cast<double>(n));
  scale_row(x, w, y, n, 1.0f / std::sqrt(mean + eps));
}

void l2norm(const float* x, float* y, int64_t n, float eps) {
  const float norm = std::sqrt(static_cast<float>(sum_squares(x, n)));
  scale_row(x, nullptr, y, n, 1.0f / std::fmax(norm, eps));
}

}  // namespace k3::kernels
