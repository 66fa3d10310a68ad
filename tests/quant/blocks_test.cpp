// quant/blocks.h: the block structs against the runtime type table and the byte offsets the
// format fixes (ggml-common.h), the shared field decoders against independent formulations, and
// the decoders' independence from the alignment of the row they read.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "quant/blocks.h"
#include "quant/codec.h"
#include "quant/types.h"

namespace k3::quant {
namespace {

TEST(Blocks, SizesMatchTheRuntimeTypeTable) {
  struct Entry {
    Type type;
    size_t size;
  };
  const Entry entries[] = {
      {Type::Q4_0, sizeof(blk::Q4_0)},       {Type::Q4_1, sizeof(blk::Q4_1)},
      {Type::Q5_0, sizeof(blk::Q5_0)},       {Type::Q5_1, sizeof(blk::Q5_1)},
      {Type::Q8_0, sizeof(blk::Q8_0)},       {Type::IQ4_NL, sizeof(blk::IQ4_NL)},
      {Type::MXFP4, sizeof(blk::MXFP4)},     {Type::NVFP4, sizeof(blk::NVFP4)},
      {Type::Q1_0, sizeof(blk::Q1_0)},       {Type::Q2_0, sizeof(blk::Q2_0)},
      {Type::Q2_K, sizeof(blk::Q2_K)},       {Type::Q3_K, sizeof(blk::Q3_K)},
      {Type::Q4_K, sizeof(blk::Q4_K)},       {Type::Q5_K, sizeof(blk::Q5_K)},
      {Type::Q6_K, sizeof(blk::Q6_K)},       {Type::IQ2_XXS, sizeof(blk::IQ2_XXS)},
      {Type::IQ2_XS, sizeof(blk::IQ2_XS)},   {Type::IQ2_S, sizeof(blk::IQ2_S)},
      {Type::IQ3_XXS, sizeof(blk::IQ3_XXS)}, {Type::IQ3_S, sizeof(blk::IQ3_S)},
      {Type::IQ1_S, sizeof(blk::IQ1_S)},     {Type::IQ1_M, sizeof(blk::IQ1_M)},
      {Type::IQ4_XS, sizeof(blk::IQ4_XS)},   {Type::TQ1_0, sizeof(blk::TQ1_0)},
      {Type::TQ2_0, sizeof(blk::TQ2_0)},
  };
  int decodable_block_types = 0;
  for (const Entry& e : entries) {
    EXPECT_EQ(e.size, type_info(e.type).block_bytes) << type_name(e.type);
    EXPECT_EQ(e.size, block_bytes(e.type)) << type_name(e.type);
    decodable_block_types += can_dequantize(e.type) ? 1 : 0;
  }
  // Every block type with a decoder has its struct here.
  int table_block_types = 0;
  for (uint32_t id = 0; id < 64; ++id) {
    const TypeInfo* info = type_info(id);
    if (info && info->quantized && can_dequantize(info->type)) ++table_block_types;
  }
  EXPECT_EQ(decodable_block_types, table_block_types);
}

// The field offsets of ggml-common.h (the offsets the codecs used to spell out by hand).
TEST(Blocks, FieldOffsetsAreGgmls) {
  EXPECT_EQ(offsetof(blk::Q4_1, qs), 4u);
  EXPECT_EQ(offsetof(blk::Q5_0, qh), 2u);
  EXPECT_EQ(offsetof(blk::Q5_0, qs), 6u);
  EXPECT_EQ(offsetof(blk::Q5_1, qh), 4u);
  EXPECT_EQ(offsetof(blk::Q5_1, qs), 8u);
  EXPECT_EQ(offsetof(blk::Q8_0, qs), 2u);
  EXPECT_EQ(offsetof(blk::MXFP4, qs), 1u);
  EXPECT_EQ(offsetof(blk::NVFP4, qs), 4u);
  EXPECT_EQ(offsetof(blk::Q2_K, qs), 16u);
  EXPECT_EQ(offsetof(blk::Q2_K, d), 80u);
  EXPECT_EQ(offsetof(blk::Q2_K, dmin), 82u);
  EXPECT_EQ(offsetof(blk::Q3_K, qs), 32u);
  EXPECT_EQ(offsetof(blk::Q3_K, scales), 96u);
  EXPECT_EQ(offsetof(blk::Q3_K, d), 108u);
  EXPECT_EQ(offsetof(blk::Q4_K, scales), 4u);
  EXPECT_EQ(offsetof(blk::Q4_K, qs), 16u);
  EXPECT_EQ(offsetof(blk::Q5_K, qh), 16u);
  EXPECT_EQ(offsetof(blk::Q5_K, qs), 48u);
  EXPECT_EQ(offsetof(blk::Q6_K, qh), 128u);
  EXPECT_EQ(offsetof(blk::Q6_K, scales), 192u);
  EXPECT_EQ(offsetof(blk::Q6_K, d), 208u);
  EXPECT_EQ(offsetof(blk::IQ2_XS, scales), 66u);
  EXPECT_EQ(offsetof(blk::IQ2_S, qh), 66u);
  EXPECT_EQ(offsetof(blk::IQ2_S, scales), 74u);
  EXPECT_EQ(offsetof(blk::IQ3_S, qh), 66u);
  EXPECT_EQ(offsetof(blk::IQ3_S, signs), 74u);
  EXPECT_EQ(offsetof(blk::IQ3_S, scales), 106u);
  EXPECT_EQ(offsetof(blk::IQ1_S, qh), 34u);
  EXPECT_EQ(offsetof(blk::IQ1_M, qh), 32u);
  EXPECT_EQ(offsetof(blk::IQ1_M, scales), 48u);
  EXPECT_EQ(offsetof(blk::IQ4_XS, scales_h), 2u);
  EXPECT_EQ(offsetof(blk::IQ4_XS, scales_l), 4u);
  EXPECT_EQ(offsetof(blk::IQ4_XS, qs), 8u);
  EXPECT_EQ(offsetof(blk::TQ1_0, qh), 48u);
  EXPECT_EQ(offsetof(blk::TQ1_0, d), 52u);
  EXPECT_EQ(offsetof(blk::TQ2_0, d), 64u);
}

TEST(Blocks, UnalignedLittleEndianLoadsAndStores) {
  const uint8_t bytes[] = {0xAA, 0x01, 0x02, 0x03, 0x04, 0x05};
  EXPECT_EQ(blk::load_u16(bytes + 1), 0x0201);
  EXPECT_EQ(blk::load_u32(bytes + 1), 0x04030201u);
  EXPECT_EQ(blk::load_u32(bytes + 2), 0x05040302u);
  uint8_t out[7] = {};
  blk::store_u32(out + 1, 0x0A0B0C0Du);
  blk::store_u16(out + 5, 0x1234);
  const uint8_t want[7] = {0, 0x0D, 0x0C, 0x0B, 0x0A, 0x34, 0x12};
  EXPECT_EQ(std::memcmp(out, want, 7), 0);
  // A block copied in and out at an odd address keeps its bytes.
  std::vector<uint8_t> row(1 + 2 * sizeof(blk::Q6_K));
  for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<uint8_t>(i * 7 + 3);
  const auto b = blk::load_block<blk::Q6_K>(row.data() + 1, 1);
  EXPECT_EQ(b.d, blk::load_u16(row.data() + 1 + sizeof(blk::Q6_K) + 208));
  std::vector<uint8_t> copy(row.size(), 0);
  blk::store_block(copy.data() + 1, 1, b);
  EXPECT_EQ(std::memcmp(copy.data() + 1 + sizeof(blk::Q6_K), row.data() + 1 + sizeof(blk::Q6_K), sizeof b),
            0);
}

TEST(Blocks, E8m0HalfIsTwoToTheEMinus128) {
  for (int e = 0; e < 256; ++e) {
    const float want = std::ldexp(1.0f, e - 128);
    ASSERT_EQ(std::bit_cast<uint32_t>(blk::e8m0_half(static_cast<uint8_t>(e))), std::bit_cast<uint32_t>(want))
        << e;
  }
  static_assert(blk::e8m0_half(128) == 1.0f && blk::e8m0_half(130) == 4.0f);
}

// Writes six-bit scale/min pairs with ggml's Q4_K packing, spelled bit by bit from the layout:
// j < 4: scale in bits 0..5 of byte j, min in bits 0..5 of byte j+4; j >= 4: low four bits in
// byte j+4 (scale low nibble, min high nibble), top two bits in bits 6..7 of bytes j−4 (scale)
// and j (min).
void pack_q4k(const int* sc, const int* m, uint8_t* s) {
  std::memset(s, 0, 12);
  for (int j = 0; j < 8; ++j) {
    for (int bit = 0; bit < 6; ++bit) {
      const int sb = (sc[j] >> bit) & 1, mb = (m[j] >> bit) & 1;
      if (j < 4) {
        s[j] |= static_cast<uint8_t>(sb << bit);
        s[j + 4] |= static_cast<uint8_t>(mb << bit);
      } else if (bit < 4) {
        s[j + 4] |= static_cast<uint8_t>(sb << bit | mb << (bit + 4));
      } else {
        s[j - 4] |= static_cast<uint8_t>(sb << (bit + 2));
        s[j] |= static_cast<uint8_t>(mb << (bit + 2));
      }
    }
  }
}

TEST(Blocks, Q4kScaleMinUnpacksTheSixBitPairs) {
  std::mt19937 rng(4);
  for (int trial = 0; trial < 2000; ++trial) {
    int sc[8], m[8];
    for (int j = 0; j < 8; ++j) {
      sc[j] = static_cast<int>(rng() % 64);
      m[j] = static_cast<int>(rng() % 64);
    }
    uint8_t s[12];
    pack_q4k(sc, m, s);
    for (int j = 0; j < 8; ++j) {
      int got_sc = -1, got_m = -1;
      blk::q4k_scale_min(s, j, got_sc, got_m);
      ASSERT_EQ(got_sc, sc[j]) << "trial " << trial << " j " << j;
      ASSERT_EQ(got_m, m[j]) << "trial " << trial << " j " << j;
    }
  }
}

TEST(Blocks, Q3kScalesUnpackTheSignedSixBitScales) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 2000; ++trial) {
    int want[16];
    uint8_t s[12] = {};
    for (int j = 0; j < 16; ++j) {
      want[j] = static_cast<int>(rng() % 64) - 32;
      const int l = want[j] + 32;  // stored biased: low nibble, then bits 4..5
      s[j % 8] |= static_cast<uint8_t>((l & 0xF) << (j < 8 ? 0 : 4));
      s[8 + j % 4] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
    }
    int8_t got[16];
    blk::q3k_scales(s, got);
    for (int j = 0; j < 16; ++j) ASSERT_EQ(got[j], want[j]) << "trial " << trial << " j " << j;
  }
}

TEST(Blocks, Iq1mScaleBitsAreTheTopNibbles) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 2000; ++trial) {
    const uint16_t d = static_cast<uint16_t>(rng());
    uint8_t scales[8];
    for (int k = 0; k < 4; ++k) {
      const uint16_t word = static_cast<uint16_t>((rng() & 0x0FFF) | ((d >> (4 * k)) & 0xF) << 12);
      scales[2 * k] = static_cast<uint8_t>(word);
      scales[2 * k + 1] = static_cast<uint8_t>(word >> 8);
    }
    ASSERT_EQ(blk::iq1m_scale_bits(scales), d) << trial;
  }
}

// dequantize_row reads its blocks through copies: a row at an odd address decodes to the same
// bits as the same row aligned.
TEST(Blocks, DecodersAcceptAnyAlignment) {
  std::mt19937 rng(7);
  int checked = 0;
  for (uint32_t id = 0; id < 64; ++id) {
    const TypeInfo* info = type_info(id);
    if (!info || !info->quantized || !can_dequantize(info->type)) continue;
    const int64_t n = 2 * info->block_elems;
    const size_t bytes = row_bytes(info->type, n);
    std::vector<uint8_t> aligned(bytes), odd(bytes + 1);
    for (uint8_t& b : aligned) b = static_cast<uint8_t>(rng());
    std::memcpy(odd.data() + 1, aligned.data(), bytes);
    std::vector<float> a(n), o(n);
    dequantize_row(info->type, aligned.data(), a.data(), n);
    dequantize_row(info->type, odd.data() + 1, o.data(), n);
    EXPECT_EQ(std::memcmp(a.data(), o.data(), n * sizeof(float)), 0) << info->name;
    ++checked;
  }
  EXPECT_EQ(checked, 25);
}

}  // namespace
}  // namespace k3::quant
