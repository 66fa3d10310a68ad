// kernels/matmul: the dispatch of y = W·x onto the per-type dot kernels (vec_dot.h).
// Activations are converted to the type's activation format once per call; rows are split
// into one contiguous range per thread (so each thread streams its own part of W once).
// Decode (one token): every row is one streamed dot. Prefill: rows are taken in tiles small
// enough to stay in L2, and each tile meets the tokens kMaxDotTokens at a time, so every
// weight block is decoded once per token group instead of once per token, and W leaves
// memory once per call.
#include "kernels/matmul.h"

#include <algorithm>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/matmul_detail.h"
#include "kernels/vec_dot.h"

namespace k3::kernels {

void run_parallel(ThreadPool* pool, int64_t n, int64_t grain, const ThreadPool::RangeFn& fn) {
  if (pool) pool->parallel_for(n, fn, grain);
  else fn(0, n, 0);
}

namespace {

void matmul_fallback(const WeightView& w, const float* x, int64_t n_tok, float* y, ThreadPool* pool,
                     int64_t x_stride, int64_t y_stride) {
  run_parallel(pool, w.rows, 4, [&](int64_t r0, int64_t r1, int) {
    WeightView part = w;
    part.data = w.row(r0);
    part.rows = r1 - r0;
    matmul_reference(part, x, n_tok, y + r0, x_stride, y_stride);
  });
}

}  // namespace

const void* prepare_activations(const DotKernel& k, const float* x, int64_t n_tok, int64_t cols,
                                int64_t x_stride, ThreadPool* pool, size_t& act_stride) {
  if (k.act == ActFormat::F32) {
    act_stride = static_cast<size_t>(x_stride) * sizeof(float);
    return x;
  }
  act_stride = act_row_bytes(k.act, cols);
  // Reused across calls of this thread: decode calls matmul hundreds of times per token.
  thread_local std::vector<uint8_t> act_buf;
  if (act_buf.size() < act_stride * static_cast<size_t>(n_tok))
    act_buf.resize(act_stride * static_cast<size_t>(n_tok));
  uint8_t* dst = act_buf.data();
  auto quantize = [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t)
      quantize_act_row(k.act, x + t * x_stride, dst + t * act_stride, cols);
  };
  if (n_tok >= 4) run_parallel(pool, n_tok, 2, quantize);
  else quantize(0, n_tok, 0);
  return dst;
}

void matmul(const WeightView& w, const float* x, int64_t n_tok, float* y, ThreadPool* pool,
            int64_t x_stride, int64_t y_stride) {
  if (x_stride < 0) x_stride = w.cols;
  if (y_stride < 0) y_stride = w.rows;
  if (w.rows <= 0 || n_tok <= 0) return;
  const DotKernel* k = dot_kernel(w.type);
  if (!k) {
    matmul_fallback(w, x, n_tok, y, pool, x_stride, y_stride);
    return;
  }

  const int64_t cols = w.cols;
  size_t act_stride = 0;
  const void* act = prepare_activations(*k, x, n_tok, cols, x_stride, pool, act_stride);
  const uint8_t* act_bytes = static_cast<const uint8_t*>(act);
  const size_t row_bytes = std::max<size_t>(1, w.row_stride);

  if (n_tok == 1) {
    const int64_t grain = std::max<int64_t>(1, static_cast<int64_t>(kMinDecodeBytes / row_bytes));
    run_parallel(pool, w.rows, grain, [&](int64_t r0, int64_t r1, int) {
      for (int64_t r = r0; r < r1; ++r) k->dot(cols, w.row(r), act, act_stride, 1, y + r);
    });
    return;
  }

  const int64_t tile = std::max<int64_t>(1, static_cast<int64_t>(kTileBytes / row_bytes));
  run_parallel(pool, w.rows, 1, [&](int64_t r0, int64_t r1, int) {
    float tmp[kMaxDotTokens];
    for (int64_t rt = r0; rt < r1; rt += tile) {
      const int64_t re = std::min(r1, rt + tile);
      for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxDotTokens) {
        const int nt = static_cast<int>(std::min<int64_t>(kMaxDotTokens, n_tok - t0));
        const uint8_t* a = act_bytes + static_cast<size_t>(t0) * act_stride;
        for (int64_t r = rt; r < re; ++r) {
          k->dot(cols, w.row(r), a, act_stride, nt, tmp);
          for (int i = 0; i < nt; ++i) y[(t0 + i) * y_stride + r] = tmp[i];
        }
      }
    }
  });
}

}  // namespace k3::kernels
