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

// Six-bit scale and min of sub-block j in the 12-byte Q4_K/Q5_K packing.
inline void scale_min_k4(const uint8_t* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

}  // namespace

void dequant_q2_k(const uint8_t* b, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, b += 84, y += 256) {
    const uint8_t* scales = b;
    const uint8_t* qs = b + 16;
    const float d = load_f16(b + 80);
    const float dmin = load_f16(b + 82);
    for (int e = 0; e < 256; ++e) {
      const int j = e / 16;
      const float dl = d * float(scales[j] & 0xF);
      const float ml = dmin * float(scales[j] >> 4);
      y[e] = dl * float(q2_level(qs, e)) - ml;
    }
  }
}

void dequant_q3_k(const uint8_t* b, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, b += 110, y += 256) {
    const uint8_t* hmask = b;
    const uint8_t* qs = b + 32;
    const uint8_t* sc = b + 96;
    const float d = load_f16(b + 108);
    for (int e = 0; e < 256; ++e) {
      const int j = e / 16;
      const int low4 = j < 8 ? (sc[j] & 0xF) : (sc[j - 8] >> 4);
      const int high2 = (sc[8 + j % 4] >> (2 * (j / 4))) & 3;
      const int s = (low4 | (high2 << 4)) - 32;
      const int h = (hmask[e % 32] >> (e / 32)) & 1;
      const int q = q2_level(qs, e) - (h ? 0 : 4);
      y[e] = (d * float(s)) * float(q);
    }
  }
}

void dequant_q4_k(const uint8_t* b, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, b += 144, y += 256) {
    const float d = load_f16(b);
    const float dmin = load_f16(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* qs = b + 16;
    for (int e = 0; e < 256; ++e) {
      const int j = e / 32;
      int sc, m;
      scale_min_k4(scales, j, sc, m);
      const uint8_t byte = qs[32 * (e / 64) + (e % 32)];
      const int q = (e % 64 < 32) ? (byte & 0xF) : (byte >> 4);
      y[e] = (d * float(sc)) * float(q) - dmin * float(m);
    }
  }
}

void dequant_q5_k(const uint8_t* b, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, b += 176, y += 256) {
    const float d = load_f16(b);
    const float dmin = load_f16(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* qh = b + 16;
    const uint8_t* qs = b + 48;
    for (int e = 0; e < 256; ++e) {
      const int j = e / 32;
      int sc, m;
      scale_min_k4(scales, j, sc, m);
      const uint8_t byte = qs[32 * (e / 64) + (e % 32)];
      const int nib = (e % 64 < 32) ? (byte & 0xF) : (byte >> 4);
      const int q = nib + 16 * ((qh[e % 32] >> (e / 32)) & 1);
      y[e] = (d * float(sc)) * float(q) - dmin * float(m);
    }
  }
}

void dequant_q6_k(const uint8_t* b, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, b += 210, y += 256) {
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
    const float d = load_f16(b + 208);
    for (int e = 0; e < 256; ++e) {
      const int h = e / 128, r = e % 128, k = r / 32, l = r % 32;
      const uint8_t lowb = ql[64 * h + l + 32 * (k & 1)];
      const int low = k < 2 ? (lowb & 0xF) : (lowb >> 4);
      const int high = (qh[32 * h + l] >> (2 * k)) & 3;
      const int q = (low | (high << 4)) - 32;
      y[e] = (d * float(scales[e / 16])) * float(q);
    }
  }
}

}  // namespace k3::quant::detail
