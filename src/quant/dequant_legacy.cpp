// quant/dequant_legacy: decoders of the 32-element block types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0
// and IQ4_NL (ggml's dequantize_row_*). Byte j of the quant array holds elements j (low
// nibble) and j+16.
#include "quant/fp_strict.h"  // first: no FMA contraction in this file

#include "quant/block_bits.h"
#include "quant/codebooks.h"
#include "quant/dequant_blocks.h"

namespace k3::quant::detail {

void dequant_q4_0(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, y += 32) {
    const auto b = load_block<blk::Q4_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < 16; ++j) {
      y[j] = float((b.qs[j] & 0xF) - 8) * d;
      y[j + 16] = float((b.qs[j] >> 4) - 8) * d;
    }
  }
}

void dequant_q4_1(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, y += 32) {
    const auto b = load_block<blk::Q4_1>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    for (int j = 0; j < 16; ++j) {
      y[j] = float(b.qs[j] & 0xF) * d + m;
      y[j + 16] = float(b.qs[j] >> 4) * d + m;
    }
  }
}

void dequant_q5_0(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, y += 32) {
    const auto b = load_block<blk::Q5_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    const uint32_t qh = load_u32(b.qh);
    for (int j = 0; j < 16; ++j) {
      const int lo = (b.qs[j] & 0xF) | int(((qh >> j) & 1) << 4);
      const int hi = (b.qs[j] >> 4) | int(((qh >> (j + 16)) & 1) << 4);
      y[j] = float(lo - 16) * d;
      y[j + 16] = float(hi - 16) * d;
    }
  }
}

void dequant_q5_1(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, y += 32) {
    const auto b = load_block<blk::Q5_1>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    const uint32_t qh = load_u32(b.qh);
    for (int j = 0; j < 16; ++j) {
      const int lo = (b.qs[j] & 0xF) | int(((qh >> j) & 1) << 4);
      const int hi = (b.qs[j] >> 4) | int(((qh >> (j + 16)) & 1) << 4);
      y[j] = float(lo) * d + m;
      y[j + 16] = float(hi) * d + m;
    }
  }
}

void dequant_q8_0(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, y += 32) {
    const auto b = load_block<blk::Q8_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < 32; ++j) y[j] = float(b.qs[j]) * d;
  }
}

void dequant_iq4_nl(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, y += 32) {
    const auto b = load_block<blk::IQ4_NL>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * float(kValuesIq4nl[b.qs[j] & 0xF]);
      y[j + 16] = d * float(kValuesIq4nl[b.qs[j] >> 4]);
    }
  }
}

}  // namespace k3::quant::detail
