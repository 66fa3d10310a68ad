// model/ops: see ops.h.
#include "model/ops.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/thread_pool.h"
#include "model/collective.h"
#include "model/gpu_products.h"
#include "kernels/situ_f64.h"
#include "model/observer.h"
#include "model/profile.h"

namespace k3::model::ops {

namespace {

uint64_t weight_bytes(const kernels::WeightView& w) { return static_cast<uint64_t>(w.rows) * w.row_stride; }
double product_ops(const kernels::WeightView& w, int64_t n_tok) {
  return 2.0 * static_cast<double>(w.rows) * static_cast<double>(w.cols) * static_cast<double>(n_tok);
}

// Adds the product(s) run in its lifetime to the profile's open section, if there is one.
class ProfMatmul {
 public:
  ProfMatmul(uint64_t bytes, double ops, uint64_t n)
      : on_(prof_matmul_active()), bytes_(bytes), ops_(ops), n_(n) {
    if (on_) t0_ = std::chrono::steady_clock::now();
  }
  ~ProfMatmul() {
    if (on_)
      prof_matmul(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(), bytes_, ops_,
                  n_);
  }
  ProfMatmul(const ProfMatmul&) = delete;
  ProfMatmul& operator=(const ProfMatmul&) = delete;

 private:
  bool on_;
  uint64_t bytes_;
  double ops_;
  uint64_t n_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace

void Matmul::operator()(const kernels::WeightView& w, const float* x, int64_t n_tok, float* y,
                        int64_t x_stride, int64_t y_stride) const {
  if (collective && collective->size() > 1) {
    const kernels::MatmulJob j{
        .w = w, .x = x, .n_tok = n_tok, .y = y, .x_stride = x_stride, .y_stride = y_stride};
    split_by_rows({&j, 1});
    return;
  }
  ProfMatmul prof(weight_bytes(w), product_ops(w, n_tok), 1);
  if (observer) observer->on_matmul_input(w, x, n_tok, x_stride < 0 ? w.cols : x_stride);
  if (gpu && gpu->run(w, x, n_tok, y, x_stride, y_stride)) return;
  if (!reference) {
    kernels::matmul(w, x, n_tok, y, pool, x_stride, y_stride);
    return;
  }
  if (x_stride < 0) x_stride = w.cols;
  if (y_stride < 0) y_stride = w.rows;
  auto part = [&](int64_t r0, int64_t r1, int) {
    kernels::WeightView p = w;
    p.data = w.row(r0);
    p.rows = r1 - r0;
    kernels::matmul_reference(p, x, n_tok, y + r0, x_stride, y_stride);
  };
  // Small products are not worth waking the pool for.
  const int64_t grain = std::max<int64_t>(8, (1 << 16) / std::max<int64_t>(1, w.cols * n_tok));
  parallel_for(pool, w.rows, part, grain);
}

void Matmul::batch(std::span<const kernels::MatmulJob> jobs) const {
  if (collective && collective->size() > 1) {
    split_by_rows(jobs);
    return;
  }
  if (gpu) {
    batch_split_by_device(jobs);
    return;
  }
  if (!reference && !observer) {
    uint64_t bytes = 0;
    double ops = 0;
    if (prof_matmul_active())
      for (const kernels::MatmulJob& j : jobs) {
        bytes += weight_bytes(j.w) + (j.up ? weight_bytes(*j.up) : 0);
        ops += product_ops(j.w, j.n_tok) * (j.up ? 2 : 1);
      }
    ProfMatmul prof(bytes, ops, jobs.size());
    kernels::matmul_batch(jobs, pool);
    return;
  }
  for (const kernels::MatmulJob& j : jobs) {
    if (!j.up) {
      (*this)(j.w, j.x, j.n_tok, j.y, j.x_stride, j.y_stride);
      continue;
    }
    const int64_t R = j.w.rows, ys = j.y_stride < 0 ? R : j.y_stride;
    std::vector<float> g(static_cast<size_t>(R * j.n_tok)), u(g.size());
    (*this)(j.w, j.x, j.n_tok, g.data(), j.x_stride, R);
    (*this)(*j.up, j.x, j.n_tok, u.data(), j.x_stride, R);
    for (int64_t t = 0; t < j.n_tok; ++t)
      j.act(g.data() + t * R, u.data() + t * R, j.y + t * ys, R, j.act_ctx);
  }
}

// The jobs whose weights are on the GPU run there, as one round trip where the group fits its
// buffers (else one by one): a gate/up pair is two products, then the activation on the CPU. The
// rest run as one CPU batch.
void Matmul::batch_split_by_device(std::span<const kernels::MatmulJob> jobs) const {
  std::vector<kernels::MatmulJob> cpu, on_gpu;
  for (const kernels::MatmulJob& j : jobs)
    ((!gpu->holds(j.w) || (j.up && !gpu->holds(*j.up))) ? cpu : on_gpu).push_back(j);
  // Gate and up results of the fused pairs, R × n_tok floats each, before the activation.
  std::vector<std::vector<float>> gu;
  std::vector<GpuProducts::Product> group;
  for (const kernels::MatmulJob& j : on_gpu) {
    if (observer) observer->on_matmul_input(j.w, j.x, j.n_tok, j.x_stride < 0 ? j.w.cols : j.x_stride);
    if (!j.up) {
      group.push_back({&j.w, j.x, j.n_tok, j.y, j.x_stride, j.y_stride});
      continue;
    }
    if (observer) observer->on_matmul_input(*j.up, j.x, j.n_tok, j.x_stride < 0 ? j.w.cols : j.x_stride);
    const size_t n = static_cast<size_t>(j.w.rows * j.n_tok);
    gu.emplace_back(n);
    group.push_back({&j.w, j.x, j.n_tok, gu.back().data(), j.x_stride, j.w.rows});
    gu.emplace_back(n);
    group.push_back({j.up, j.x, j.n_tok, gu.back().data(), j.x_stride, j.w.rows});
  }
  if (!group.empty() && !gpu->run_group(group))
    for (const GpuProducts::Product& p : group) gpu->run(*p.w, p.x, p.n_tok, p.y, p.x_stride, p.y_stride);
  size_t pair = 0;
  for (const kernels::MatmulJob& j : on_gpu) {
    if (!j.up) continue;
    const float* g = gu[pair++].data();
    const float* u = gu[pair++].data();
    const int64_t R = j.w.rows, ys = j.y_stride < 0 ? R : j.y_stride;
    for (int64_t t = 0; t < j.n_tok; ++t) j.act(g + t * R, u + t * R, j.y + t * ys, R, j.act_ctx);
  }
  if (cpu.empty()) return;
  Matmul host = *this;
  host.gpu = nullptr;
  host.batch(cpu);
}

// Each job's rows [r0, r1) of this rank, computed into one packed block (job by job, token by
// token), one all-gather of the blocks of all ranks, and every rank's rows copied to their
// place in each job's output. The buffers are this thread's, reused from call to call.
void Matmul::split_by_rows(std::span<const kernels::MatmulJob> jobs) const {
  const int N = collective->size(), me = collective->rank();
  thread_local std::vector<kernels::MatmulJob> mine;
  thread_local std::vector<float> packed, gathered;
  thread_local std::vector<size_t> counts;
  thread_local std::vector<kernels::WeightView> ups;  // the fused pairs' up slices
  mine.clear();
  ups.clear();
  ups.reserve(jobs.size());  // p.up points into it: no reallocation while it fills
  counts.assign(static_cast<size_t>(N), 0);
  size_t my_floats = 0;
  for (const kernels::MatmulJob& j : jobs)
    for (int r = 0; r < N; ++r) {
      const auto [r0, r1] = row_share(j.w.rows, r, N);
      counts[static_cast<size_t>(r)] += static_cast<size_t>((r1 - r0) * j.n_tok) * sizeof(float);
      if (r == me) my_floats += static_cast<size_t>((r1 - r0) * j.n_tok);
    }
  if (packed.size() < my_floats) packed.resize(my_floats);
  size_t at = 0;
  for (const kernels::MatmulJob& j : jobs) {
    const auto [r0, r1] = row_share(j.w.rows, me, N);
    if (r1 == r0 || j.n_tok == 0) continue;
    kernels::MatmulJob p = j;
    p.w.data = j.w.row(r0);
    p.w.rows = r1 - r0;
    if (j.up) {
      ups.push_back(*j.up);
      ups.back().data = j.up->row(r0);
      ups.back().rows = r1 - r0;
      p.up = &ups.back();
    }
    if (p.x_stride < 0) p.x_stride = j.w.cols;
    p.y = packed.data() + at;
    p.y_stride = r1 - r0;
    mine.push_back(p);
    at += static_cast<size_t>((r1 - r0) * j.n_tok);
  }
  local().batch(mine);
  size_t total = 0;
  for (size_t c : counts) total += c;
  if (gathered.size() * sizeof(float) < total) gathered.resize(total / sizeof(float));
  collective->allgatherv(packed.data(), gathered.data(), counts);
  const float* src = gathered.data();
  for (int r = 0; r < N; ++r)
    for (const kernels::MatmulJob& j : jobs) {
      const auto [r0, r1] = row_share(j.w.rows, r, N);
      const int64_t len = r1 - r0, ys = j.y_stride < 0 ? j.w.rows : j.y_stride;
      for (int64_t t = 0; t < j.n_tok; ++t, src += len) std::copy(src, src + len, j.y + t * ys + r0);
    }
}

void situ_gate_up(const float* g, const float* u, float* y, int64_t n, const void* ctx) {
  const float* c = static_cast<const float*>(ctx);
  situ_rows(g, u, y, n, c[0], c[1]);
}

void situ_rows(const float* g, const float* u, float* out, int64_t n, float beta, float lambda) {
  kernels::situ_f64(g, u, out, n, beta, lambda);
}

}  // namespace k3::model::ops
