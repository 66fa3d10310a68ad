#include "vision/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/matmul.h"

namespace k3::vision {

void rope2d(float* qkv, int64_t n_pos, int64_t grid_w, int64_t n_head, int64_t head_dim, float theta,
            ThreadPool* pool) {
  const int64_t half = head_dim / 2, pairs = half / 2, D = n_head * head_dim;
  std::vector<double> inv(static_cast<size_t>(pairs));
  for (int64_t i = 0; i < pairs; ++i)
    inv[i] = std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(i) / static_cast<double>(half));
  const auto turn = [&](int64_t b, int64_t e, int) {
    std::vector<double> cs(static_cast<size_t>(4 * pairs));
    for (int64_t t = b; t < e; ++t) {
      const double pos[2] = {static_cast<double>(t % grid_w), static_cast<double>(t / grid_w)};
      for (int half_i = 0; half_i < 2; ++half_i)
        for (int64_t i = 0; i < pairs; ++i) {
          cs[(half_i * pairs + i) * 2] = std::cos(pos[half_i] * inv[i]);
          cs[(half_i * pairs + i) * 2 + 1] = std::sin(pos[half_i] * inv[i]);
        }
      float* row = qkv + t * 3 * D;
      for (int64_t part = 0; part < 2; ++part)  // Q, then K
        for (int64_t h = 0; h < n_head; ++h) {
          float* x = row + part * D + h * head_dim;
          for (int half_i = 0; half_i < 2; ++half_i)
            for (int64_t i = 0; i < pairs; ++i) {
              float* p = x + half_i * half + 2 * i;
              const double c = cs[(half_i * pairs + i) * 2], s = cs[(half_i * pairs + i) * 2 + 1];
              const double a = p[0], bb = p[1];
              p[0] = static_cast<float>(a * c - bb * s);
              p[1] = static_cast<float>(a * s + bb * c);
            }
        }
    }
  };
  if (pool) pool->parallel_for(n_pos, turn, 16);
  else turn(0, n_pos, 0);
}

namespace {

constexpr int64_t kQueryBlock = 256;

kernels::WeightView f32_rows(const float* p, int64_t rows, int64_t cols) {
  kernels::WeightView w;
  w.type = quant::Type::F32;
  w.data = p;
  w.rows = rows;
  w.cols = cols;
  w.row_stride = static_cast<size_t>(cols) * sizeof(float);
  return w;
}

// Each row of s (n_q × n_k) becomes softmax(scale · row), the sum taken in double.
void softmax_rows(float* s, int64_t n_q, int64_t n_k, float scale, ThreadPool* pool) {
  const auto rows = [&](int64_t b, int64_t e, int) {
    for (int64_t r = b; r < e; ++r) {
      float* x = s + r * n_k;
      const float mx = *std::max_element(x, x + n_k);
      double sum = 0;
      for (int64_t k = 0; k < n_k; ++k) {
        const float v = std::exp((x[k] - mx) * scale);
        x[k] = v;
        sum += v;
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t k = 0; k < n_k; ++k) x[k] *= inv;
    }
  };
  if (pool) pool->parallel_for(n_q, rows, 4);
  else rows(0, n_q, 0);
}

}  // namespace

void attend(const float* qkv, int64_t n_pos, int64_t n_head, int64_t head_dim, float* out, ThreadPool* pool) {
  const int64_t D = n_head * head_dim, stride = 3 * D;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  std::vector<float> k(static_cast<size_t>(n_pos * head_dim)), vt(static_cast<size_t>(head_dim * n_pos));
  std::vector<float> s(static_cast<size_t>(std::min(n_pos, kQueryBlock) * n_pos));
  for (int64_t h = 0; h < n_head; ++h) {
    // K as n_pos rows (a score per key), V transposed as head_dim rows (an output per channel).
    for (int64_t t = 0; t < n_pos; ++t) {
      const float* row = qkv + t * stride + h * head_dim;
      std::copy(row + D, row + D + head_dim, k.data() + t * head_dim);
      for (int64_t d = 0; d < head_dim; ++d) vt[d * n_pos + t] = row[2 * D + d];
    }
    const kernels::WeightView kw = f32_rows(k.data(), n_pos, head_dim),
                              vw = f32_rows(vt.data(), head_dim, n_pos);
    for (int64_t q0 = 0; q0 < n_pos; q0 += kQueryBlock) {
      const int64_t nq = std::min(kQueryBlock, n_pos - q0);
      kernels::matmul(kw, qkv + q0 * stride + h * head_dim, nq, s.data(), pool, stride, n_pos);
      softmax_rows(s.data(), nq, n_pos, scale, pool);
      kernels::matmul(vw, s.data(), nq, out + q0 * D + h * head_dim, pool, n_pos, D);
    }
  }
}

}  // namespace k3::vision
