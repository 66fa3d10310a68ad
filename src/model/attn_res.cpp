// model/attn_res: the softmax-over-depth residual mix (`mix` in docs/MODEL.md, AttnRes).
#include <algorithm>
#include <cmath>
#include <vector>

#include "model/layers.h"
#include "model/ops.h"

namespace k3::model {

void res_mix(std::span<const float* const> bank, const float* cur, const float* w, int64_t n, int64_t E,
             float eps, float* out) {
  const size_t nc = bank.size() + 1;
  if (bank.empty()) {
    std::copy(cur, cur + n * E, out);
    return;
  }
  std::vector<double> s(nc);
  std::vector<double> acc(static_cast<size_t>(E));
  for (int64_t t = 0; t < n; ++t) {
    auto cand = [&](size_t i) { return (i < bank.size() ? bank[i] : cur) + t * E; };
    double mx = -INFINITY;
    for (size_t i = 0; i < nc; ++i) {
      const float* c = cand(i);
      // Vector double sums (ops::dot): a scalar chain here cost ~18 µs per mix at E = 2048, on
      // the caller while the pool waits.
      const double ss = ops::dot(c, c, E), sw = ops::dot(c, w, E);
      // Σ_d rmsnorm(c)[d]·w[d] = (Σ_d c[d]·w[d]) / rms(c)
      s[i] = sw / std::sqrt(ss / static_cast<double>(E) + eps);
      mx = std::max(mx, s[i]);
    }
    double sum = 0.0;
    for (double& x : s) sum += (x = std::exp(x - mx));
    std::fill(acc.begin(), acc.end(), 0.0);
    for (size_t i = 0; i < nc; ++i) {
      const float* c = cand(i);
      ops::axpy(s[i] / sum, c, acc.data(), E);
    }
    for (int64_t d = 0; d < E; ++d) out[t * E + d] = static_cast<float>(acc[d]);
  }
}

}  // namespace k3::model
