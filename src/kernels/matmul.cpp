// kernels/matmul: the dispatch of y = W·x onto the per-type dot kernels (vec_dot.h).
// Activations are converted to the type's activation format once per call; rows are split
// into a few contiguous chunks per thread, claimed dynamically (each chunk a long stream of W,
// read once) and run by run_rows (matmul_detail.h: decode streams rows, prefill tiles them).
#include "kernels/matmul.h"

#include <algorithm>
#include <vector>

#include "core/assert.h"
#include "core/thread_pool.h"
#include "kernels/matmul_detail.h"
#include "kernels/vec_dot.h"

namespace k3::kernels {

namespace {

void matmul_fallback(const WeightView& w, const float* x, int64_t n_tok, float* y, ThreadPool* pool,
                     int64_t x_stride, int64_t y_stride) {
  parallel_for(
      pool, w.rows,
      [&](int64_t r0, int64_t r1, int) {
        WeightView part = w;
        part.data = w.row(r0);
        part.rows = r1 - r0;
        matmul_reference(part, x, n_tok, y + r0, x_stride, y_stride);
      },
      4, kChunksPerThread);
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
    for (int64_t t = t0; t < t1; ++t) quantize_act_row(k.act, x + t * x_stride, dst + t * act_stride, cols);
  };
  if (n_tok >= 4) parallel_for(pool, n_tok, quantize, 2, kChunksPerThread);
  else quantize(0, n_tok, 0);
  return dst;
}

// Prefill through the type's gemm form (vec_dot.h), kGemmTokens tokens at a time, so the
// thread's buffers stay a few hundred KiB whatever the micro-batch (the memory plan's work
// line does not grow with threads): the activation sums of those tokens, then the run of rows
// against them; a fused pair goes kFusedRows rows at a time (gate into y, up into a buffer,
// the gate function over those rows per token).
static void run_rows_gemm(const RowTask& t, int64_t r0, int64_t r1) {
  constexpr int64_t kGemmTokens = 256, kFusedRows = 64;
  const DotKernel& k = *t.k;
  const WeightView& w = *t.w;
  const int64_t cols = w.cols;
  thread_local std::vector<int32_t> sums;
  thread_local std::vector<uint8_t> panel;
  thread_local std::vector<float> ubuf;
  sums.resize(gemm_sums_ints(cols, std::min(kGemmTokens, t.n_tok)));
  panel.resize(gemm_panel_bytes(cols));
  if (t.up) ubuf.resize(static_cast<size_t>(kFusedRows * std::min(kGemmTokens, t.n_tok)));
  for (int64_t t0 = 0; t0 < t.n_tok; t0 += kGemmTokens) {
    const int64_t nt = std::min(kGemmTokens, t.n_tok - t0);
    const uint8_t* a = t.act + static_cast<size_t>(t0) * t.act_stride;
    float* y = t.y + t0 * t.y_stride;
    const size_t ys = static_cast<size_t>(t.y_stride);
    k.act_sums(cols, a, t.act_stride, nt, sums.data());
    // Rows r .. r + len of m: from its decode copy where it has one and the path a gemm for it.
    auto gemm = [&](const WeightView& m, int64_t r, int64_t len, float* out, size_t os) {
      if (m.decode && k.gemm_decode)
        k.gemm_decode(cols, m.decode_row(r), m.decode_stride, len, a, t.act_stride, sums.data(), nt, out, os,
                      panel.data());
      else k.gemm(cols, m.row(r), m.row_stride, len, a, t.act_stride, sums.data(), nt, out, os, panel.data());
    };
    if (!t.up) {
      gemm(w, r0, r1 - r0, y + r0, ys);
      continue;
    }
    for (int64_t rt = r0; rt < r1; rt += kFusedRows) {
      const int64_t len = std::min(kFusedRows, r1 - rt);
      gemm(w, rt, len, y + rt, ys);
      gemm(*t.up, rt, len, ubuf.data(), static_cast<size_t>(len));
      for (int64_t i = 0; i < nt; ++i)
        t.act_fn(y + i * t.y_stride + rt, ubuf.data() + i * len, y + i * t.y_stride + rt, len, t.act_ctx);
    }
  }
}

void run_rows(const RowTask& t, int64_t r0, int64_t r1) {
  const DotKernel& k = *t.k;
  const WeightView& w = *t.w;
  const int64_t cols = w.cols;
  if (k.gemm && t.n_tok >= kGemmMinTokens) return run_rows_gemm(t, r0, r1);
  if (t.n_tok == 1) {
    auto rows = [&](const WeightView& m, float* out) {
      if (m.decode && k.dot_rows_decode)
        k.dot_rows_decode(cols, m.decode_row(r0), m.decode_stride, r1 - r0, t.act, out);
      else if (k.dot_rows) k.dot_rows(cols, m.row(r0), m.row_stride, r1 - r0, t.act, out);
      else
        for (int64_t r = r0; r < r1; ++r) k.dot(cols, m.row(r), t.act, t.act_stride, 1, out + (r - r0));
    };
    rows(w, t.y + r0);
    if (t.up) {
      // Gate rows (into y), then the up rows: each matrix one sequential stream; then the
      // gate function over the whole run.
      thread_local std::vector<float> ubuf;
      ubuf.resize(static_cast<size_t>(r1 - r0));
      rows(*t.up, ubuf.data());
      t.act_fn(t.y + r0, ubuf.data(), t.y + r0, r1 - r0, t.act_ctx);
    }
    return;
  }
  const size_t tile_bytes = std::max<size_t>(1, w.row_stride + (t.up ? t.up->row_stride : 0));
  const int64_t tile = std::max<int64_t>(1, static_cast<int64_t>(kTileBytes / tile_bytes));
  float g[kMaxDotTokens], u[kMaxDotTokens];
  // Fused pairs: the tile's up outputs per token, the gate function then runs on whole rows.
  thread_local std::vector<float> ubuf;
  if (t.up) ubuf.resize(static_cast<size_t>(tile * kMaxDotTokens));
  for (int64_t rt = r0; rt < r1; rt += tile) {
    const int64_t re = std::min(r1, rt + tile), len = re - rt;
    for (int64_t t0 = 0; t0 < t.n_tok; t0 += kMaxDotTokens) {
      const int nt = static_cast<int>(std::min<int64_t>(kMaxDotTokens, t.n_tok - t0));
      const uint8_t* a = t.act + static_cast<size_t>(t0) * t.act_stride;
      float* y = t.y + t0 * t.y_stride;
      for (int64_t r = rt; r < re; ++r) {
        k.dot(cols, w.row(r), a, t.act_stride, nt, g);
        for (int i = 0; i < nt; ++i) y[i * t.y_stride + r] = g[i];
        if (t.up) {
          k.dot(cols, t.up->row(r), a, t.act_stride, nt, u);
          for (int i = 0; i < nt; ++i) ubuf[i * len + (r - rt)] = u[i];
        }
      }
      if (t.up)
        for (int i = 0; i < nt; ++i)
          t.act_fn(y + i * t.y_stride + rt, ubuf.data() + i * len, y + i * t.y_stride + rt, len, t.act_ctx);
    }
  }
}

void check_product(const WeightView& w, const float* x, int64_t n_tok, const float* y, int64_t x_stride,
                   int64_t y_stride) {
  K3_ASSERT(w.data != nullptr && x != nullptr && y != nullptr, "a product without its operands");
  K3_ASSERT(w.cols > 0 && n_tok > 0);
  K3_ASSERT(w.row_stride >= quant::row_bytes(w.type, w.cols), "weight rows shorter than their columns");
  K3_ASSERT(x_stride >= w.cols || n_tok == 1, "activation rows overlap");
  K3_ASSERT(y_stride >= w.rows || n_tok == 1, "output rows overlap");
}

void matmul(const WeightView& w, const float* x, int64_t n_tok, float* y, ThreadPool* pool, int64_t x_stride,
            int64_t y_stride) {
  if (x_stride < 0) x_stride = w.cols;
  if (y_stride < 0) y_stride = w.rows;
  if (w.rows <= 0 || n_tok <= 0) return;
  check_product(w, x, n_tok, y, x_stride, y_stride);
  const DotKernel* k = dot_kernel(w.type);
  if (!k) {
    matmul_fallback(w, x, n_tok, y, pool, x_stride, y_stride);
    return;
  }
  RowTask t;
  t.k = k;
  t.w = &w;
  t.act =
      static_cast<const uint8_t*>(prepare_activations(*k, x, n_tok, w.cols, x_stride, pool, t.act_stride));
  t.n_tok = n_tok;
  t.y = y;
  t.y_stride = y_stride;
  const size_t row_bytes = std::max<size_t>(1, w.row_stride);
  const int64_t grain =
      n_tok == 1 ? std::max<int64_t>(1, static_cast<int64_t>(kMinDecodeBytes / row_bytes)) : 1;
  parallel_for(
      pool, w.rows, [&](int64_t r0, int64_t r1, int) { run_rows(t, r0, r1); }, grain, kChunksPerThread);
}

}  // namespace k3::kernels
