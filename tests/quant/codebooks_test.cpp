// Checks the generated src/quant/codebooks.cpp against tests/data/formats/codebooks.json entry by
// entry (so a stale or hand-edited table fails), plus the structural facts the decoders rely on.
#include "quant/codebooks.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>

#include "quant/vector_data.h"

namespace {

template <typename T, size_t N>
void expect_table(const char* name, const T (&table)[N]) {
  const auto& entry = k3::test::formats_json("codebooks.json").at(name);
  const auto& values = entry.at("values");
  ASSERT_EQ(values.size(), N) << name;
  for (size_t i = 0; i < N; ++i) {
    if constexpr (std::is_same_v<T, uint64_t>) {
      ASSERT_EQ(table[i], values[i].get<uint64_t>()) << name << "[" << i << "]";
    } else {
      ASSERT_EQ(int64_t(table[i]), values[i].get<int64_t>()) << name << "[" << i << "]";
    }
  }
}

TEST(Codebooks, MatchJsonEntryByEntry) {
  using namespace k3::quant;
  expect_table("kmask_iq2xs", kKmaskIq2xs);
  expect_table("ksigns_iq2xs", kKsignsIq2xs);
  expect_table("ksigns64", kKsigns64);
  expect_table("iq2xxs_grid", kIq2xxsGrid);
  expect_table("iq2xs_grid", kIq2xsGrid);
  expect_table("iq2s_grid", kIq2sGrid);
  expect_table("iq3xxs_grid", kIq3xxsGrid);
  expect_table("iq3s_grid", kIq3sGrid);
  expect_table("iq1s_grid", kIq1sGrid);
  expect_table("iq1s_grid_gpu", kIq1sGridGpu);
  expect_table("kvalues_iq4nl", kValuesIq4nl);
  expect_table("kvalues_fp4", kValuesFp4);
  expect_table("kvalues_mxfp4", kValuesMxfp4);
  expect_table("mxfp4_e2m1_values_x2", kMxfp4E2m1ValuesX2);
  expect_table("tq1_0_pow3", kTq1Pow3);
  expect_table("kgrid_2bit_256", kGrid2bit256);
  expect_table("kgrid_2bit_512", kGrid2bit512);
  expect_table("kgrid_2bit_1024", kGrid2bit1024);
  expect_table("kgrid_1bit_2048", kGrid1bit2048);
  expect_table("kgrid_256", kGrid3bit256);
  expect_table("kgrid_512", kGrid3bit512);
  const auto& doc = k3::test::formats_json("codebooks.json");
  EXPECT_EQ(kIq1sDelta, doc.at("IQ1S_DELTA").at("values")[0].get<float>());
  EXPECT_EQ(kIq1mDelta, doc.at("IQ1M_DELTA").at("values")[0].get<float>());
}

TEST(Codebooks, SignTableHasEvenParity) {
  for (int s = 0; s < 128; ++s) {
    EXPECT_EQ(k3::quant::kKsignsIq2xs[s] & 127, s);
    EXPECT_EQ(std::popcount(unsigned(k3::quant::kKsignsIq2xs[s])) % 2, 0) << s;
  }
}

TEST(Codebooks, CompactGridsEncodeTheGrids) {
  using namespace k3::quant;
  auto level2 = [](int byte) { return byte == 8 ? 0 : byte == 25 ? 1 : byte == 43 ? 2 : -1; };
  for (int i = 0; i < 256; ++i) {
    int key = 0;
    for (int j = 0; j < 8; ++j) key |= level2(int((kIq2xxsGrid[i] >> (8 * j)) & 0xFF)) << (2 * j);
    EXPECT_EQ(key, kGrid2bit256[i]) << i;
  }
  for (int i = 0; i < 2048; ++i) {
    int key = 0;
    for (int j = 0; j < 8; ++j) key |= (int(int8_t((kIq1sGrid[i] >> (8 * j)) & 0xFF)) + 1) << (2 * j);
    EXPECT_EQ(key, kGrid1bit2048[i]) << i;
  }
}

}  // namespace
