#include "kernels/matmul.h"

#include "core/thread_pool.h"

namespace k3::kernels {

// Placeholder dispatch until the SIMD kernels land: split rows across the pool and run the
// reference on each slice.
void matmul(const WeightView& w, const float* x, int64_t n_tok, float* y, ThreadPool* pool,
            int64_t x_stride, int64_t y_stride) {
  if (x_stride < 0) x_stride = w.cols;
  if (y_stride < 0) y_stride = w.rows;
  auto run = [&](int64_t r0, int64_t r1, int) {
    WeightView part = w;
    part.data = w.row(r0);
    part.rows = r1 - r0;
    matmul_reference(part, x, n_tok, y + r0, x_stride, y_stride);
  };
  if (pool) pool->parallel_for(w.rows, run, 16);
  else run(0, w.rows, 0);
}

}  // namespace k3::kernels
