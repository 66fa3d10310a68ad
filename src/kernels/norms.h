// kernels/norms: RMSNorm and L2Norm of the forward pass (docs/MODEL.md), in the model's numerics
// (docs/NUMERICS.md): Σx² in double (reduce.h), the scale in double, each output rounded once.
// Contract: rmsnorm_rows: y = x · 1/sqrt(mean(x²) + eps) [⊙ w if w != nullptr], per row of n,
//           rows at x + r·x_stride and y + r·y_stride (in floats); y may alias x.
//           l2norm: x · 1/max(‖x‖₂, eps), in place.
#pragma once

#include <cstdint>

namespace k3::kernels {

void rmsnorm_rows(const float* x, float* y, int64_t n_rows, int64_t n, const float* w, float eps,
                  int64_t x_stride, int64_t y_stride);
void l2norm(float* x, int64_t n, float eps);

}  // namespace k3::kernels
