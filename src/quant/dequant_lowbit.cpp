// quant/dequant_lowbit: decoders of the ternary types TQ1_0 / TQ2_0 and the recent
// 1- and 2-bit types Q1_0 / Q2_0.
#include "quant/fp_strict.h"  // first: no FMA contraction in this file

#include "quant/block_bits.h"
#include "quant/codebooks.h"
#include "quant/dequant_blocks.h"

namespace k3::quant::detail {

namespace {

// Trit n (most significant first) of a base-3 byte stored as ceil(v·256/243).
inline int trit(uint8_t byte, int n) {
  const uint8_t scaled = uint8_t(byte * kTq1Pow3[n]);  // wraps mod 256 by design
  return (int(scaled) * 3) >> 8;
}

}  // namespace

void dequant_tq1_0(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, y += 256) {
    const auto b = load_block<blk::TQ1_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int n = 0; n < 5; ++n)
      for (int m = 0; m < 32; ++m) y[32 * n + m] = float(trit(b.qs[m], n) - 1) * d;
    for (int n = 0; n < 5; ++n)
      for (int m = 0; m < 16; ++m) y[160 + 16 * n + m] = float(trit(b.qs[32 + m], n) - 1) * d;
    for (int n = 0; n < 4; ++n)
      for (int j = 0; j < 4; ++j) y[240 + 4 * n + j] = float(trit(b.qh[j], n) - 1) * d;
  }
}

void dequant_tq2_0(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, y += 256) {
    const auto b = load_block<blk::TQ2_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < 64; j += 32)
      for (int l = 0; l < 4; ++l)
        for (int m = 0; m < 32; ++m) y[4 * j + 32 * l + m] = float(((b.qs[j + m] >> (2 * l)) & 3) - 1) * d;
  }
}

void dequant_q1_0(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, y += 128) {
    const auto b = load_block<blk::Q1_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < 128; ++j) y[j] = ((b.qs[j / 8] >> (j % 8)) & 1) ? d : -d;
  }
}

void dequant_q2_0(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, y += 64) {
    const auto b = load_block<blk::Q2_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < 64; ++j) y[j] = float(((b.qs[j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
  }
}

}  // namespace k3::quant::detail
