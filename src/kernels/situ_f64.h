// kernels/situ_f64: SiTU evaluated in double precision, four lanes at a time — the model's
// form (model/ops.h situ: [β·tanh(g/β)/(1+e^−g)]·[λ·tanh(u/λ)], λ ≤ 0 leaves u), which keeps
// F32 models within their 1e-9 NMSE budget. libm's tanh and exp per element cost more than the
// expert dot products they follow at decode; these are AVX2 polynomials instead.
// Contract: y[i] = (float) situ(g[i], u[i]) for i < n, each within a few double ulps of the
// libm evaluation before the final rounding to float (so almost always the identical float,
// else one float ulp away). y may alias g or u. β must be > 0 (else the scalar libm form runs).
#pragma once

#include <cstdint>

namespace k3::kernels {

void situ_f64(const float* g, const float* u, float* y, int64_t n, float beta, float lambda);

// The scalar libm form, for tests and tails.
float situ_f64_scalar(float g, float u, float beta, float lambda);

}  // namespace k3::kernels
