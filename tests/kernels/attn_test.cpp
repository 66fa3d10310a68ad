// kernels/attn: the float attention loops against their plain-C twins and a double reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/attn.h"
#include "kernels/random_weights.h"

namespace k3::kernels {
namespace {

std::vector<float> randn(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  return test::random_acts(static_cast<int64_t>(n), rng);
}

// Every length class: the 32-wide body, the 8-wide tail, the scalar tail, and empty.
TEST(AttnKernels, DotMatchesTheDoubleSumWithinFloatRounding) {
  for (int64_t n : {0, 1, 7, 8, 31, 32, 33, 64, 512, 576, 1000}) {
    const auto a = randn(static_cast<size_t>(n), 1), b = randn(static_cast<size_t>(n), 2);
    double exact = 0, mag = 0;
    for (int64_t i = 0; i < n; ++i) exact += double(a[i]) * b[i], mag += std::fabs(double(a[i]) * b[i]);
    // Float summation error is bounded by n·eps·Σ|a·b| for any order; both orders must hold it.
    const double bound = static_cast<double>(n) * 6e-8 * mag + 1e-30;
    EXPECT_NEAR(dot_f32(a.data(), b.data(), n), exact, bound) << n;
    EXPECT_NEAR(dot_f32_scalar(a.data(), b.data(), n), exact, bound) << n;
  }
}

TEST(AttnKernels, AxpyEqualsTheScalarTwinBitForBit) {
  for (int64_t n : {0, 1, 7, 8, 9, 512, 515}) {
    const auto x = randn(static_cast<size_t>(n), 3);
    auto y = randn(static_cast<size_t>(n), 4), y2 = y;
    axpy_f32(0.37f, x.data(), y.data(), n);
    axpy_f32_scalar(0.37f, x.data(), y2.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], y2[i]) << n << " " << i;
  }
}

TEST(AttnKernels, FoldAddsIntoDoubleAndClears) {
  for (int64_t n : {0, 3, 4, 5, 512}) {
    auto x = randn(static_cast<size_t>(n), 5);
    std::vector<double> y(static_cast<size_t>(n), 1.5), want(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) want[i] = 1.5 + static_cast<double>(x[i]);
    add_f32_to_f64(x.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(y[i], want[i]);
      EXPECT_EQ(x[i], 0.0f);
    }
  }
}

}  // namespace
}  // namespace k3::kernels
