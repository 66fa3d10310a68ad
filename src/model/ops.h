// model/ops: the per-token primitive functions of the K3 graph (docs/MODEL.md), shared by the
// layer forwards. Reductions accumulate in double (ggml-cpu does for norms; we do it for
// every reduction so that F32 models stay within 1e-9 NMSE of a float64 evaluation).
#pragma once

#include <cmath>
#include <cstdint>

#include <span>

#include "kernels/matmul.h"
#include "kernels/matmul_batch.h"

namespace k3 {
class ThreadPool;
}

namespace k3::model {
struct ForwardObserver;
}

namespace k3::model::ops {

inline float sigmoid(double x) { return static_cast<float>(1.0 / (1.0 + std::exp(-x))); }
inline float silu(double x) { return static_cast<float>(x / (1.0 + std::exp(-x))); }
inline double softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }

// SiTU: [β·tanh(g/β)·σ(g)] · [λ·tanh(u/λ)]; λ ≤ 0 leaves u uncapped.
inline float situ(double g, double u, double beta, double lambda) {
  const double gate = beta * std::tanh(g / beta) / (1.0 + std::exp(-g));
  const double up = lambda > 0.0 ? lambda * std::tanh(u / lambda) : u;
  return static_cast<float>(gate * up);
}

// y = rmsnorm(x) ⊙ w (w may be null) for n_rows rows of n, strides in floats.
void rmsnorm_rows(const float* x, float* y, int64_t n_rows, int64_t n, const float* w, float eps,
                  int64_t x_stride, int64_t y_stride);
// In place, one row.
inline void rmsnorm(float* x, int64_t n, const float* w, float eps) {
  rmsnorm_rows(x, x, 1, n, w, eps, n, n);
}
// x / max(‖x‖₂, eps), in place.
void l2norm(float* x, int64_t n, float eps);
double dot(const float* a, const float* b, int64_t n);
// y += alpha·x (y in double).
void axpy(double alpha, const float* x, double* y, int64_t n);

// Every matmul of the model goes through this: kernels::matmul (the fast path, which may
// round activations to 8 bits as ggml does) or, for numerics checks, the exact reference
// (dequantize, dot in double), split over the pool by rows.
struct Matmul {
  ThreadPool* pool = nullptr;
  bool reference = false;
  ForwardObserver* observer = nullptr;  // sees every input first (model/observer.h)
  void operator()(const kernels::WeightView& w, const float* x, int64_t n_tok, float* y,
                  int64_t x_stride = -1, int64_t y_stride = -1) const;
  // Several products in one pool dispatch (kernels/matmul_batch.h), same results as one
  // call each; with the reference or an observer attached they run one by one instead.
  void batch(std::span<const kernels::MatmulJob> jobs) const;
};

// SiTU as a kernels::GateUpFn (situ_rows); ctx points to {β, λ} (two floats).
void situ_gate_up(const float* g, const float* u, float* y, int64_t n, const void* ctx);

// out[t] = situ(g[t], u[t]) over n values (kernels/situ_f64.h: the same double-precision
// form with vectorised exp/tanh; out may alias g or u).
void situ_rows(const float* g, const float* u, float* out, int64_t n, float beta, float lambda);

}  // namespace k3::model::ops
