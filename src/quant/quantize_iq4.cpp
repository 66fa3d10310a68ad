// quant/quantize_iq4: reference quantizers of IQ4_NL (32-element blocks) and IQ4_XS
// (256-element super-blocks with 6-bit sub-block scales). Both run the same per-32
// search against the non-linear table kValuesIq4nl with ntry = 7, as ggml's file quantizer does.
#include "quant/fp_strict.h"  // first: no FMA contraction in this file

#include <algorithm>
#include <cmath>

#include "quant/block_bits.h"
#include "quant/codebooks.h"
#include "quant/quant_rows.h"
#include "quant/quant_search.h"

namespace k3::quant::detail {

namespace {

constexpr int kNtry = 7;

// Index of the table value nearest to v; exact ties go to the upper entry.
int best_index(float v) {
  const int8_t* K = kValuesIq4nl;
  if (v <= K[0]) return 0;
  if (v >= K[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (v < K[mid]) hi = mid;
    else lo = mid;
  }
  return v - float(K[hi - 1]) < float(K[hi]) - v ? hi - 1 : hi;
}

// One super-block of S elements (32 or 256): writes the f16 scale to dh, the packed nibbles to
// q4, and for S = 256 the 6-bit scales to scales_h / scales_l (zero on entry).
void iq4_superblock(int S, const float* x, uint16_t& dh, uint8_t* q4, uint16_t* scales_h, uint8_t* scales_l,
                    const float* qw) {
  const int8_t* K = kValuesIq4nl;
  float sigma2 = 0;
  for (int j = 0; j < S; ++j) sigma2 += x[j] * x[j];
  sigma2 *= 2.f / float(S);

  uint8_t L[256] = {};
  float scales[8] = {};
  float weight[32];
  float max_scale = 0, amax_scale = 0;
  for (int ib = 0; ib < S / 32; ++ib) {
    const float* xb = x + 32 * ib;
    uint8_t* Lb = L + 32 * ib;
    for (int j = 0; j < 32; ++j)
      weight[j] = qw ? qw[32 * ib + j] * std::sqrt(sigma2 + xb[j] * xb[j]) : xb[j] * xb[j];
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j) {
      const float ax = std::fabs(xb[j]);
      if (ax > amax) {
        amax = ax;
        max = xb[j];
      }
    }
    if (amax < kGroupMaxEps) {
      scales[ib] = 0;
      continue;
    }
    float d = -max / float(K[0]);
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
      const int l = best_index(id * xb[j]);
      Lb[j] = uint8_t(l);
      const float q = K[l];
      sumqx += weight[j] * q * xb[j];
      sumq2 += weight[j] * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -kNtry; itry <= kNtry; ++itry) {
      id = float(itry + K[0]) / max;
      sumqx = sumq2 = 0;
      for (int j = 0; j < 32; ++j) {
        const float q = K[best_index(id * xb[j])];
        sumqx += weight[j] * q * xb[j];
        sumq2 += weight[j] * q * q;
      }
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        d = sumqx / sumq2;
        best = d * sumqx;
      }
    }
    scales[ib] = d;
    const float abs_d = std::fabs(d);
    if (abs_d > amax_scale) {
      amax_scale = abs_d;
      max_scale = d;
    }
  }

  if (S > 32) {
    const float d = -max_scale / 32;
    dh = fp32_to_fp16(d);
    const float id = d != 0 ? 1 / d : 0.f;
    uint16_t sh = 0;
    for (int ib = 0; ib < S / 32; ++ib) {
      int l = std::clamp(nearest_int(id * scales[ib]), -32, 31);
      const float dl = d * float(l);
      const float idl = dl != 0 ? 1 / dl : 0.f;
      for (int j = 0; j < 32; ++j) L[32 * ib + j] = uint8_t(best_index(idl * x[32 * ib + j]));
      l += 32;
      if (ib % 2 == 0) scales_l[ib / 2] = uint8_t(l & 0xF);
      else scales_l[ib / 2] = uint8_t(scales_l[ib / 2] | ((l & 0xF) << 4));
      sh = uint16_t(sh | ((l >> 4) << (2 * ib)));
    }
    *scales_h = sh;
  } else {
    dh = fp32_to_fp16(scales[0]);
    const float id = scales[0] != 0 ? 1 / scales[0] : 0.f;
    for (int j = 0; j < 32; ++j) L[j] = uint8_t(best_index(id * x[j]));
  }
  for (int i = 0; i < S / 32; ++i)
    for (int j = 0; j < 16; ++j) q4[16 * i + j] = uint8_t(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

}  // namespace

void quantize_row_iq4_nl(const float* x, uint8_t* y, int64_t n, const float* imatrix) {
  for (int64_t ib = 0; ib < n / 32; ++ib) {
    blk::IQ4_NL b{};
    iq4_superblock(32, x + 32 * ib, b.d, b.qs, nullptr, nullptr, imatrix ? imatrix + 32 * ib : nullptr);
    store_block(y, ib, b);
  }
}

void quantize_row_iq4_xs(const float* x, uint8_t* y, int64_t n, const float* imatrix) {
  for (int64_t ib = 0; ib < n / 256; ++ib) {
    blk::IQ4_XS b{};
    iq4_superblock(256, x + 256 * ib, b.d, b.qs, &b.scales_h, b.scales_l,
                   imatrix ? imatrix + 256 * ib : nullptr);
    store_block(y, ib, b);
  }
}

}  // namespace k3::quant::detail
