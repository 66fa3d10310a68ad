// kernels/attn: the inner loops of MLA attention over the latent cache, in float32 with
// several accumulators (AVX2/FMA: x86/attn_avx2.cpp), and their plain-C twins (the *_scalar
// functions: the reference the tests compare against, and the whole kernel in a portable build).
// Contract (any n >= 0; pointers need no alignment):
//   dot_f32(a, b, n)            = Σ a[i]·b[i], accumulated in float in 4 × 8 lanes, the lanes
//                                 summed at the end (not the scalar order: within float
//                                 rounding of it, see the test's bound);
//   axpy_f32(alpha, x, y, n)    : y[i] += alpha·x[i] (one fused multiply-add per element,
//                                 exactly as the scalar twin with std::fma);
//   axpy_rows_f32(alpha, as, x, xs, m, y, n)
//                               : axpy_f32(alpha[s·as], x + s·xs, y, n) for s = 0…m−1 in turn,
//                                 bit for bit, with y held in registers across the rows (the
//                                 weighted sum of m cache rows without m loads and stores of y);
//   f16_to_f32_row(h, y, n)     : y[i] = the binary16 value h[i] as float (exact; NaNs stay
//                                 NaN, signalling ones quieted): an F16 cache row for the loops;
//   add_f32_to_f64(x, y, n)     : y[i] += x[i]; then x[i] = 0 (folds a float block sum into
//                                 a double total: the caller bounds how many float additions
//                                 any value sees).
#pragma once

#include <cstdint>

namespace k3::kernels {

float dot_f32(const float* a, const float* b, int64_t n);
void axpy_f32(float alpha, const float* x, float* y, int64_t n);
void axpy_rows_f32(const float* alpha, int64_t alpha_stride, const float* x, int64_t x_stride, int64_t m,
                   float* y, int64_t n);
void add_f32_to_f64(float* x, double* y, int64_t n);
void f16_to_f32_row(const uint16_t* h, float* y, int64_t n);

float dot_f32_scalar(const float* a, const float* b, int64_t n);
void axpy_f32_scalar(float alpha, const float* x, float* y, int64_t n);
void axpy_rows_f32_scalar(const float* alpha, int64_t alpha_stride, const float* x, int64_t x_stride,
                          int64_t m, float* y, int64_t n);
void add_f32_to_f64_scalar(float* x, double* y, int64_t n);
void f16_to_f32_row_scalar(const uint16_t* h, float* y, int64_t n);

}  // namespace k3::kernels
