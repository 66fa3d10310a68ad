// quant/dequant_kquants: decoders of the 256-element k-quant super-blocks Q2_K..Q6_K
// (ggml's dequantize_row_q2_K … q6_K).
// The evaluation order (d·sc first, then ·q, then − min) follows ggml: it matters for Q6_K,
// whose (d·sc)·q product can need a rounding.
#include "quant/fp_strict.h"  // first: no FMA contraction in this file

#include "quant/block_bits.h"
#include "quant/dequant_blocks.h"

namespace k3::quant::detail {

namespace {

// 2-bit level of element e in the shared Q2_K/Q3_K layout.
inline int q2_level(const uint8_t* qs, int e) {
  return (qs[32 * (e / 128) + (e % 32)] >> (2 * ((e % 128) / 32))) & 3;
}

}  // namespace

void dequant_q2_k(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, y += 256) {
    const auto b = load_block<blk::Q2_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    for (int e = 0; e < 256; ++e) {
      const int j = e / 16;
      const float dl = d * float(b.scales[j] & 0xF);
      const float ml = dmin * float(b.scales[j] >> 4);
      y[e] = dl * float(q2_level(b.qs, e)) - ml;
    }
  }
}

void dequant_q3_k(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, y += 256) {
    const auto b = load_block<blk::Q3_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    int8_t scales[16];
    blk::q3k_scales(b.scales, scales);
    for (int e = 0; e < 256; ++e) {
      const int s = scales[e / 16];
      const int h = (b.hmask[e % 32] >> (e / 32)) & 1;
      const int q = q2_level(b.qs, e) - (h ? 0 : 4);
      y[e] = (d * float(s)) * float(q);
    }
  }
}

void dequant_q4_k(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, y += 256) {
    const auto b = load_block<blk::Q4_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    for (int e = 0; e < 256; ++e) {
      int sc, m;
      blk::q4k_scale_min(b.scales, e / 32, sc, m);
      const uint8_t byte = b.qs[32 * (e / 64) + (e % 32)];
      const int q = (e % 64 < 32) ? (byte & 0xF) : (byte >> 4);
      y[e] = (d * float(sc)) * float(q) - dmin * float(m);
    }
  }
}

void dequant_q5_k(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, y += 256) {
    const auto b = load_block<blk::Q5_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    for (int e = 0; e < 256; ++e) {
      int sc, m;
      blk::q4k_scale_min(b.scales, e / 32, sc, m);
      const uint8_t byte = b.qs[32 * (e / 64) + (e % 32)];
      const int nib = (e % 64 < 32) ? (byte & 0xF) : (byte >> 4);
      const int q = nib + 16 * ((b.qh[e % 32] >> (e / 32)) & 1);
      y[e] = (d * float(sc)) * float(q) - dmin * float(m);
    }
  }
}

void dequant_q6_k(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, y += 256) {
    const auto b = load_block<blk::Q6_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    for (int e = 0; e < 256; ++e) {
      const int h = e / 128, r = e % 128, k = r / 32, l = r % 32;
      const uint8_t lowb = b.ql[64 * h + l + 32 * (k & 1)];
      const int low = k < 2 ? (lowb & 0xF) : (lowb >> 4);
      const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
      const int q = (low | (high << 4)) - 32;
      y[e] = (d * float(b.scales[e / 16])) * float(q);
    }
  }
}

}  // namespace k3::quant::detail
