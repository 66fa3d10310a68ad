// kernels/attn: the float attention loops against their plain-C twins and a double reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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

// The blocked form over m rows equals m calls of axpy_f32 (and of the scalar twin) bit for bit,
// for row lengths around its 32-wide blocks and its 8-wide tail, with strided alphas and rows.
TEST(AttnKernels, AxpyRowsEqualsAxpyPerRowBitForBit) {
  for (int64_t n : {0, 1, 8, 31, 32, 33, 512, 515}) {
    for (int64_t m : {0, 1, 5, 64}) {
      const int64_t stride = n + 3, as = 3;
      const auto x = randn(static_cast<size_t>(m * stride), 6);
      const auto alpha = randn(static_cast<size_t>(std::max<int64_t>(m * as, 1)), 7);
      auto y = randn(static_cast<size_t>(n), 8), y1 = y, y2 = y;
      axpy_rows_f32(alpha.data(), as, x.data(), stride, m, y.data(), n);
      for (int64_t s = 0; s < m; ++s)
        axpy_f32(alpha[static_cast<size_t>(s * as)], x.data() + s * stride, y1.data(), n);
      axpy_rows_f32_scalar(alpha.data(), as, x.data(), stride, m, y2.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(y[i], y1[i]) << n << " " << m << " " << i;
        ASSERT_EQ(y[i], y2[i]) << n << " " << m << " " << i;
      }
    }
  }
}

// Every binary16 value (normals, subnormals, ±0, ±inf) converts as the scalar codec does, bit
// for bit; NaNs stay NaNs (F16C quiets the signalling ones, the codec keeps their payload).
TEST(AttnKernels, F16RowEqualsTheScalarCodecForEveryValue) {
  std::vector<uint16_t> h(65536 + 5);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> y(h.size()), y2(h.size());
  f16_to_f32_row(h.data(), y.data(), static_cast<int64_t>(h.size()));
  f16_to_f32_row_scalar(h.data(), y2.data(), static_cast<int64_t>(h.size()));
  for (size_t i = 0; i < h.size(); ++i) {
    if (std::isnan(y2[i])) {
      ASSERT_TRUE(std::isnan(y[i])) << i;
      continue;
    }
    ASSERT_EQ(std::memcmp(&y[i], &y2[i], sizeof(float)), 0) << i;
  }
  EXPECT_EQ(y[0x3C00], 1.0f);
  EXPECT_EQ(y[0xC000], -2.0f);
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
