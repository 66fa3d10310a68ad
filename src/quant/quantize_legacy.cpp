// quant/quantize_legacy: reference quantizers of the 32-element types Q8_0 (§3.1), Q4_0 and
// MXFP4 (§3.3).
// Q4_0 without an imatrix is ggml's quantize_row_q4_0_ref (scale = signed absmax / -8,
// truncating conversion of x/d + 8.5); with one, a make_qx search (nmax 8) over weights
// imatrix·sqrt(sigma2 + x²), where sigma2 is the mean square of the whole row.
#include "quant/fp_strict.h"  // first: no FMA contraction in this file

#include <algorithm>
#include <cmath>

#include "quant/block_bits.h"
#include "quant/codebooks.h"
#include "quant/dequant_blocks.h"
#include "quant/quant_rows.h"
#include "quant/quant_search.h"

namespace k3::quant::detail {

void quantize_row_q8_0(const float* x, uint8_t* y, int64_t n, const float*) {
  for (int64_t ib = 0; ib < n / 32; ++ib, x += 32, y += 34) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    store_f16(y, d);
    for (int j = 0; j < 32; ++j) y[2 + j] = uint8_t(int8_t(std::roundf(x[j] * id)));
  }
}

namespace {

void q4_0_block_plain(const float* x, uint8_t* y) {
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  store_f16(y, d);
  for (int j = 0; j < 16; ++j) {
    // The reference truncates through int8 (x·id + 8.5 ∈ [0.5, 16.5]) and caps at 15.
    const int q0 = std::min(15, int(int8_t(x[j] * id + 8.5f)));
    const int q1 = std::min(15, int(int8_t(x[j + 16] * id + 8.5f)));
    y[2 + j] = uint8_t(q0 | (q1 << 4));
  }
}

}  // namespace

void quantize_row_q4_0(const float* x, uint8_t* y, int64_t n, const float* imatrix) {
  if (!imatrix) {
    for (int64_t ib = 0; ib < n / 32; ++ib) q4_0_block_plain(x + 32 * ib, y + 18 * ib);
    return;
  }
  float sum_x2 = 0;
  for (int64_t j = 0; j < n; ++j) sum_x2 += x[j] * x[j];
  const float sigma2 = sum_x2 / float(n);
  for (int64_t ib = 0; ib < n / 32; ++ib) {
    const float* xb = x + 32 * ib;
    const float* qw = imatrix + 32 * ib;
    uint8_t* yb = y + 18 * ib;
    float w[32];
    for (int j = 0; j < 32; ++j) w[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
    int8_t L[32];
    const float d = make_qx(32, 8, xb, L, w);
    store_f16(yb, d);
    for (int j = 0; j < 16; ++j) yb[2 + j] = uint8_t(L[j] | (L[j + 16] << 4));
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
  for (int64_t ib = 0; ib < n / 32; ++ib, x += 32, y += 17) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) {
      if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
    }
    // The f32 expression floor(log2(amax)) - 2 + 127, converted to the stored byte.
    const uint8_t e = amax > 0 ? uint8_t(int(std::floor(std::log2(amax)) - 2 + 127)) : 0;
    const float d = e8m0_half(e);
    y[0] = e;
    for (int j = 0; j < 16; ++j) {
      y[1 + j] = uint8_t(best_fp4_code(x[j], d) | (best_fp4_code(x[j + 16], d) << 4));
    }
  }
}

}  // namespace k3::quant::detail
