// kernels/norms: RMSNorm and L2Norm over one row, with ggml-cpu's numerics
// (docs/MODEL.md, docs/NUMERICS.md): the sum of squares is accumulated in double,
// then the row is multiplied by one float scale.
// Contract: rmsnorm: y = x · (1/sqrtf(mean(x²) + eps)) [⊙ w if w != nullptr]
//           l2norm:  y = x · (1/fmaxf(sqrtf(Σx²), eps))
// y may alias x. n ≥ 1.
#pragma once

#include <cstdint>

namespace k3::kernels {

void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps);
void l2norm(const float* x, float* y, int64_t n, float eps);
// Σ x² in double (exposed for callers that only need the statistic).
double sum_squares(const float* x, int64_t n);

}  // namespace k3::kernels
