// store/predictor: the next layer's router on the current hidden state (see predictor.h).
#include "store/predictor.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/matmul.h"
#include "model/hparams.h"
#include "model/model.h"

namespace k3::store {

namespace {
constexpr int64_t kMaxRows = 64;
}  // namespace

std::vector<int32_t> predict_experts(const model::Model& m, uint32_t layer, const float* xn, int64_t n) {
  const model::HParams& hp = m.hparams();
  const int64_t X = hp.n_expert, k = hp.n_expert_used;
  std::vector<int32_t> out;
  // A large micro-batch is sampled: evenly spaced rows find the experts many tokens share
  // (the ones worth reading early); the rest are read when the layer announces them.
  const int64_t E = hp.n_embd, rows = std::min<int64_t>(n, kMaxRows);
  std::vector<float> sample;
  if (rows < n) {
    sample.resize(static_cast<size_t>(rows * E));
    for (int64_t i = 0; i < rows; ++i) {
      const float* src = xn + (i * n / rows) * E;
      std::copy(src, src + E, sample.begin() + i * E);
    }
    xn = sample.data();
    n = rows;
  }
  const model::MoeWeights& w = m.weights().layers[layer].moe;
  std::vector<float> z(static_cast<size_t>(n * X));
  kernels::matmul(w.router, xn, n, z.data(), nullptr);
  std::vector<char> picked(static_cast<size_t>(X), 0);
  std::vector<double> score(static_cast<size_t>(X));
  std::vector<int32_t> order(static_cast<size_t>(X));
  for (int64_t t = 0; t < n; ++t) {
    const float* zt = z.data() + t * X;
    if (hp.expert_gating_func == model::kGatingSigmoid) {
      for (int64_t e = 0; e < X; ++e) score[e] = 1.0 / (1.0 + std::exp(-static_cast<double>(zt[e])));
    } else {
      const double mx = *std::max_element(zt, zt + X);
      double s = 0;
      for (int64_t e = 0; e < X; ++e) s += (score[e] = std::exp(zt[e] - mx));
      for (int64_t e = 0; e < X; ++e) score[e] /= s;
    }
    for (int64_t e = 0; e < X; ++e) score[e] += w.router_bias[e];
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t c) {
      return score[a] != score[c] ? score[a] > score[c] : a < c;
    });
    for (int64_t j = 0; j < k; ++j) picked[order[j]] = 1;
  }
  for (int32_t e = 0; e < X; ++e)
    if (picked[e]) out.push_back(e);
  return out;
}

}  // namespace k3::store
