// dequantize_row against every block of tests/data/formats/dequant-vectors.json (23 block types,
// outputs from gguf-py's decoders, identical to ggml's): compared as float bit patterns.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "quant/codec.h"
#include "quant/vector_data.h"

namespace {

using k3::quant::Type;

class DequantVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(DequantVectors, BitExact) {
  const auto& c = k3::test::formats_json("dequant-vectors.json").at(GetParam());
  const auto type = k3::quant::type_from_name(GetParam());
  ASSERT_TRUE(type.has_value());
  ASSERT_EQ(uint32_t(*type), c.at("type_id").get<uint32_t>());
  const auto& info = k3::quant::type_info(*type);
  ASSERT_EQ(info.block_elems, c.at("block_elems").get<int64_t>());
  ASSERT_EQ(info.block_bytes, c.at("block_bytes").get<size_t>());
  const auto& blocks = c.at("block_bytes_hex");
  const auto& outs = c.at("dequantized");
  ASSERT_EQ(blocks.size(), outs.size());
  ASSERT_FALSE(blocks.empty());
  std::vector<uint8_t> row;
  std::vector<float> want;
  for (size_t b = 0; b < blocks.size(); ++b) {
    const auto bytes = k3::test::from_hex(blocks[b].get<std::string>());
    ASSERT_EQ(bytes.size(), info.block_bytes);
    row.insert(row.end(), bytes.begin(), bytes.end());
    const auto y = k3::test::floats(outs[b]);
    ASSERT_EQ(int64_t(y.size()), info.block_elems);
    want.insert(want.end(), y.begin(), y.end());
  }
  // Whole row at once: exercises the multi-block stride as well as each block.
  std::vector<float> got(want.size(), -12345.f);
  k3::quant::dequantize_row(*type, row.data(), got.data(), int64_t(got.size()));
  int mismatches = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i]) && ++mismatches <= 5) {
      ADD_FAILURE() << GetParam() << " block " << i / info.block_elems << " elem " << i % info.block_elems
                    << ": got " << got[i] << " want " << want[i];
    }
  }
  EXPECT_EQ(mismatches, 0);
}

std::vector<std::string> all_types() {
  std::vector<std::string> names;
  for (const auto& [k, v] : k3::test::formats_json("dequant-vectors.json").items()) names.push_back(k);
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, DequantVectors, ::testing::ValuesIn(all_types()),
                         [](const auto& info) { return info.param; });

TEST(DequantVectorsCoverage, HasAllTwentyThreeBlockTypes) { EXPECT_EQ(all_types().size(), 23u); }

TEST(DequantScalars, ConvertNumbers) {
  float out[3];
  const uint16_t f16[3] = {0x3c00, 0xc000, 0x7bff};
  k3::quant::dequantize_row(Type::F16, f16, out, 3);
  EXPECT_EQ(out[0], 1.f);
  EXPECT_EQ(out[1], -2.f);
  EXPECT_EQ(out[2], 65504.f);
  const uint16_t bf[2] = {0x3f80, 0xc0a0};
  k3::quant::dequantize_row(Type::BF16, bf, out, 2);
  EXPECT_EQ(out[0], 1.f);
  EXPECT_EQ(out[1], -5.f);
  const double f64[2] = {0.1, -3.0};
  k3::quant::dequantize_row(Type::F64, f64, out, 2);
  EXPECT_EQ(out[0], 0.1f);
  EXPECT_EQ(out[1], -3.f);
  const int8_t i8[3] = {-128, 0, 127};
  k3::quant::dequantize_row(Type::I8, i8, out, 3);
  EXPECT_EQ(out[0], -128.f);
  EXPECT_EQ(out[2], 127.f);
  const int16_t i16[2] = {-32768, 1234};
  k3::quant::dequantize_row(Type::I16, i16, out, 2);
  EXPECT_EQ(out[0], -32768.f);
  EXPECT_EQ(out[1], 1234.f);
  const int32_t i32[2] = {-7, 1 << 24};
  k3::quant::dequantize_row(Type::I32, i32, out, 2);
  EXPECT_EQ(out[0], -7.f);
  EXPECT_EQ(out[1], 16777216.f);
  const float f32[2] = {1.5f, -0.f};
  k3::quant::dequantize_row(Type::F32, f32, out, 2);
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_TRUE(std::signbit(out[1]));
}

TEST(DequantErrors, RejectsTypesWithoutDecoder) {
  float out[256];
  uint8_t buf[292] = {};
  EXPECT_THROW(k3::quant::dequantize_row(Type::Q8_K, buf, out, 256), k3::Error);
  EXPECT_FALSE(k3::quant::can_dequantize(Type::Q8_1));
  EXPECT_TRUE(k3::quant::can_dequantize(Type::IQ1_M));
}

// Hand-worked blocks of MXFP4 and IQ2_XXS, independent of the vector file.
TEST(DequantWorkedExamples, Mxfp4) {
  uint8_t b[17] = {0x7e, 0x9a, 0x7f, 0x01, 0x80};
  float y[32];
  k3::quant::dequantize_row(Type::MXFP4, b, y, 32);
  EXPECT_EQ(y[0], -0.5f);
  EXPECT_EQ(y[16], -0.25f);
  EXPECT_EQ(y[1], -3.0f);
  EXPECT_EQ(y[17], 3.0f);
  EXPECT_EQ(y[2], 0.25f);
  EXPECT_EQ(y[18], 0.f);
  EXPECT_FALSE(std::signbit(y[3]));
}

TEST(DequantWorkedExamples, Iq2xxs) {
  uint8_t b[66] = {0x66, 0x2e, 0x00, 0x05, 0xff, 0x1a, 0x81, 0xc1, 0x1f, 0x90};
  float y[256];
  k3::quant::dequantize_row(Type::IQ2_XXS, b, y, 256);
  const float db = 0.0999755859375f * 9.5f * 0.25f;
  EXPECT_EQ(y[0], -db * 8);
  EXPECT_EQ(y[1], db * 8);
  EXPECT_EQ(y[7], -db * 8);
  EXPECT_EQ(y[8], -db * 25);
  EXPECT_EQ(y[16 + 5], -db * 43);
  EXPECT_EQ(y[24 + 3], db * 43);
}

}  // namespace
