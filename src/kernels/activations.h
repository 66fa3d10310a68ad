// kernels/activations: the element-wise activations of the K3 graph (docs/MODEL.md), evaluated
// in double and rounded to float once (docs/NUMERICS.md). Rows of SiTU, the one activation on
// a hot path, have a vectorised form: situ_f64.h.
// Contract: sigmoid(x) = 1/(1+e^−x); silu(x) = x·sigmoid(x); softplus(x) = x > 20 ? x :
// log1p(e^x); situ(g, u) = [β·tanh(g/β)·σ(g)]·[λ·tanh(u/λ)], the second factor u when λ ≤ 0.
#pragma once

#include <cmath>

namespace k3::kernels {

inline float sigmoid(double x) { return static_cast<float>(1.0 / (1.0 + std::exp(-x))); }
inline float silu(double x) { return static_cast<float>(x / (1.0 + std::exp(-x))); }
inline double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }

inline float situ(double g, double u, double beta, double lambda) {
  const double gate = beta * std::tanh(g / beta) / (1.0 + std::exp(-g));
  const double up = lambda > 0.0 ? lambda * std::tanh(u / lambda) : u;
  return static_cast<float>(gate * up);
}

}  // namespace k3::kernels
