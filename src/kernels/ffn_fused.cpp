// Fused gate+up → SiTU (see ffn_fused.h).
#include "kernels/ffn_fused.h"

#include <algorithm>
#include <vector>

#include "kernels/activations.h"
#include "kernels/matmul_detail.h"
#include "kernels/vec_dot.h"

namespace k3::kernels {

void matmul_gate_up_situ(const WeightView& gate, const WeightView& up, const float* x,
                         int64_t n_tok, float* y, ThreadPool* pool, float beta, float lambda,
                         int64_t x_stride, int64_t y_stride) {
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
  const int64_t cols = gate.cols;
  size_t act_stride = 0;
  const uint8_t* act = static_cast<const uint8_t*>(
      prepare_activations(*k, x, n_tok, cols, x_stride, pool, act_stride));
  const size_t pair_bytes = std::max<size_t>(1, gate.row_stride + up.row_stride);
  const int64_t grain = n_tok == 1 ? std::max<int64_t>(1, static_cast<int64_t>(kMinDecodeBytes / pair_bytes)) : 1;
  const int64_t tile = std::max<int64_t>(1, static_cast<int64_t>(kTileBytes / pair_bytes));
  run_parallel(pool, gate.rows, grain, [&](int64_t r0, int64_t r1, int) {
    float g[kMaxDotTokens], u[kMaxDotTokens];
    for (int64_t rt = r0; rt < r1; rt += tile) {
      const int64_t re = std::min(r1, rt + tile);
      for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxDotTokens) {
        const int nt = static_cast<int>(std::min<int64_t>(kMaxDotTokens, n_tok - t0));
        const uint8_t* a = act + static_cast<size_t>(t0) * act_stride;
        for (int64_t r = rt; r < re; ++r) {
          k->dot(cols, gate.row(r), a, act_stride, nt, g);
          k->dot(cols, up.row(r), a, act_stride, nt, u);
          for (int i = 0; i < nt; ++i) y[(t0 + i) * y_stride + r] = situ_one(g[i], u[i], beta, lambda);
        }
      }
    }
  });
}

}  // namespace k3::kernels
