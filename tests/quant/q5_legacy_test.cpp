// Q5_0 / Q5_1 quantizers (no ggml quantize vectors exist for them): hand-worked blocks that pin
// ggml's reference rules (scale from the signed absmax / the range, truncating conversion with
// the +16.5 / +0.5 offsets, the qh bit layout), and properties checked on the format's own
// dequantization vectors: requantizing a decoded block reproduces it when its levels span the
// full range, quantization is idempotent through a decode, and the error stays within half a
// step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/codec.h"
#include "quant/vector_data.h"

namespace {

using k3::quant::Type;

std::vector<uint8_t> quant(Type t, const std::vector<float>& x, const float* imatrix = nullptr) {
  std::vector<uint8_t> q(k3::quant::row_bytes(t, int64_t(x.size())));
  k3::quant::quantize_rows(t, x.data(), q.data(), 1, int64_t(x.size()), imatrix);
  return q;
}
std::vector<float> dequant(Type t, const std::vector<uint8_t>& q, int64_t n) {
  std::vector<float> y(size_t(n), 0.f);
  k3::quant::dequantize_row(t, q.data(), y.data(), n);
  return y;
}
std::vector<uint8_t> bytes(std::initializer_list<int> v) {
  std::vector<uint8_t> out;
  for (int b : v) out.push_back(uint8_t(b));
  return out;
}
// qs byte j of a block whose level of element j is j (and of j+16 is j+16).
void append_ramp_qs(std::vector<uint8_t>& b) {
  for (int j = 0; j < 16; ++j) b.push_back(uint8_t(j | (j << 4)));
}

}  // namespace

// x = j - 16: the largest magnitude is x[0] = -16, so d = -16/-16 = 1 and level = trunc(x + 16.5)
// = j. Bytes by hand: d = f16(1) = 0x3C00, qh has the fifth bit of elements 16..31.
TEST(Q5Legacy, Q50HandBlock) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = float(j - 16);
  std::vector<uint8_t> want = bytes({0x00, 0x3C, 0x00, 0x00, 0xFF, 0xFF});
  append_ramp_qs(want);
  EXPECT_EQ(quant(Type::Q5_0, x), want);
  EXPECT_EQ(dequant(Type::Q5_0, want, 32), x);
  // Mirrored: the extreme is +16, so d = -1 (0xBC00) and the same levels.
  for (float& v : x) v = -v;
  want[1] = 0xBC;
  EXPECT_EQ(quant(Type::Q5_0, x), want);
}

// The conversion truncates x/d + 16.5 (not round-to-nearest of x/d): with d = -1 (extreme +16),
// x = ±0.5 gives x/d = ∓0.5 → levels 16 and 17; 15.9 → trunc(0.6) = 0 ... and 0.49 → 16.
TEST(Q5Legacy, Q50TruncatesLikeTheReference) {
  std::vector<float> x(32, 0.f);
  x[0] = 16.f;    // d = 16/-16 = -1
  x[1] = 0.5f;    // -0.5 + 16.5 = 16.0 → 16
  x[2] = -0.5f;   //  0.5 + 16.5 = 17.0 → 17
  x[3] = 0.49f;   // 16.01 → 16
  x[4] = -15.9f;  // 32.4 → 32, capped at 31
  x[17] = 15.6f;  // 0.9 → 0
  const std::vector<uint8_t> q = quant(Type::Q5_0, x);
  auto level = [&](int j) {
    const uint32_t qh = uint32_t(q[2]) | uint32_t(q[3]) << 8 | uint32_t(q[4]) << 16 | uint32_t(q[5]) << 24;
    const int nib = j < 16 ? (q[6 + j] & 15) : (q[6 + j - 16] >> 4);
    return nib | int((qh >> j) & 1) << 4;
  };
  EXPECT_EQ(q[0], 0x00);
  EXPECT_EQ(q[1], 0xBC);
  EXPECT_EQ(level(0), 0);
  EXPECT_EQ(level(1), 16);
  EXPECT_EQ(level(2), 17);
  EXPECT_EQ(level(3), 16);
  EXPECT_EQ(level(4), 31);
  EXPECT_EQ(level(5), 16);  // zeros: trunc(16.5)
  EXPECT_EQ(level(17), 0);
}

// x = 0.5·j + 1: min 1, max 16.5, d = 15.5/31 = 0.5 (0x3800), m = 1 (0x3C00), levels j.
TEST(Q5Legacy, Q51HandBlock) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = 0.5f * float(j) + 1.f;
  std::vector<uint8_t> want = bytes({0x00, 0x38, 0x00, 0x3C, 0x00, 0x00, 0xFF, 0xFF});
  append_ramp_qs(want);
  EXPECT_EQ(quant(Type::Q5_1, x), want);
  EXPECT_EQ(dequant(Type::Q5_1, want, 32), x);
  // (x - min)/d + 0.5 truncates: 0.74 above the min is 1.48 + 0.5 → level 1, 0.76 → 2.
  x[5] = 1.74f;
  x[6] = 1.76f;
  const std::vector<uint8_t> q = quant(Type::Q5_1, x);
  EXPECT_EQ(q[8 + 5] & 15, 1);
  EXPECT_EQ(q[8 + 6] & 15, 2);
}

TEST(Q5Legacy, ConstantAndZeroBlocks) {
  // Q5_0 of zeros: d = 0/-16 = -0 (f16 0x8000, as the reference stores it), every level
  // trunc(16.5) = 16 (qh all ones, nibbles 0).
  std::vector<uint8_t> want = bytes({0x00, 0x80, 0xFF, 0xFF, 0xFF, 0xFF});
  want.resize(22, 0);
  EXPECT_EQ(quant(Type::Q5_0, std::vector<float>(32, 0.f)), want);
  // Q5_1 of a constant: d = 0, m = the constant, levels 0; decodes exactly.
  const std::vector<float> c(32, -2.5f);
  const std::vector<uint8_t> q = quant(Type::Q5_1, c);
  EXPECT_EQ(q, [] {
    std::vector<uint8_t> b = bytes({0, 0, 0x00, 0xC1});  // f16(-2.5) = 0xC100
    b.resize(24, 0);
    return b;
  }());
  EXPECT_EQ(dequant(Type::Q5_1, q, 32), c);
}

// Blocks built from random levels that include both extremes (Q5_1) or level 0 as the unique
// largest magnitude (Q5_0) are fixed points: quant(dequant(b)) == b.
TEST(Q5Legacy, CanonicalBlocksAreFixedPoints) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> lev(1, 31), lev_mid(1, 30), ex(-12, -4), mant(0, 1023);
  for (Type t : {Type::Q5_0, Type::Q5_1}) {
    for (int trial = 0; trial < 500; ++trial) {
      const float d = std::ldexp(1.f + float(mant(rng)) / 1024.f, ex(rng)) * (trial % 2 ? -1.f : 1.f);
      std::vector<uint8_t> b(k3::quant::type_info(t).block_bytes, 0);
      int L[32];
      for (int j = 0; j < 32; ++j) L[j] = t == Type::Q5_0 ? lev(rng) : lev_mid(rng);
      L[trial % 32] = 0;
      if (t == Type::Q5_1) L[(trial + 7) % 32] = 31;
      uint32_t qh = 0;
      for (int j = 0; j < 32; ++j) qh |= uint32_t(L[j] >> 4) << j;
      const int base = t == Type::Q5_0 ? 6 : 8;
      for (int j = 0; j < 16; ++j) b[base + j] = uint8_t((L[j] & 15) | (L[j + 16] & 15) << 4);
      const uint16_t hd = k3::quant::fp32_to_fp16(t == Type::Q5_0 ? d : std::fabs(d));
      b[0] = uint8_t(hd);
      b[1] = uint8_t(hd >> 8);
      if (t == Type::Q5_1) {
        const uint16_t hm = k3::quant::fp32_to_fp16(std::ldexp(float(mant(rng)) - 512.f, -12));
        b[2] = uint8_t(hm);
        b[3] = uint8_t(hm >> 8);
      }
      for (int i = 0; i < 4; ++i) b[base - 4 + i] = uint8_t(qh >> (8 * i));
      const std::vector<float> x = dequant(t, b, 32);
      ASSERT_EQ(quant(t, x), b) << k3::quant::type_name(t) << " trial " << trial;
    }
  }
}

// On the dequantization vectors' blocks (random bytes, so levels need not span the range):
// quantizing their values, decoding and quantizing again gives the same bytes, and every value
// is within half a step (plus f16 rounding of the scale) of the input.
TEST(Q5Legacy, VectorBlocksIdempotentAndWithinHalfAStep) {
  for (const char* name : {"Q5_0", "Q5_1"}) {
    const Type t = name[3] == '0' ? Type::Q5_0 : Type::Q5_1;
    const auto& v = k3::test::formats_json("dequant-vectors.json").at(name);
    int blocks = 0;
    for (const auto& deq : v.at("dequantized")) {
      const std::vector<float> x = k3::test::floats(deq);
      ASSERT_EQ(x.size(), 32u);
      const std::vector<uint8_t> q1 = quant(t, x);
      const std::vector<float> y = dequant(t, q1, 32);
      EXPECT_EQ(quant(t, y), q1) << name << " block " << blocks;
      float lo = x[0], hi = x[0], amax = 0;
      for (float f : x) {
        lo = std::min(lo, f);
        hi = std::max(hi, f);
        amax = std::max(amax, std::fabs(f));
      }
      const float step = t == Type::Q5_0 ? amax / 16 : (hi - lo) / 31;
      for (int j = 0; j < 32; ++j)
        EXPECT_LE(std::fabs(y[j] - x[j]), 0.5f * step * 1.05f + 1e-3f * amax)
            << name << " block " << blocks << " j " << j;
      ++blocks;
    }
    EXPECT_GE(blocks, 4) << name;
  }
}

// The imatrix path (make_qx / make_qkx3 searches) never does worse than the plain rule on the
// weighted error it optimises, and a uniform imatrix still gives a valid, close encoding.
TEST(Q5Legacy, ImatrixSearchBeatsPlainOnWeightedError) {
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.f, 1.f);
  const int64_t n = 512;
  std::vector<float> x(n), im(n);
  for (float& f : x) f = g(rng);
  for (int64_t i = 0; i < n; ++i) im[i] = i % 5 == 0 ? 50.f : 1.f;
  for (Type t : {Type::Q5_0, Type::Q5_1}) {
    auto werr = [&](const float* w) {
      const std::vector<float> y = dequant(t, quant(t, x, w), n);
      double e = 0;
      for (int64_t i = 0; i < n; ++i) e += im[i] * (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
      return e;
    };
    EXPECT_LT(werr(im.data()), werr(nullptr)) << k3::quant::type_name(t);
  }
}
