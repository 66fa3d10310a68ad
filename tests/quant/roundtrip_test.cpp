// Round trips through quantize_rows → dequantize_row on seeded random data: the relative RMSE
// of every non-grid quantizable type must stay under a per-type bound (~15-20% above what these
// byte-exact quantizers reach on the seeded Gaussian rows, see docs/quant-formats.md), with and
// without an importance matrix; plus degenerate rows and the error contract of quantize_rows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "quant/codec.h"

namespace {

using k3::quant::Type;

struct Bound {
  Type type;
  double max_rel_rmse;
};

// Gaussian rows, 4 × 1024.
const Bound kBounds[] = {
    {Type::F32, 0.0},    {Type::F16, 2.4e-4},  {Type::BF16, 2.0e-3},  {Type::Q8_0, 0.0065},
    {Type::Q4_0, 0.102}, {Type::Q5_0, 0.051},  {Type::Q5_1, 0.044},   {Type::MXFP4, 0.13},
    {Type::Q2_K, 0.35},  {Type::Q3_K, 0.18},   {Type::Q4_K, 0.083},   {Type::Q5_K, 0.042},
    {Type::Q6_K, 0.021}, {Type::IQ4_NL, 0.09}, {Type::IQ4_XS, 0.091},
};

constexpr int64_t kRows = 4, kCols = 1024;

std::vector<float> gaussian(uint32_t seed, size_t n, float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, sigma);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

double round_trip_rmse(Type t, const std::vector<float>& x, const float* imatrix,
                       std::vector<float>* out = nullptr) {
  std::vector<uint8_t> q(k3::quant::row_bytes(t, kCols) * kRows);
  EXPECT_EQ(k3::quant::quantize_rows(t, x.data(), q.data(), kRows, kCols, imatrix), q.size());
  std::vector<float> y(x.size());
  const size_t rb = k3::quant::row_bytes(t, kCols);
  for (int64_t r = 0; r < kRows; ++r)
    k3::quant::dequantize_row(t, q.data() + r * rb, y.data() + r * kCols, kCols);
  double err = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
    ref += double(x[i]) * x[i];
  }
  if (out) *out = y;
  return ref > 0 ? std::sqrt(err / ref) : std::sqrt(err);
}

class RoundTrip : public ::testing::TestWithParam<Bound> {};

TEST_P(RoundTrip, RelativeRmseWithinBound) {
  const Bound b = GetParam();
  const auto x = gaussian(42, kRows * kCols, 0.02f);
  const double e = round_trip_rmse(b.type, x, nullptr);
  EXPECT_LE(e, b.max_rel_rmse) << k3::quant::type_name(b.type);
  std::printf("%-7s relative RMSE %.5f (bound %.5f)\n", k3::quant::type_name(b.type), e, b.max_rel_rmse);
  // The bounds are tight enough to catch a quantizer that degrades to a cruder search.
  if (b.max_rel_rmse > 0) {
    EXPECT_GT(e, b.max_rel_rmse * 0.5) << "bound is stale for " << k3::quant::type_name(b.type);
  }
}

TEST_P(RoundTrip, ImatrixReducesWeightedError) {
  const Bound b = GetParam();
  if (b.max_rel_rmse == 0) GTEST_SKIP() << "lossless";
  const auto x = gaussian(7, kRows * kCols, 1.0f);
  // Strongly skewed importances: the first 1/8 of columns matter 100× more.
  std::vector<float> imatrix(kCols);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  for (int64_t c = 0; c < kCols; ++c) imatrix[c] = u(rng) * (c % 8 == 0 ? 100.f : 1.f);
  auto weighted = [&](const float* im) {
    std::vector<float> y;
    const double plain = round_trip_rmse(b.type, x, im, &y);
    double werr = 0, wref = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double w = imatrix[i % kCols];
      werr += w * (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
      wref += w * double(x[i]) * x[i];
    }
    EXPECT_LE(plain, b.max_rel_rmse * 2.5) << k3::quant::type_name(b.type);
    return std::sqrt(werr / wref);
  };
  const double without = weighted(nullptr);
  const double with = weighted(imatrix.data());
  // Types that ignore the imatrix (Q8_0, MXFP4, float types) give identical results.
  if (b.type == Type::Q8_0 || b.type == Type::MXFP4 || b.type == Type::F16 || b.type == Type::BF16) {
    EXPECT_EQ(with, without);
  } else {
    EXPECT_LT(with, without) << k3::quant::type_name(b.type);
  }
}

TEST_P(RoundTrip, ZeroRowsStayZero) {
  const Bound b = GetParam();
  const std::vector<float> x(kRows * kCols, 0.f);
  std::vector<float> y;
  round_trip_rmse(b.type, x, nullptr, &y);
  for (float v : y) ASSERT_EQ(v, 0.f) << k3::quant::type_name(b.type);
}

TEST_P(RoundTrip, OutlierIsKept) {
  const Bound b = GetParam();
  auto x = gaussian(5, kRows * kCols, 0.01f);
  x[777] = 3.0f;
  std::vector<float> y;
  round_trip_rmse(b.type, x, nullptr, &y);
  EXPECT_NEAR(y[777], 3.0f, 0.35f) << k3::quant::type_name(b.type);
}

INSTANTIATE_TEST_SUITE_P(Types, RoundTrip, ::testing::ValuesIn(kBounds),
                         [](const auto& info) { return std::string(k3::quant::type_name(info.param.type)); });

TEST(QuantizeErrors, ImatrixRequiredTypesThrowWithoutOne) {
  const std::vector<float> x(256, 1.f);
  std::vector<uint8_t> out(256);
  for (Type t : {Type::IQ2_XXS, Type::IQ2_XS, Type::IQ2_S, Type::IQ1_S, Type::IQ1_M}) {
    EXPECT_TRUE(k3::quant::requires_imatrix(t));
    try {
      k3::quant::quantize_rows(t, x.data(), out.data(), 1, 256, nullptr);
      ADD_FAILURE() << "no error for " << k3::quant::type_name(t);
    } catch (const k3::Error& e) {
      EXPECT_NE(std::string(e.what()).find("importance matrix"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(k3::quant::type_name(t)), std::string::npos) << e.what();
    }
  }
  for (Type t : {Type::Q2_K, Type::Q4_K, Type::IQ3_XXS, Type::IQ3_S, Type::IQ4_XS, Type::Q8_0})
    EXPECT_FALSE(k3::quant::requires_imatrix(t)) << k3::quant::type_name(t);
}

TEST(QuantizeErrors, UnsupportedTypesThrow) {
  const std::vector<float> x(256, 1.f);
  std::vector<uint8_t> out(1024);
  for (Type t : {Type::Q8_1, Type::Q8_K, Type::Q4_1, Type::TQ1_0, Type::TQ2_0, Type::NVFP4, Type::I8,
                 Type::I32, Type::F64}) {
    EXPECT_FALSE(k3::quant::can_quantize(t)) << k3::quant::type_name(t);
    EXPECT_THROW(k3::quant::quantize_rows(t, x.data(), out.data(), 1, 256, nullptr), k3::Error)
        << k3::quant::type_name(t);
  }
  for (const Bound& b : kBounds) EXPECT_TRUE(k3::quant::can_quantize(b.type));
}

TEST(QuantizeErrors, NonFiniteInputIsNamed) {
  std::vector<float> x(512, 0.5f);
  x[256 + 3] = std::nanf("");
  std::vector<uint8_t> out(2048);
  try {
    k3::quant::quantize_rows(Type::Q4_K, x.data(), out.data(), 2, 256, nullptr);
    ADD_FAILURE() << "NaN accepted";
  } catch (const k3::Error& e) {
    EXPECT_NE(std::string(e.what()).find("row 1, column 3"), std::string::npos) << e.what();
  }
  x[256 + 3] = INFINITY;
  EXPECT_THROW(k3::quant::quantize_rows(Type::MXFP4, x.data(), out.data(), 2, 256, nullptr), k3::Error);
  // Plain float encodings carry non-finite values through.
  EXPECT_NO_THROW(k3::quant::quantize_rows(Type::F16, x.data(), out.data(), 2, 256, nullptr));
}

TEST(QuantizeErrors, RowLengthMustBeWholeBlocks) {
  const std::vector<float> x(300, 1.f);
  std::vector<uint8_t> out(1024);
  EXPECT_THROW(k3::quant::quantize_rows(Type::Q4_K, x.data(), out.data(), 1, 300, nullptr), k3::Error);
  EXPECT_THROW(k3::quant::quantize_rows(Type::Q8_0, x.data(), out.data(), 1, 33, nullptr), k3::Error);
}

}  // namespace
