// Fused gate+up → SiTU (see ffn_fused.h).
#include "kernels/ffn_fused.h"

#include <algorithm>
#include <vector>

#include "kernels/activations.h"
#include "kernels/matmul_detail.h"
#include "kernels/vec_dot.h"

namespace k3::kernels {

void matmul_gate_up_situ(const WeightView& gate, const WeightView& up, const float* x, int64_t n_tok,
                         float* y, ThreadPool* pool, float beta, float lambda, int64_t x_stride,
                         int64_t y_stride) {
  if (x_stride < 0) x_stride = gate.cols;
  if (y_stride < 0) y_stride = gate.rows;
  if (gate.rows <= 0 || n_tok <= 0) return;
  const DotKernel* k = dot_kernel(gate.type);
  if (!k || up.type != gate.type) {
    std::vector<float> g(static_cast<size_t>(gate.rows * n_tok)), u(g.size());
    matmul(gate, x, n_tok, g.data(), pool, x_stride, gate.rows);
    matmul(up, x, n_tok, u.data(), pool, x_stride, gate.rows);
    for (int64_t t = 0; t < n_tok; ++t)
      situ(g.data() + t * gate.rows, u.data() + t * gate.rows, y + t * y_stride, gate.rows, beta, lambda);
    return;
  }
  struct Consts {
    float beta, lambda;
  } c{beta, lambda};
  RowTask t;
  t.k = k;
  t.w = &gate;
  t.up = &up;
  t.act_fn = [](const float* g, const float* u, float* yy, int64_t n, const void* ctx) {
    const Consts& cc = *static_cast<const Consts*>(ctx);
    situ(g, u, yy, n, cc.beta, cc.lambda);
  };
  t.act_ctx = &c;
  t.act =
      static_cast<const uint8_t*>(prepare_activations(*k, x, n_tok, gate.cols, x_stride, pool, t.act_stride));
  t.n_tok = n_tok;
  t.y = y;
  t.y_stride = y_stride;
  const size_t pair_bytes = std::max<size_t>(1, gate.row_stride + up.row_stride);
  const int64_t grain =
      n_tok == 1 ? std::max<int64_t>(1, static_cast<int64_t>(kMinDecodeBytes / pair_bytes)) : 1;
  parallel_for(
      pool, gate.rows, [&](int64_t r0, int64_t r1, int) { run_rows(t, r0, r1); }, grain, kChunksPerThread);
}

}  // namespace k3::kernels
