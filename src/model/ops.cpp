// model/ops: see ops.h.
#include "model/ops.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/situ_f64.h"
#include "model/observer.h"
#include "model/profile.h"

namespace k3::model::ops {

void rmsnorm_rows(const float* x, float* y, int64_t n_rows, int64_t n, const float* w, float eps,
                  int64_t x_stride, int64_t y_stride) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * x_stride;
    float* yr = y + r * y_stride;
    const double ss = dot(xr, xr, n);
    const double scale = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
    for (int64_t i = 0; i < n; ++i) {
      const double v = xr[i] * scale;
      yr[i] = static_cast<float>(w ? v * w[i] : v);
    }
  }
}

void l2norm(float* x, int64_t n, float eps) {
  const double ss = dot(x, x, n);
  const double scale = 1.0 / std::max(std::sqrt(ss), static_cast<double>(eps));
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(x[i] * scale);
}

// Four double lanes, two independent accumulators: exact products of floats summed in
// double, at close to the speed of a float loop.
double dot(const float* a, const float* b, int64_t n) {
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    s0 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm_loadu_ps(a + i)), _mm256_cvtps_pd(_mm_loadu_ps(b + i)), s0);
    s1 = _mm256_fmadd_pd(_mm256_cvtps_pd(_mm_loadu_ps(a + i + 4)), _mm256_cvtps_pd(_mm_loadu_ps(b + i + 4)),
                         s1);
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(s0, s1));
  double s = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

void axpy(double alpha, const float* x, double* y, int64_t n) {
  const __m256d va = _mm256_set1_pd(alpha);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    _mm256_storeu_pd(y + i,
                     _mm256_fmadd_pd(va, _mm256_cvtps_pd(_mm_loadu_ps(x + i)), _mm256_loadu_pd(y + i)));
  for (; i < n; ++i) y[i] += alpha * x[i];
}

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
  ProfMatmul prof(weight_bytes(w), product_ops(w, n_tok), 1);
  if (observer) observer->on_matmul_input(w, x, n_tok, x_stride < 0 ? w.cols : x_stride);
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

void situ_gate_up(const float* g, const float* u, float* y, int64_t n, const void* ctx) {
  const float* c = static_cast<const float*>(ctx);
  situ_rows(g, u, y, n, c[0], c[1]);
}

void situ_rows(const float* g, const float* u, float* out, int64_t n, float beta, float lambda) {
  kernels::situ_f64(g, u, out, n, beta, lambda);
}

}  // namespace k3::model::ops
