// quantize_rows against the reference cases of tests/data/formats/quant-vectors.json (bytes from
// ggml_quantize_chunk) for the non-grid types. Every case of these types must be byte-identical;
// the grid types' cases are covered by tests/quant.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "quant/codec.h"
#include "quant/vector_data.h"

namespace {

using k3::quant::Type;

const std::set<std::string>& our_types() {
  static const std::set<std::string> s = {"Q8_0", "MXFP4", "Q4_0",   "Q2_K",  "Q3_K",
                                          "Q4_K", "Q6_K",  "IQ4_NL", "IQ4_XS"};
  return s;
}

double relative_rmse(Type t, const std::vector<uint8_t>& bytes, const std::vector<float>& x) {
  std::vector<float> y(x.size());
  k3::quant::dequantize_row(t, bytes.data(), y.data(), int64_t(x.size()));
  double err = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
    ref += double(x[i]) * x[i];
  }
  return std::sqrt(err / ref);
}

class QuantVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantVectors, ByteIdentical) {
  const auto& c = k3::test::formats_json("quant-vectors.json").at(GetParam());
  const auto type = k3::quant::type_from_name(c.at("type").get<std::string>());
  ASSERT_TRUE(type.has_value());
  ASSERT_EQ(uint32_t(*type), c.at("type_id").get<uint32_t>());
  const int64_t nrows = c.at("nrows").get<int64_t>();
  const int64_t n_per_row = c.at("n_per_row").get<int64_t>();
  const auto x = k3::test::floats(c.at("x"));
  ASSERT_EQ(int64_t(x.size()), nrows * n_per_row);
  std::vector<float> imatrix;
  if (!c.at("imatrix").is_null()) imatrix = k3::test::floats(c.at("imatrix"));
  const auto expected = k3::test::from_hex(c.at("expected_hex").get<std::string>());

  std::vector<uint8_t> got(k3::quant::row_bytes(*type, n_per_row) * size_t(nrows), 0xCD);
  const size_t written = k3::quant::quantize_rows(*type, x.data(), got.data(), nrows, n_per_row,
                                                  imatrix.empty() ? nullptr : imatrix.data());
  ASSERT_EQ(written, expected.size());

  // The recorded error is a property of the reference bytes; ours must not be worse.
  const double recorded = c.at("relative_rmse").get<double>();
  const double ref_err = relative_rmse(*type, expected, x);
  EXPECT_NEAR(ref_err, recorded, 1e-4) << "relative RMSE definition check";
  const double our_err = relative_rmse(*type, got, x);
  EXPECT_LE(our_err, recorded * 1.01);

  const size_t block = k3::quant::type_info(*type).block_bytes;
  size_t first_diff = expected.size(), ndiff = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (got[i] != expected[i]) {
      if (first_diff == expected.size()) first_diff = i;
      ++ndiff;
    }
  }
  EXPECT_EQ(ndiff, 0u) << GetParam() << ": " << ndiff << " bytes differ, first at byte " << first_diff
                       << " (block " << first_diff / block << ", offset " << first_diff % block
                       << "); relative RMSE ours " << our_err << " vs reference " << recorded;
}

std::vector<std::string> our_cases() {
  std::vector<std::string> names;
  for (const auto& [k, v] : k3::test::formats_json("quant-vectors.json").items()) {
    if (k == "_about") continue;
    if (our_types().count(v.at("type").get<std::string>())) names.push_back(k);
  }
  return names;
}

INSTANTIATE_TEST_SUITE_P(Reference, QuantVectors, ::testing::ValuesIn(our_cases()),
                         [](const auto& info) { return info.param; });

TEST(QuantVectorsCoverage, EveryNonGridTypeHasCases) {
  std::set<std::string> seen;
  for (const auto& name : our_cases())
    seen.insert(k3::test::formats_json("quant-vectors.json").at(name).at("type").get<std::string>());
  EXPECT_EQ(seen, our_types());
  EXPECT_EQ(our_cases().size(), 16u);
}

}  // namespace
