// kernels/attn: the plain-C attention loops (see attn.h); the AVX2 builds are in
// x86/attn_avx2.cpp.
#include "kernels/attn.h"

#include <cmath>

#include "quant/codec.h"

namespace k3::kernels {

float dot_f32_scalar(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s = std::fma(a[i], b[i], s);
  return s;
}

void axpy_f32_scalar(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::fma(alpha, x[i], y[i]);
}

void axpy_rows_f32_scalar(const float* alpha, int64_t alpha_stride, const float* x, int64_t x_stride,
                          int64_t m, float* y, int64_t n) {
  for (int64_t s = 0; s < m; ++s) axpy_f32_scalar(alpha[s * alpha_stride], x + s * x_stride, y, n);
}

void add_f32_to_f64_scalar(float* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] += static_cast<double>(x[i]);
    x[i] = 0.0f;
  }
}

void f16_to_f32_row_scalar(const uint16_t* h, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = quant::fp16_to_fp32(h[i]);
}

#if !defined(K3_SIMD_X86)
void f16_to_f32_row(const uint16_t* h, float* y, int64_t n) { f16_to_f32_row_scalar(h, y, n); }
float dot_f32(const float* a, const float* b, int64_t n) { return dot_f32_scalar(a, b, n); }
void axpy_f32(float alpha, const float* x, float* y, int64_t n) { axpy_f32_scalar(alpha, x, y, n); }
void axpy_rows_f32(const float* alpha, int64_t alpha_stride, const float* x, int64_t x_stride, int64_t m,
                   float* y, int64_t n) {
  axpy_rows_f32_scalar(alpha, alpha_stride, x, x_stride, m, y, n);
}
void add_f32_to_f64(float* x, double* y, int64_t n) { add_f32_to_f64_scalar(x, y, n); }
#endif

}  // namespace k3::kernels
