// Batched matmul dispatch (see matmul_batch.h): each distinct input is converted once on the
// caller (jobs sharing x share its activations), then one parallel_for walks the concatenated
// rows in slices of about equal estimated time (weight bytes × token groups × the type's time
// per byte), kChunksPerThread slices per thread.
#include "kernels/matmul_batch.h"

#include <algorithm>
#include <vector>

#include "core/assert.h"
#include "core/thread_pool.h"
#include "kernels/matmul_detail.h"
#include "kernels/vec_dot.h"

namespace k3::kernels {

namespace {

constexpr int64_t kUnitsPerGrain = 4;
constexpr int64_t kMaxUnits = 1 << 14;

struct Prepared {
  const MatmulJob* job;
  const DotKernel* k;
  RowTask task;
  double cost_per_row;  // weight bytes × token groups
  double cost_begin;    // prefix over the jobs before this one
};

// Rough time per weight byte of each type's decode kernel relative to Q8_0's (one core,
// bench_kernels on the 2026-12-03 Intel VM: Q8_0 15 GB/s; IQ1_M/IQ2_XXS ~6 with AVX-512).
// A batch is sliced by time rather than bytes, so a dispatch that mixes compute-bound expert
// rows with bandwidth-bound Q8_0 rows (the experts' down projections with the shared
// expert's) does not leave the thread holding the expert rows working while the other waits.
double time_per_byte(quant::Type t) {
  using quant::Type;
  switch (t) {
    case Type::IQ1_M:
    case Type::IQ2_XXS:
    case Type::Q3_K:
    case Type::Q4_K: return 2.5;
    case Type::IQ1_S:
    case Type::IQ2_XS:
    case Type::MXFP4:
    case Type::Q2_K: return 4.0;
    case Type::Q6_K: return 1.3;
    default: return 1.0;
  }
}

// An earlier job of the batch (already converted) whose activations are those p needs.
const Prepared* same_input(const std::vector<Prepared>& fast, const Prepared& p) {
  const MatmulJob& j = *p.job;
  const int64_t xs = j.x_stride < 0 ? j.w.cols : j.x_stride;
  for (const Prepared& q : fast) {
    if (&q == &p) return nullptr;
    const MatmulJob& o = *q.job;
    if (o.x == j.x && (o.x_stride < 0 ? o.w.cols : o.x_stride) == xs && o.w.cols == j.w.cols &&
        o.n_tok == j.n_tok && q.k->act == p.k->act)
      return &q;
  }
  return nullptr;
}

}  // namespace

void matmul_batch(std::span<const MatmulJob> jobs, ThreadPool* pool) {
  std::vector<Prepared> fast;
  fast.reserve(jobs.size());
  size_t act_total = 0;
  for (const MatmulJob& j : jobs) {
    if (j.w.rows <= 0 || j.n_tok <= 0) continue;
    const DotKernel* k = dot_kernel(j.w.type);
    if (!k || (j.up && j.up->type != j.w.type)) {
      if (j.up) {
        // No shared fast kernel: plain products, then the gate function.
        const int64_t ys = j.y_stride < 0 ? j.w.rows : j.y_stride;
        std::vector<float> g(static_cast<size_t>(j.w.rows * j.n_tok)), u(g.size());
        matmul(j.w, j.x, j.n_tok, g.data(), pool, j.x_stride, j.w.rows);
        matmul(*j.up, j.x, j.n_tok, u.data(), pool, j.x_stride, j.w.rows);
        for (int64_t t = 0; t < j.n_tok; ++t)
          j.act(g.data() + t * j.w.rows, u.data() + t * j.w.rows, j.y + t * ys, j.w.rows, j.act_ctx);
      } else {
        matmul(j.w, j.x, j.n_tok, j.y, pool, j.x_stride, j.y_stride);
      }
      continue;
    }
    check_product(j.w, j.x, j.n_tok, j.y, j.x_stride < 0 ? j.w.cols : j.x_stride,
                  j.y_stride < 0 ? j.w.rows : j.y_stride);
    if (j.up) {
      K3_ASSERT(j.up->cols == j.w.cols && j.up->rows == j.w.rows, "a fused pair of different shapes");
      K3_ASSERT(j.act != nullptr, "a fused pair without its gate function");
    }
    Prepared p{&j, k, {}, 0, 0};
    if (k->act != ActFormat::F32) act_total += act_row_bytes(k->act, j.w.cols) * static_cast<size_t>(j.n_tok);
    fast.push_back(p);
  }
  if (fast.empty()) return;

  // Activations: one buffer for all jobs, reused across calls of this thread.
  thread_local std::vector<uint8_t> act_buf;
  if (act_buf.size() < act_total) act_buf.resize(act_total);
  size_t off = 0;
  double cost = 0;
  for (Prepared& p : fast) {
    const MatmulJob& j = *p.job;
    const int64_t xs = j.x_stride < 0 ? j.w.cols : j.x_stride;
    RowTask& t = p.task;
    t.k = p.k;
    t.w = &j.w;
    t.up = j.up;
    t.act_fn = j.act;
    t.act_ctx = j.act_ctx;
    t.n_tok = j.n_tok;
    t.y = j.y;
    t.y_stride = j.y_stride < 0 ? j.w.rows : j.y_stride;
    if (p.k->act == ActFormat::F32) {
      t.act = reinterpret_cast<const uint8_t*>(j.x);
      t.act_stride = static_cast<size_t>(xs) * sizeof(float);
    } else if (const Prepared* same = same_input(fast, p)) {
      // Several products of one input (a layer's projections): convert it once.
      t.act = same->task.act;
      t.act_stride = same->task.act_stride;
    } else {
      t.act_stride = act_row_bytes(p.k->act, j.w.cols);
      uint8_t* dst = act_buf.data() + off;
      auto quantize = [&](int64_t t0, int64_t t1, int) {
        for (int64_t i = t0; i < t1; ++i)
          quantize_act_row(p.k->act, j.x + i * xs, dst + i * t.act_stride, j.w.cols);
      };
      if (j.n_tok >= 8) parallel_for(pool, j.n_tok, quantize, 4, kChunksPerThread);
      else quantize(0, j.n_tok, 0);
      t.act = dst;
      off += t.act_stride * static_cast<size_t>(j.n_tok);
    }
    const double row_bytes = static_cast<double>(j.w.row_stride + (j.up ? j.up->row_stride : 0));
    p.cost_per_row = row_bytes * static_cast<double>((j.n_tok + kMaxDotTokens - 1) / kMaxDotTokens) *
                     time_per_byte(j.w.type);
    p.cost_begin = cost;
    cost += p.cost_per_row * static_cast<double>(j.w.rows);
  }

  // The concatenated rows as units of equal estimated time (a few KiB of Q8_0 each); the pool
  // cuts the units into per-thread runs of halving chunks, at least kMinDecodeBytes each, and
  // a range of units runs the rows whose cost falls in it.
  const double unit_cost = static_cast<double>(kMinDecodeBytes) / kUnitsPerGrain;
  const int64_t n_units = pool && pool->size() > 1
                              ? std::clamp<int64_t>(static_cast<int64_t>(cost / unit_cost), 1, kMaxUnits)
                              : 1;
  auto row_at = [&](const Prepared& p, int64_t unit) {
    if (unit >= n_units) return p.job->w.rows;
    const double r =
        (cost * static_cast<double>(unit) / static_cast<double>(n_units) - p.cost_begin) / p.cost_per_row;
    return std::clamp<int64_t>(static_cast<int64_t>(r + 0.5), 0, p.job->w.rows);
  };
  auto run_units = [&](int64_t u0, int64_t u1, int) {
    for (const Prepared& p : fast) {
      const int64_t r0 = u0 == 0 ? 0 : row_at(p, u0), r1 = row_at(p, u1);
      if (r0 < r1) run_rows(p.task, r0, r1);
    }
  };
  const int64_t grain = std::min<int64_t>(kUnitsPerGrain, std::max<int64_t>(1, n_units / 2));
  if (n_units > 1) pool->parallel_for(n_units, run_units, grain, kChunksPerThread);
  else run_units(0, 1, 0);
}

}  // namespace k3::kernels
