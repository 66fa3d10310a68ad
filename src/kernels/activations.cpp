// Elementwise activations (see activations.h). exp is vectorised with the usual split
// e^x = 2^k·e^r, |r| ≤ ln2/2, r computed with a two-part ln2 and a degree-7 Taylor polynomial
// (truncation < 1e-8 relative), so the result is within ~2 ulp of a correctly rounded expf.
#include "kernels/activations.h"

#include <immintrin.h>

#include <cmath>

namespace k3::kernels {

namespace {

inline __m256 exp_ps(__m256 x) {
  // Above ~88.72 the result overflows to +inf as expf does (so 1/(1+e^x) → 0); below −87.3 it
  // is held at ~1e-38 instead of going subnormal (1 + that is 1 anyway).
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(89.0f));
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // k ∈ [−126, 128]: split 2^k = 2^(k/2)·2^(k−k/2) so k = 128 does not overflow the exponent
  const __m256i ki = _mm256_cvtps_epi32(k);
  const __m256i k1 = _mm256_srai_epi32(ki, 1), k2 = _mm256_sub_epi32(ki, k1);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, _mm256_set1_epi32(127)), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, _mm256_set1_epi32(127)), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

inline __m256 sigmoid_ps(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

inline float sigmoid_one(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

void sigmoid(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, sigmoid_ps(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = sigmoid_one(x[i]);
}

void silu(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(v, sigmoid_ps(v)));
  }
  for (; i < n; ++i) y[i] = x[i] * sigmoid_one(x[i]);
}

void softplus(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 20.0f ? x[i] : std::log(1.0f + std::exp(x[i]));
}

float situ_one(float g, float u, float beta, float lambda) {
  const float gate = beta * std::tanh(g * (1.0f / beta)) * sigmoid_one(g);
  const float lin = lambda > 0.0f ? lambda * std::tanh(u * (1.0f / lambda)) : u;
  return gate * lin;
}

void situ(const float* g, const float* u, float* y, int64_t n, float beta, float lambda) {
  for (int64_t i = 0; i < n; ++i) y[i] = situ_one(g[i], u[i], beta, lambda);
}

}  // namespace k3::kernels
