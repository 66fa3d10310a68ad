// kernels/kda: the plain-C twins (see kda.h); the AVX2 builds are in x86/kda_avx2.cpp.
#include "kernels/kda.h"

#include <cmath>

namespace k3::kernels {

double kda_decay_dot_scalar(float* row, const double* decay, const double* k, int64_t n) {
  double u = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    row[i] = static_cast<float>(static_cast<double>(row[i]) * decay[i]);
    u = std::fma(static_cast<double>(row[i]), k[i], u);
  }
  return u;
}

double kda_update_dot_scalar(float* row, const double* k, double delta, const double* q, int64_t n) {
  double acc = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    row[i] = static_cast<float>(static_cast<double>(row[i]) + k[i] * delta);
    acc = std::fma(static_cast<double>(row[i]), q[i], acc);
  }
  return acc;
}

void kda_token_step_scalar(float* S, int64_t n, const double* decay, const double* k, const double* q,
                           const float* v, double beta, float* o) {
  for (int64_t j = 0; j < n; ++j) {
    float* row = S + j * n;
    const double u = kda_decay_dot_scalar(row, decay, k, n);
    const double delta = (v[j] - u) * beta;
    o[j] = static_cast<float>(kda_update_dot_scalar(row, k, delta, q, n));
  }
}

void dot2_f64_scalar(const double* a, const double* b, const double* s, int64_t n, double* as, double* bs) {
  double x = 0.0, y = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x = std::fma(a[i], s[i], x);
    y = std::fma(b[i], s[i], y);
  }
  *as = x;
  *bs = y;
}

void decay_rank_update_f64_scalar(double* s, const double* decay, const double* w, int64_t w_stride,
                                  const double* c, int64_t m, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    double v = s[i] * decay[i];
    for (int64_t t = 0; t < m; ++t) v = std::fma(w[t * w_stride + i], c[t], v);
    s[i] = v;
  }
}

#if !defined(K3_SIMD_X86)
double kda_decay_dot(float* row, const double* decay, const double* k, int64_t n) {
  return kda_decay_dot_scalar(row, decay, k, n);
}
double kda_update_dot(float* row, const double* k, double delta, const double* q, int64_t n) {
  return kda_update_dot_scalar(row, k, delta, q, n);
}
void kda_token_step(float* S, int64_t n, const double* decay, const double* k, const double* q,
                    const float* v, double beta, float* o) {
  kda_token_step_scalar(S, n, decay, k, q, v, beta, o);
}
void dot2_f64(const double* a, const double* b, const double* s, int64_t n, double* as, double* bs) {
  dot2_f64_scalar(a, b, s, n, as, bs);
}
void decay_rank_update_f64(double* s, const double* decay, const double* w, int64_t w_stride, const double* c,
                           int64_t m, int64_t n) {
  decay_rank_update_f64_scalar(s, decay, w, w_stride, c, m, n);
}
#endif

}  // namespace k3::kernels
