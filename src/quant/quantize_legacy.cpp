// quant/quantize_legacy: reference quantizers of the 32-element types Q8_0, Q4_0, Q5_0,
// Q5_1 and MXFP4 (ggml's quantize_row_*_ref and quantize_*_impl).
// Q4_0/Q5_0 without an imatrix are ggml's *_ref rules (scale = signed absmax / -8 or -16,
// truncating conversion of x/d + 8.5 or + 16.5, capped at the top level); with one, a make_qx
// search (nmax 8 or 16) over weights imatrix·sqrt(sigma2 + x²), where sigma2 is the mean square of
// the whole row. Q5_1 without an imatrix spreads [min, max] over 31 steps (min stored as the
// offset, truncating conversion of (x - min)/d + 0.5); with one, make_qkx3 (nmax 31, rmin -0.9,
// rdelta 0.05, 36 steps, squared error) over the same weights. The fifth bit of element j goes to
// bit j of the u32 qh. Q5_0/Q5_1 exist here for llama-quantize's shape fallback
// (Q4_K -> Q5_0, Q5_K -> Q5_1; docs/quantize.md).
#include "quant/fp_strict.h"  // first: no FMA contraction in this file

#include <algorithm>
#include <cmath>

#include "quant/block_bits.h"
#include "quant/codebooks.h"
#include "quant/quant_rows.h"
#include "quant/quant_search.h"

namespace k3::quant::detail {

void quantize_row_q8_0(const float* x, uint8_t* y, int64_t n, const float*) {
  for (int64_t ib = 0; ib < n / 32; ++ib, x += 32) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    blk::Q8_0 b{};
    b.d = fp32_to_fp16(d);
    for (int j = 0; j < 32; ++j) b.qs[j] = int8_t(std::roundf(x[j] * id));
    store_block(y, ib, b);
  }
}

namespace {

void q4_0_block_plain(const float* x, blk::Q4_0& y) {
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y.d = fp32_to_fp16(d);
  for (int j = 0; j < 16; ++j) {
    // The reference truncates through int8 (x·id + 8.5 ∈ [0.5, 16.5]) and caps at 15.
    const int q0 = std::min(15, int(int8_t(x[j] * id + 8.5f)));
    const int q1 = std::min(15, int(int8_t(x[j + 16] * id + 8.5f)));
    y.qs[j] = uint8_t(q0 | (q1 << 4));
  }
}

}  // namespace

void quantize_row_q4_0(const float* x, uint8_t* y, int64_t n, const float* imatrix) {
  if (!imatrix) {
    for (int64_t ib = 0; ib < n / 32; ++ib) {
      blk::Q4_0 b{};
      q4_0_block_plain(x + 32 * ib, b);
      store_block(y, ib, b);
    }
    return;
  }
  float sum_x2 = 0;
  for (int64_t j = 0; j < n; ++j) sum_x2 += x[j] * x[j];
  const float sigma2 = sum_x2 / float(n);
  for (int64_t ib = 0; ib < n / 32; ++ib) {
    const float* xb = x + 32 * ib;
    const float* qw = imatrix + 32 * ib;
    float w[32];
    for (int j = 0; j < 32; ++j) w[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
    int8_t L[32];
    const float d = make_qx(32, 8, xb, L, w);
    blk::Q4_0 b{};
    b.d = fp32_to_fp16(d);
    for (int j = 0; j < 16; ++j) b.qs[j] = uint8_t(L[j] | (L[j + 16] << 4));
    store_block(y, ib, b);
  }
}

namespace {

// Stores 32 five-bit levels: low nibbles in qs (element j and j+16 share byte j), the fifth
// bits in the u32 qh.
void store_q5_levels(const uint8_t* L, uint8_t* qh_at, uint8_t* qs) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = uint8_t((L[j] & 0x0F) | ((L[j + 16] & 0x0F) << 4));
    qh |= uint32_t((L[j] >> 4) & 1) << j;
    qh |= uint32_t((L[j + 16] >> 4) & 1) << (j + 16);
  }
  store_u32(qh_at, qh);
}

// Row mean square and the per-element weights imatrix·sqrt(sigma2 + x²) of one block.
float row_sigma2(const float* x, int64_t n) {
  float sum_x2 = 0;
  for (int64_t j = 0; j < n; ++j) sum_x2 += x[j] * x[j];
  return sum_x2 / float(n);
}
void block_weights(const float* xb, const float* qw, float sigma2, float* w) {
  for (int j = 0; j < 32; ++j) w[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
}

void q5_0_block_plain(const float* x, blk::Q5_0& y) {
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -16;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y.d = fp32_to_fp16(d);
  uint8_t L[32];
  // x·id + 16.5 lies in [0.5, 32.5]: truncation through int8 as the reference does, cap 31.
  for (int j = 0; j < 32; ++j) L[j] = uint8_t(std::min(31, int(int8_t(x[j] * id + 16.5f))));
  store_q5_levels(L, y.qh, y.qs);
}

void q5_1_block_plain(const float* x, blk::Q5_1& y) {
  float min = x[0], max = x[0];
  for (int j = 1; j < 32; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const float d = (max - min) / 31;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  y.d = fp32_to_fp16(d);
  y.m = fp32_to_fp16(min);
  uint8_t L[32];
  for (int j = 0; j < 32; ++j) L[j] = uint8_t((x[j] - min) * id + 0.5f);
  store_q5_levels(L, y.qh, y.qs);
}

}  // namespace

void quantize_row_q5_0(const float* x, uint8_t* y, int64_t n, const float* imatrix) {
  if (!imatrix) {
    for (int64_t ib = 0; ib < n / 32; ++ib) {
      blk::Q5_0 b{};
      q5_0_block_plain(x + 32 * ib, b);
      store_block(y, ib, b);
    }
    return;
  }
  const float sigma2 = row_sigma2(x, n);
  for (int64_t ib = 0; ib < n / 32; ++ib) {
    const float* xb = x + 32 * ib;
    float w[32];
    block_weights(xb, imatrix + 32 * ib, sigma2, w);
    int8_t L[32];
    const float d = make_qx(32, 16, xb, L, w);
    blk::Q5_0 b{};
    b.d = fp32_to_fp16(d);
    uint8_t U[32];
    for (int j = 0; j < 32; ++j) U[j] = uint8_t(L[j]);
    store_q5_levels(U, b.qh, b.qs);
    store_block(y, ib, b);
  }
}

void quantize_row_q5_1(const float* x, uint8_t* y, int64_t n, const float* imatrix) {
  if (!imatrix) {
    for (int64_t ib = 0; ib < n / 32; ++ib) {
      blk::Q5_1 b{};
      q5_1_block_plain(x + 32 * ib, b);
      store_block(y, ib, b);
    }
    return;
  }
  const float sigma2 = row_sigma2(x, n);
  for (int64_t ib = 0; ib < n / 32; ++ib) {
    const float* xb = x + 32 * ib;
    float w[32];
    block_weights(xb, imatrix + 32 * ib, sigma2, w);
    uint8_t L[32];
    float the_min = 0;
    const float d = make_qkx3(32, 31, xb, w, L, &the_min, -0.9f, 0.05f, 36, false);
    blk::Q5_1 b{};
    b.d = fp32_to_fp16(d);
    b.m = fp32_to_fp16(-the_min);
    store_q5_levels(L, b.qh, b.qs);
    store_block(y, ib, b);
  }
}

namespace {

// Code 0..15 whose doubled E2M1 value times d is nearest to v; ties keep the lower code.
int best_fp4_code(float v, float d) {
  int best = 0;
  float best_err = std::fabs(float(kValuesFp4[0]) * d - v);
  for (int k = 1; k < 16; ++k) {
    const float err = std::fabs(float(kValuesFp4[k]) * d - v);
    if (err < best_err) {
      best = k;
      best_err = err;
    }
  }
  return best;
}

}  // namespace

void quantize_row_mxfp4(const float* x, uint8_t* y, int64_t n, const float*) {
  for (int64_t ib = 0; ib < n / 32; ++ib, x += 32) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) {
      if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
    }
    // The f32 expression floor(log2(amax)) - 2 + 127, converted to the stored byte.
    const uint8_t e = amax > 0 ? uint8_t(int(std::floor(std::log2(amax)) - 2 + 127)) : 0;
    const float d = blk::e8m0_half(e);
    blk::MXFP4 b{};
    b.e = e;
    for (int j = 0; j < 16; ++j)
      b.qs[j] = uint8_t(best_fp4_code(x[j], d) | (best_fp4_code(x[j + 16], d) << 4));
    store_block(y, ib, b);
  }
}

}  // namespace k3::quant::detail
