// model/ops: the per-token primitive functions of the K3 graph (docs/MODEL.md), shared by the
// layer forwards, and the one matmul entry point. Reductions accumulate in double (ggml-cpu
// does for norms; we do it for every reduction so that F32 models stay within 1e-9 NMSE of a
// float64 evaluation).
#pragma once

#include <cmath>
#include <cstdint>

#include <span>

#include "kernels/activations.h"
#include "kernels/matmul.h"
#include "kernels/matmul_batch.h"
#include "kernels/norms.h"
#include "kernels/reduce.h"

namespace k3 {
class ThreadPool;
}

namespace k3::model {
class Collective;
class GpuProducts;
struct ForwardObserver;
}  // namespace k3::model

namespace k3::model::ops {

// The element-wise functions and reductions live in kernels/ (activations.h, norms.h,
// reduce.h), each with its plain-C twin; the layer code reaches them under these names.
using kernels::l2norm;
using kernels::rmsnorm_rows;
using kernels::sigmoid;
using kernels::silu;
using kernels::situ;
using kernels::softplus;
// In place, one row.
inline void rmsnorm(float* x, int64_t n, const float* w, float eps) {
  rmsnorm_rows(x, x, 1, n, w, eps, n, n);
}
// Σ a·b of floats, in double.
inline double dot(const float* a, const float* b, int64_t n) { return kernels::dot_f32_f64(a, b, n); }
// y += alpha·x (y in double).
inline void axpy(double alpha, const float* x, double* y, int64_t n) {
  kernels::axpy_f32_f64(alpha, x, y, n);
}

// Every matmul of the model goes through this: kernels::matmul (the fast path, which may
// round activations to 8 bits as ggml does) or, for numerics checks, the exact reference
// (dequantize, dot in double), split over the pool by rows.
// With a collective of N > 1 ranks, every product is split by output rows across the ranks and
// all-gathered (model/collective.h): the same values, bit for bit, on every rank.
struct Matmul {
  ThreadPool* pool = nullptr;
  bool reference = false;
  ForwardObserver* observer = nullptr;  // sees every input first (model/observer.h)
  Collective* collective = nullptr;     // null: one process
  const GpuProducts* gpu = nullptr;     // products of the weights placed there (model/gpu_products.h)
  void operator()(const kernels::WeightView& w, const float* x, int64_t n_tok, float* y,
                  int64_t x_stride = -1, int64_t y_stride = -1) const;
  // Several products in one pool dispatch (kernels/matmul_batch.h), same results as one
  // call each; with the reference or an observer attached they run one by one instead.
  void batch(std::span<const kernels::MatmulJob> jobs) const;
  // This process's products only, whatever the collective (the routed experts, which are
  // split by expert instead).
  Matmul local() const {
    Matmul m = *this;
    m.collective = nullptr;
    return m;
  }

 private:
  void split_by_rows(std::span<const kernels::MatmulJob> jobs) const;
  void batch_split_by_device(std::span<const kernels::MatmulJob> jobs) const;
};

// SiTU as a kernels::GateUpFn (situ_rows); ctx points to {β, λ} (two floats).
void situ_gate_up(const float* g, const float* u, float* y, int64_t n, const void* ctx);

// out[t] = situ(g[t], u[t]) over n values (kernels/situ_f64.h: the same double-precision
// form with vectorised exp/tanh; out may alias g or u).
void situ_rows(const float* g, const float* u, float* out, int64_t n, float beta, float lambda);

}  // namespace k3::model::ops
