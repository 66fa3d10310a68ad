// Norms, activations and the fused gate/up SiTU against float64 references of their
// formulas (the primitives of docs/MODEL.md).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/activations.h"
#include "kernels/ffn_fused.h"
#include "kernels/situ_f64.h"
#include "kernels/norms.h"
#include "kernels/random_weights.h"
#include "quant/codec.h"

namespace k3::kernels {
namespace {

std::vector<float> normal_vec(int64_t n, float sd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(Norms, RmsNormMatchesFloat64) {
  for (int64_t n : {1, 7, 64, 1001}) {
    const auto x = normal_vec(n, 3.0f, static_cast<uint32_t>(n));
    const auto w = normal_vec(n, 1.0f, static_cast<uint32_t>(n) + 1);
    std::vector<float> y(static_cast<size_t>(n)), z(static_cast<size_t>(n));
    const float eps = 1e-5f;
    rmsnorm(x.data(), w.data(), y.data(), n, eps);
    rmsnorm(x.data(), nullptr, z.data(), n, eps);
    double ss = 0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const double scale = 1.0 / std::sqrt(ss / n + eps);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(z[i], x[i] * scale, 1e-6 * std::fabs(x[i] * scale) + 1e-30);
      EXPECT_NEAR(y[i], x[i] * scale * w[i], 2e-6 * std::fabs(x[i] * scale * w[i]) + 1e-30);
    }
  }
}

TEST(Norms, L2NormUsesMaxNotSqrtPlusEps) {
  std::vector<float> x = {3.0f, 4.0f}, y(2);
  l2norm(x.data(), y.data(), 2, 1e-5f);
  EXPECT_FLOAT_EQ(y[0], 0.6f);
  EXPECT_FLOAT_EQ(y[1], 0.8f);
  std::vector<float> tiny = {1e-7f, 0.0f};
  l2norm(tiny.data(), y.data(), 2, 1e-5f);  // norm < eps: divide by eps
  EXPECT_FLOAT_EQ(y[0], 1e-7f / 1e-5f);
  // in place
  l2norm(x.data(), x.data(), 2, 1e-5f);
  EXPECT_FLOAT_EQ(x[1], 0.8f);
}

TEST(Activations, SigmoidSiluSoftplusMatchFloat64) {
  std::vector<float> x = normal_vec(1003, 8.0f, 5);
  x[0] = -100.0f;
  x[1] = 100.0f;
  x[2] = 0.0f;
  x[3] = -87.0f;
  x[4] = 21.0f;
  x[5] = 19.5f;
  std::vector<float> s(x.size()), si(x.size()), sp(x.size());
  sigmoid(x.data(), s.data(), static_cast<int64_t>(x.size()));
  silu(x.data(), si.data(), static_cast<int64_t>(x.size()));
  softplus(x.data(), sp.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    const double sg = 1.0 / (1.0 + std::exp(-v));
    EXPECT_NEAR(s[i], sg, 4e-7 * sg + 1e-37) << v;
    EXPECT_NEAR(si[i], v * sg, 4e-7 * std::fabs(v * sg) + 1e-37) << v;
    const double spl = v > 20 ? v : std::log1p(std::exp(v));
    EXPECT_NEAR(sp[i], spl, 1e-6 * std::fabs(spl) + 1e-7) << v;
  }
  EXPECT_EQ(s[1], 1.0f);
  EXPECT_EQ(sp[4], 21.0f);
}

TEST(Activations, SituMatchesSpecFormula) {
  const auto g = normal_vec(500, 6.0f, 9), u = normal_vec(500, 40.0f, 10);
  std::vector<float> y(500), y0(500);
  situ(g.data(), u.data(), y.data(), 500, 4.0f, 25.0f);
  situ(g.data(), u.data(), y0.data(), 500, 4.0f, 0.0f);
  for (size_t i = 0; i < 500; ++i) {
    const double gd = g[i], ud = u[i];
    const double gate = 4.0 * std::tanh(gd / 4.0) / (1.0 + std::exp(-gd));
    const double want = gate * 25.0 * std::tanh(ud / 25.0);
    EXPECT_NEAR(y[i], want, 1e-5 * std::fabs(want) + 1e-6);
    EXPECT_LE(std::fabs(y[i]), 100.0f);                                 // bounded by β·λ
    EXPECT_NEAR(y0[i], gate * ud, 1e-5 * std::fabs(gate * ud) + 1e-6);  // λ ≤ 0: plain u
  }
}

TEST(FfnFused, EqualsMatmulThenSitu) {
  ThreadPool pool(2);
  std::mt19937 rng(12);
  using quant::Type;
  for (Type t : {Type::Q8_0, Type::IQ2_XXS, Type::F32, Type::Q5_K}) {
    const int64_t rows = 41, cols = 512;
    const size_t rb = quant::row_bytes(t, cols);
    std::vector<uint8_t> gb, ub;
    for (int64_t r = 0; r < rows; ++r) {
      auto a = test::random_row(t, cols, rng), b = test::random_row(t, cols, rng);
      gb.insert(gb.end(), a.begin(), a.end());
      ub.insert(ub.end(), b.begin(), b.end());
    }
    const WeightView gv{t, gb.data(), cols, rows, rb}, uv{t, ub.data(), cols, rows, rb};
    for (int64_t n_tok : {1, 6}) {
      const auto x = test::random_acts(cols * n_tok, rng);
      std::vector<float> g(static_cast<size_t>(rows * n_tok)), u(g.size()), want(g.size()), got(g.size());
      matmul(gv, x.data(), n_tok, g.data(), &pool);
      matmul(uv, x.data(), n_tok, u.data(), &pool);
      situ(g.data(), u.data(), want.data(), rows * n_tok, 4.0f, 25.0f);
      matmul_gate_up_situ(gv, uv, x.data(), n_tok, got.data(), &pool, 4.0f, 25.0f);
      EXPECT_EQ(got, want) << quant::type_name(t) << " n_tok=" << n_tok;
    }
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
