// kernels/attn: the plain-C attention loops (see attn.h); the AVX2 builds are in
// x86/attn_avx2.cpp.
#include "kernels/attn.h"

#include <cmath>

namespace k3::kernels {

float dot_f32_scalar(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s = std::fma(a[i], b[i], s);
  return s;
}

void axpy_f32_scalar(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::fma(alpha, x[i], y[i]);
}

void add_f32_to_f64_scalar(float* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] += static_cast<double>(x[i]);
    x[i] = 0.0f;
  }
}

#if !defined(K3_SIMD_X86)
float dot_f32(const float* a, const float* b, int64_t n) { return dot_f32_scalar(a, b, n); }
void axpy_f32(float alpha, const float* x, float* y, int64_t n) { axpy_f32_scalar(alpha, x, y, n); }
void add_f32_to_f64(float* x, double* y, int64_t n) { add_f32_to_f64_scalar(x, y, n); }
#endif

}  // namespace k3::kernels
