// kernels/reduce: the reductions of the forward pass that accumulate in double (docs/NUMERICS.md:
// F32 models stay within 1e-9 NMSE of a float64 evaluation only if every reduction does).
// Contract (any n >= 0, no alignment needed):
//   dot_f32_f64(a, b, n)      = Σ a[i]·b[i] over floats: each product exact in double, summed
//                               in double;
//   axpy_f32_f64(α, x, y, n)  : y[i] += α·x[i] with y in double (one rounding: fused);
//   dot_f64(a, b, n)          = Σ a[i]·b[i] over doubles;
//   axmy_f64(l, x, y, n)      : y[i] −= l·x[i] over doubles (one rounding: fused).
// The x86 builds (x86/reduce_avx2.cpp) sum in 4-lane partial sums, so a dot is within double
// rounding of the *_scalar twin's index-order sum, not equal to it; the element-wise ones are
// equal bit for bit (both fuse).
#pragma once

#include <cstdint>

namespace k3::kernels {

double dot_f32_f64(const float* a, const float* b, int64_t n);
void axpy_f32_f64(double alpha, const float* x, double* y, int64_t n);
double dot_f64(const double* a, const double* b, int64_t n);
void axmy_f64(double l, const double* x, double* y, int64_t n);

double dot_f32_f64_scalar(const float* a, const float* b, int64_t n);
void axpy_f32_f64_scalar(double alpha, const float* x, double* y, int64_t n);
double dot_f64_scalar(const double* a, const double* b, int64_t n);
void axmy_f64_scalar(double l, const double* x, double* y, int64_t n);

}  // namespace k3::kernels
