// kernels/x86/kda_avx2: the AVX2/FMA builds of the KDA recurrence loops (kda.h). Float state
// rows are widened four at a time, multiplied and added in double exactly as the twins do
// (a separate multiply and add where the definition rounds twice), and narrowed back; the dots
// keep four lanes and are summed at the end.
#include <immintrin.h>

#include <cmath>

#include "kernels/x86/simd.h"
#include "kernels/kda.h"

namespace k3::kernels {

namespace {

// The row passes, inlined into the token step below (a call per row showed in decode's KDA).
inline double decay_dot(float* row, const double* decay, const double* k, int64_t n) {
  __m256d u4 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128 r =
        _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(row + i)), _mm256_loadu_pd(decay + i)));
    _mm_storeu_ps(row + i, r);
    u4 = _mm256_fmadd_pd(_mm256_cvtps_pd(r), _mm256_loadu_pd(k + i), u4);
  }
  double u = simd::hsum_pd(u4);
  for (; i < n; ++i) {
    row[i] = static_cast<float>(static_cast<double>(row[i]) * decay[i]);
    u = std::fma(static_cast<double>(row[i]), k[i], u);
  }
  return u;
}

inline double update_dot(float* row, const double* k, double delta, const double* q, int64_t n) {
  const __m256d dv = _mm256_set1_pd(delta);
  __m256d a4 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d upd = _mm256_mul_pd(_mm256_loadu_pd(k + i), dv);
    const __m128 r = _mm256_cvtpd_ps(_mm256_add_pd(_mm256_cvtps_pd(_mm_loadu_ps(row + i)), upd));
    _mm_storeu_ps(row + i, r);
    a4 = _mm256_fmadd_pd(_mm256_cvtps_pd(r), _mm256_loadu_pd(q + i), a4);
  }
  double acc = simd::hsum_pd(a4);
  for (; i < n; ++i) {
    const __m128d upd = _mm_mul_sd(_mm_set_sd(k[i]), _mm_set_sd(delta));  // no contraction with the add
    row[i] = static_cast<float>(_mm_cvtsd_f64(_mm_add_sd(_mm_set_sd(static_cast<double>(row[i])), upd)));
    acc = std::fma(static_cast<double>(row[i]), q[i], acc);
  }
  return acc;
}

}  // namespace

double kda_decay_dot(float* row, const double* decay, const double* k, int64_t n) {
  return decay_dot(row, decay, k, n);
}

double kda_update_dot(float* row, const double* k, double delta, const double* q, int64_t n) {
  return update_dot(row, k, delta, q, n);
}

void kda_token_step(float* S, int64_t n, const double* decay, const double* k, const double* q,
                    const float* v, double beta, float* o) {
  for (int64_t j = 0; j < n; ++j) {
    float* row = S + j * n;
    const double u = decay_dot(row, decay, k, n);
    const double delta = (v[j] - u) * beta;
    o[j] = static_cast<float>(update_dot(row, k, delta, q, n));
  }
}

void dot2_f64(const double* a, const double* b, const double* s, int64_t n, double* as, double* bs) {
  __m256d a4 = _mm256_setzero_pd(), b4 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d sv = _mm256_loadu_pd(s + i);
    a4 = _mm256_fmadd_pd(_mm256_loadu_pd(a + i), sv, a4);
    b4 = _mm256_fmadd_pd(_mm256_loadu_pd(b + i), sv, b4);
  }
  double x = simd::hsum_pd(a4), y = simd::hsum_pd(b4);
  for (; i < n; ++i) {
    x = std::fma(a[i], s[i], x);
    y = std::fma(b[i], s[i], y);
  }
  *as = x;
  *bs = y;
}

void decay_rank_update_f64(double* s, const double* decay, const double* w, int64_t w_stride, const double* c,
                           int64_t m, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256d sv = _mm256_mul_pd(_mm256_loadu_pd(s + i), _mm256_loadu_pd(decay + i));
    for (int64_t t = 0; t < m; ++t)
      sv = _mm256_fmadd_pd(_mm256_loadu_pd(w + t * w_stride + i), _mm256_set1_pd(c[t]), sv);
    _mm256_storeu_pd(s + i, sv);
  }
  for (; i < n; ++i) {
    double v = s[i] * decay[i];
    for (int64_t t = 0; t < m; ++t) v = std::fma(w[t * w_stride + i], c[t], v);
    s[i] = v;
  }
}

}  // namespace k3::kernels
