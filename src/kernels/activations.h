// kernels/activations: elementwise activations of the K3 graph
// (the primitives of docs/MODEL.md).
// Contract (all float32, y may alias the input, any n ≥ 0):
//   sigmoid(x) = 1/(1+e^−x); silu(x) = x·sigmoid(x) — vectorised exp, ≤ 2 ulp from libm's expf;
//   softplus(x) = x > 20 ? x : log(1+e^x) (libm, as llama.cpp);
//   situ(g, u) = [β·tanh(g·(1/β))·σ(g)] · [λ·tanh(u·(1/λ))]  (second factor = u if λ ≤ 0),
//   with libm tanhf/expf in llama.cpp's operation order.
#pragma once

#include <cstdint>

namespace k3::kernels {

void sigmoid(const float* x, float* y, int64_t n);
void silu(const float* x, float* y, int64_t n);
void softplus(const float* x, float* y, int64_t n);
void situ(const float* g, const float* u, float* y, int64_t n, float beta, float lambda);
float situ_one(float g, float u, float beta, float lambda);

}  // namespace k3::kernels
