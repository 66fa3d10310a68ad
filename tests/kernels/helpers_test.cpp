// Norms, activations and the vectorised SiTU against float64 references of their formulas
// (the primitives of docs/MODEL.md, in the model's numerics: docs/NUMERICS.md).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/activations.h"
#include "kernels/norms.h"
#include "kernels/situ_f64.h"

namespace k3::kernels {
namespace {

std::vector<float> normal_vec(int64_t n, float sd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

// Each output is the float64 value rounded once: within half a float ulp of it.
TEST(Norms, RmsNormRowsRoundTheFloat64ValueOnce) {
  for (int64_t n : {1, 7, 64, 1001}) {
    const int64_t rows = 3, xs = n + 5, ys = n + 2;
    const auto x = normal_vec(rows * xs, 3.0f, static_cast<uint32_t>(n));
    const auto w = normal_vec(n, 1.0f, static_cast<uint32_t>(n) + 1);
    std::vector<float> y(static_cast<size_t>(rows * ys), -1.0f), z(y.size(), -1.0f);
    const float eps = 1e-5f;
    rmsnorm_rows(x.data(), y.data(), rows, n, w.data(), eps, xs, ys);
    rmsnorm_rows(x.data(), z.data(), rows, n, nullptr, eps, xs, ys);
    for (int64_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[r * xs + i]) * x[r * xs + i];
      const double scale = 1.0 / std::sqrt(ss / n + eps);
      for (int64_t i = 0; i < n; ++i) {
        const double v = x[r * xs + i] * scale, vw = v * w[i];
        EXPECT_NEAR(z[r * ys + i], v, 6.1e-8 * std::fabs(v) + 1e-37);
        EXPECT_NEAR(y[r * ys + i], vw, 6.1e-8 * std::fabs(vw) + 1e-37);
      }
      for (int64_t i = n; i < ys && r + 1 < rows; ++i)
        EXPECT_EQ(y[r * ys + i], -1.0f) << "stride gap written";
    }
  }
}

TEST(Norms, L2NormUsesMaxNotSqrtPlusEps) {
  std::vector<float> x = {3.0f, 4.0f};
  l2norm(x.data(), 2, 1e-5f);
  EXPECT_FLOAT_EQ(x[0], 0.6f);
  EXPECT_FLOAT_EQ(x[1], 0.8f);
  std::vector<float> tiny = {1e-7f, 0.0f};
  l2norm(tiny.data(), 2, 1e-5f);  // norm < eps: divide by eps
  EXPECT_FLOAT_EQ(tiny[0], 1e-7f / 1e-5f);
}

TEST(Activations, SigmoidSiluSoftplusMatchFloat64) {
  std::vector<float> x = normal_vec(1003, 8.0f, 5);
  x[0] = -100.0f;
  x[1] = 100.0f;
  x[2] = 0.0f;
  x[3] = -87.0f;
  x[4] = 21.0f;
  x[5] = 19.5f;
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    const double sg = 1.0 / (1.0 + std::exp(-v));
    EXPECT_NEAR(sigmoid(v), sg, 6.1e-8 * sg + 1e-37) << v;
    EXPECT_NEAR(silu(v), v * sg, 6.1e-8 * std::fabs(v * sg) + 1e-37) << v;
    const double spl = v > 20 ? v : std::log1p(std::exp(v));
    EXPECT_NEAR(softplus(v), spl, 1e-15 * std::fabs(spl) + 1e-300) << v;
  }
  EXPECT_EQ(sigmoid(100.0), 1.0f);
  EXPECT_EQ(softplus(21.0), 21.0);
}

TEST(Activations, SituMatchesSpecFormula) {
  const auto g = normal_vec(500, 6.0f, 9), u = normal_vec(500, 40.0f, 10);
  for (size_t i = 0; i < 500; ++i) {
    const double gd = g[i], ud = u[i];
    const double gate = 4.0 * std::tanh(gd / 4.0) / (1.0 + std::exp(-gd));
    const double want = gate * 25.0 * std::tanh(ud / 25.0);
    const float y = situ(gd, ud, 4.0, 25.0), y0 = situ(gd, ud, 4.0, 0.0);
    EXPECT_NEAR(y, want, 1e-6 * std::fabs(want) + 1e-30);
    EXPECT_LE(std::fabs(y), 100.0f);                                  // bounded by β·λ
    EXPECT_NEAR(y0, gate * ud, 1e-6 * std::fabs(gate * ud) + 1e-30);  // λ ≤ 0: plain u
  }
}

// The vectorised double SiTU against libm in double: the same float almost always, never more
// than one float ulp away, over gate/up values from tiny to saturating, and with λ ≤ 0.
TEST(SituF64, MatchesLibmForm) {
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> mag(-8.0f, 3.0f);
  const int64_t n = 4099;  // odd tail
  std::vector<float> g(n), u(n), y(n);
  for (int64_t i = 0; i < n; ++i) {
    g[i] = std::pow(10.0f, mag(rng)) * (rng() % 2 ? 1.0f : -1.0f);
    u[i] = std::pow(10.0f, mag(rng)) * (rng() % 2 ? 1.0f : -1.0f);
  }
  g[0] = 0.0f;
  g[1] = -800.0f;
  g[2] = 800.0f;
  for (float lambda : {25.0f, 0.0f}) {
    situ_f64(g.data(), u.data(), y.data(), n, 4.0f, lambda);
    int64_t differ = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float want = situ_f64_scalar(g[i], u[i], 4.0f, lambda);
      if (y[i] != want) {
        ++differ;
        EXPECT_LE(std::fabs(y[i] - want), std::fabs(want) * 1.2e-7f + 1e-37f) << g[i] << " " << u[i];
      }
    }
    EXPECT_LE(differ, n / 100) << "lambda " << lambda;
  }
}

}  // namespace
}  // namespace k3::kernels
