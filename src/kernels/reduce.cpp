// kernels/reduce: the plain-C twins (see reduce.h); the AVX2 builds are in x86/reduce_avx2.cpp.
#include "kernels/reduce.h"

#include <cmath>

namespace k3::kernels {

double dot_f32_f64_scalar(const float* a, const float* b, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s = std::fma(static_cast<double>(a[i]), static_cast<double>(b[i]), s);
  return s;
}

void axpy_f32_f64_scalar(double alpha, const float* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::fma(alpha, static_cast<double>(x[i]), y[i]);
}

double dot_f64_scalar(const double* a, const double* b, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s = std::fma(a[i], b[i], s);
  return s;
}

void axmy_f64_scalar(double l, const double* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::fma(-l, x[i], y[i]);
}

#if !defined(K3_SIMD_X86)
double dot_f32_f64(const float* a, const float* b, int64_t n) { return dot_f32_f64_scalar(a, b, n); }
void axpy_f32_f64(double alpha, const float* x, double* y, int64_t n) { axpy_f32_f64_scalar(alpha, x, y, n); }
double dot_f64(const double* a, const double* b, int64_t n) { return dot_f64_scalar(a, b, n); }
void axmy_f64(double l, const double* x, double* y, int64_t n) { axmy_f64_scalar(l, x, y, n); }
#endif

}  // namespace k3::kernels
