// f16/bf16 conversions: exhaustive decode/encode round trip over all 65536 half patterns, and
// encoding of random and edge-case floats checked against the F16C hardware conversion (RNE)
// where the build has it (K3_SIMD_X86); the portable build checks the decode against the
// binary16 definition instead.
#include <gtest/gtest.h>
#if defined(K3_SIMD_X86)
#include <immintrin.h>
#endif

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "quant/codec.h"

namespace {

using k3::quant::bf16_to_fp32;
using k3::quant::fp16_to_fp32;
using k3::quant::fp32_to_bf16;
using k3::quant::fp32_to_fp16;

#if defined(K3_SIMD_X86)
uint16_t hw_fp16(float f) { return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT)); }
float hw_fp32(uint16_t h) { return _cvtsh_ss(h); }
#else
// The binary16 value by its definition: (−1)^s · 2^(e−15) · (1 + m/1024), 2^−14 · m/1024 for
// e = 0, ±Inf or NaN for e = 31 (the test checks NaN payloads itself).
float hw_fp32(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 31 && m != 0) return std::numeric_limits<float>::quiet_NaN();
  const float mag = e == 31  ? std::numeric_limits<float>::infinity()
                    : e == 0 ? std::ldexp(float(m), -24)
                             : std::ldexp(float(1024 + m), e - 25);
  return (h & 0x8000) ? -mag : mag;
}
#endif

TEST(Fp16, DecodeMatchesHardwareForEveryPattern) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float ours = fp16_to_fp32(uint16_t(h));
    const float hw = hw_fp32(uint16_t(h));
    if (std::isnan(hw)) {
      ASSERT_TRUE(std::isnan(ours)) << h;
      // Sign and payload survive decoding unchanged (no forced quiet bit).
      const uint32_t want = ((h & 0x8000u) << 16) | 0x7f800000u | ((h & 0x3ffu) << 13);
      ASSERT_EQ(std::bit_cast<uint32_t>(ours), want) << h;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(ours), std::bit_cast<uint32_t>(hw)) << h;
      ASSERT_EQ(fp32_to_fp16(ours), h) << "round trip of " << h;
    }
  }
}

// Round to nearest even from the definition: the midpoint of every two adjacent finite halves
// goes to the even one, one float ulp either side of it to the nearer one (both signs).
TEST(Fp16, EncodeRoundsToNearestEvenAtEveryMidpoint) {
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float lo = fp16_to_fp32(uint16_t(h));
    const float hi = h + 1 == 0x7c00 ? 65536.f : fp16_to_fp32(uint16_t(h + 1));
    const float mid = (lo + hi) / 2;
    for (const uint16_t sign : {uint16_t(0), uint16_t(0x8000)}) {
      const float s = sign ? -1.f : 1.f;
      ASSERT_EQ(fp32_to_fp16(s * mid), sign | ((h & 1) ? h + 1 : h)) << h;
      ASSERT_EQ(fp32_to_fp16(s * std::nextafter(mid, 0.f)), sign | h) << h;
      ASSERT_EQ(fp32_to_fp16(s * std::nextafter(mid, 1e9f)), sign | (h + 1)) << h;
    }
  }
}

#if defined(K3_SIMD_X86)
TEST(Fp16, EncodeMatchesHardwareRoundToNearestEven) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 2000000; ++i) {
    uint32_t b = bits(rng);
    // Bias half of the samples into the f16 range (exponents 100..145) where rounding is subtle.
    if (i & 1) b = (b & 0x807fffffu) | ((100u + (b >> 8) % 46) << 23);
    const float f = std::bit_cast<float>(b);
    if (std::isnan(f)) continue;
    ASSERT_EQ(fp32_to_fp16(f), hw_fp16(f)) << std::hex << b;
  }
  for (float f : {0.f, -0.f, 65504.f, 65519.99f, 65520.f, -65520.f, 1e-8f, 2.9802322e-08f, 2.9802326e-08f,
                  5.9604645e-08f, 6.1035156e-05f, 6.1035152e-05f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min()}) {
    EXPECT_EQ(fp32_to_fp16(f), hw_fp16(f)) << f;
  }
}

#endif

TEST(Fp16, NanBecomesCanonicalQuietWithSign) {
  EXPECT_EQ(fp32_to_fp16(std::bit_cast<float>(0x7f800001u)), 0x7e00);
  EXPECT_EQ(fp32_to_fp16(std::bit_cast<float>(0xffc00000u)), 0xfe00);
}

TEST(Bf16, RoundsToNearestEvenAndKeepsNanQuiet) {
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie → even
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie → even (up)
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x7f800001u)), 0x7fc0);  // signalling → quiet
  EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x7f7fffffu)), 0x7f80);  // overflow → inf
  EXPECT_EQ(bf16_to_fp32(0xc0a0), -5.0f);
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_fp32(uint16_t(h));
    if (!std::isnan(f)) { ASSERT_EQ(fp32_to_bf16(f), h); }
  }
}

}  // namespace
