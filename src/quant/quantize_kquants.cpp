// quant/quantize_kquants: reference quantizers of the k-quants Q2_K, Q3_K and Q4_K, Q5_K, Q6_K
// (ggml's quantize_row_q*_K_ref and quantize_q*_K_impl), each with its plain (_ref) and
// importance-matrix (_impl) path.
// Byte-exactness rests on binary32 evaluation in the reference's order (quant_search.h), on
// re-quantizing with the f16-rounded scales, and on the reference's uint8/int8 level storage.
#include "quant/fp_strict.h"  // first: no FMA contraction in this file

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/block_bits.h"
#include "quant/quant_rows.h"
#include "quant/quant_search.h"

namespace k3::quant::detail {

namespace {

constexpr int QK = 256;

inline int clampi(int v, int lo, int hi) { return std::max(lo, std::min(hi, v)); }

// Q2_K/Q3_K low-bit packing: byte l of half h holds elements 128h+l+32k in bits 2k..2k+1.
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l)
      qs[32 * h + l] = uint8_t(L[128 * h + l] | (L[128 * h + l + 32] << 2) | (L[128 * h + l + 64] << 4) |
                               (L[128 * h + l + 96] << 6));
}

float sum_sq(const float* x, int n) {
  float s = 0;
  for (int i = 0; i < n; ++i) s += x[i] * x[i];
  return s;
}

// ---------------------------------------------------------------- Q2_K

void q2_k_block(const float* x, blk::Q2_K& y, const float* qw) {
  uint8_t L[QK];
  float mins[16], scales[16];
  uint8_t* sc = y.scales;
  float d, dmin;
  if (!qw) {
    float weights[16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = make_qkx2(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0) {
      const float iscale = 15.f / max_scale;
      for (int j = 0; j < 16; ++j) sc[j] = uint8_t(nearest_int(iscale * scales[j]));
      y.d = fp32_to_fp16(max_scale / 15.f);
    } else {
      std::memset(sc, 0, 16);
      y.d = fp32_to_fp16(0.f);
    }
    if (max_min > 0) {
      const float iscale = 15.f / max_min;
      for (int j = 0; j < 16; ++j) sc[j] = uint8_t(sc[j] | (nearest_int(iscale * mins[j]) << 4));
      y.dmin = fp32_to_fp16(max_min / 15.f);
    } else {
      y.dmin = fp32_to_fp16(0.f);
    }
    d = fp16_to_fp32(y.d);
    dmin = fp16_to_fp32(y.dmin);
  } else {
    const float sigma2 = sum_sq(x, QK) / QK;
    float weight[16], sw[16];
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l)
        weight[l] = qw[16 * j + l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
      float s = 0;
      for (int l = 0; l < 16; ++l) s += weight[l];
      sw[j] = s;
      scales[j] = make_qkx3(16, 3, x + 16 * j, weight, L + 16 * j, &mins[j], -0.9f, 0.05f, 36, false);
    }
    uint8_t Ls[16], Lm[16];
    const float dm = make_qp(16, 15, scales, Ls, sw);
    const float mm = make_qp(16, 15, mins, Lm, sw);
    y.d = fp32_to_fp16(dm);
    y.dmin = fp32_to_fp16(mm);
    d = fp16_to_fp32(y.d);
    dmin = fp16_to_fp32(y.dmin);
    for (int j = 0; j < 16; ++j) sc[j] = uint8_t(Ls[j] | (Lm[j] << 4));
  }
  for (int j = 0; j < 16; ++j) {
    const float dq = d * float(sc[j] & 0xF);
    if (dq == 0) continue;
    const float mq = dmin * float(sc[j] >> 4);
    for (int i = 0; i < 16; ++i)
      L[16 * j + i] = uint8_t(clampi(nearest_int((x[16 * j + i] + mq) / dq), 0, 3));
  }
  pack_2bit(L, y.qs);
}

// ---------------------------------------------------------------- Q3_K

// Six-bit value l (0..63) of sub-block j into the 12 scale bytes (the inverse of
// blk::q3k_scales, which reads it back as l − 32).
void put_scale_q3(uint8_t* s, int j, int l) {
  if (j < 8) s[j] = uint8_t(l & 0xF);
  else s[j - 8] = uint8_t(s[j - 8] | ((l & 0xF) << 4));
  s[8 + j % 4] = uint8_t(s[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
}

void q3_k_block(const float* x, blk::Q3_K& y, const float* qw) {
  int8_t L[QK];
  float scales[16];
  uint8_t* hmask = y.hmask;
  uint8_t* sc = y.scales;
  std::memset(sc, 0, 12);
  if (!qw) {
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = make_q3(16, 4, x + 16 * j, L + 16 * j);
      const float a = std::fabs(scales[j]);
      if (a > amax) {
        amax = a;
        max_scale = scales[j];
      }
    }
    if (max_scale != 0) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        // The reference stores nearest_int into an int8 before clamping.
        const int8_t l = int8_t(nearest_int(iscale * scales[j]));
        put_scale_q3(sc, j, clampi(l, -32, 31) + 32);
      }
      y.d = fp32_to_fp16(1 / iscale);
    } else {
      y.d = fp32_to_fp16(0.f);
    }
  } else {
    const float sigma2 = 2 * sum_sq(x, QK) / QK;
    float weight[16], sw[16];
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l)
        weight[l] = qw[16 * j + l] * std::sqrt(sigma2 + x[16 * j + l] * x[16 * j + l]);
      float s = 0;
      for (int l = 0; l < 16; ++l) s += weight[l];
      sw[j] = s;
      scales[j] = make_qx(16, 4, x + 16 * j, L + 16 * j, weight);
    }
    int8_t Ls[16];
    const float d_block = make_qx(16, 32, scales, Ls, sw);
    for (int j = 0; j < 16; ++j) put_scale_q3(sc, j, Ls[j]);
    y.d = fp32_to_fp16(d_block);
  }
  const float d = fp16_to_fp32(y.d);
  int8_t stored_scales[16];
  blk::q3k_scales(sc, stored_scales);
  for (int j = 0; j < 16; ++j) {
    const float dq = d * float(stored_scales[j]);
    if (dq == 0) continue;
    for (int i = 0; i < 16; ++i) L[16 * j + i] = int8_t(clampi(nearest_int(x[16 * j + i] / dq), -4, 3) + 4);
  }
  std::memset(hmask, 0, 32);
  uint8_t low[QK];
  for (int e = 0; e < QK; ++e) {
    int l = L[e];
    if (l > 3) {
      hmask[e % 32] = uint8_t(hmask[e % 32] | (1 << (e / 32)));
      l -= 4;
    }
    low[e] = uint8_t(l);
  }
  pack_2bit(low, y.qs);
}

// ---------------------------------------------------------------- Q4_K / Q5_K

// Six-bit scale ls and min lm of sub-block j into the 12 scale bytes (the inverse of
// blk::q4k_scale_min).
void put_scale_min_k4(uint8_t* s, int j, int ls, int lm) {
  if (j < 4) {
    s[j] = uint8_t(ls);
    s[j + 4] = uint8_t(lm);
  } else {
    s[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
    s[j - 4] = uint8_t(s[j - 4] | ((ls >> 4) << 6));
    s[j] = uint8_t(s[j] | ((lm >> 4) << 6));
  }
}

// Shared by Q4_K (nmax 15) and Q5_K (nmax 31): fills d, dmin, the 12 scale bytes, and the
// final levels L (0..nmax).
template <class Block>
void q45_k_levels(const float* x, Block& y, uint8_t* L, const float* qw, int nmax) {
  uint8_t* s = y.scales;
  float mins[8], scales[8];
  float weights[32];
  if (!qw) {
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
      const float av_x = std::sqrt(sum_sq(x + 32 * j, 32) / 32);
      for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
      scales[j] = nmax == 15
                      ? make_qkx2(32, 15, x + 32 * j, weights, L + 32 * j, &mins[j], -1.f, 0.1f, 20, false)
                      : make_qkx2(32, 31, x + 32 * j, weights, L + 32 * j, &mins[j], -0.5f, 0.1f, 15, false);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < 8; ++j) {
      // The reference narrows to uint8 before capping at 63.
      const int ls = std::min<int>(63, uint8_t(nearest_int(inv_scale * scales[j])));
      const int lm = std::min<int>(63, uint8_t(nearest_int(inv_min * mins[j])));
      put_scale_min_k4(s, j, ls, lm);
    }
    y.d = fp32_to_fp16(max_scale / 63.f);
    y.dmin = fp32_to_fp16(max_min / 63.f);
  } else {
    const float sigma2 = 2 * sum_sq(x, QK) / QK;
    float sw[8];
    for (int j = 0; j < 8; ++j) {
      for (int l = 0; l < 32; ++l)
        weights[l] = qw[32 * j + l] * std::sqrt(sigma2 + x[32 * j + l] * x[32 * j + l]);
      float sumw = 0;
      for (int l = 0; l < 32; ++l) sumw += weights[l];
      sw[j] = sumw;
      scales[j] = make_qkx3(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], -0.9f, 0.05f, 36, false);
    }
    uint8_t Ls[8], Lm[8];
    const float d_block = make_qp(8, 63, scales, Ls, sw);
    const float m_block = make_qp(8, 63, mins, Lm, sw);
    for (int j = 0; j < 8; ++j) put_scale_min_k4(s, j, Ls[j], Lm[j]);
    y.d = fp32_to_fp16(d_block);
    y.dmin = fp32_to_fp16(m_block);
  }
  const float d = fp16_to_fp32(y.d), dmin = fp16_to_fp32(y.dmin);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    blk::q4k_scale_min(s, j, sc, m);
    const float dq = d * float(sc);
    if (dq == 0) continue;
    const float dm = dmin * float(m);
    for (int i = 0; i < 32; ++i)
      L[32 * j + i] = uint8_t(clampi(nearest_int((x[32 * j + i] + dm) / dq), 0, nmax));
  }
}

void q4_k_block(const float* x, blk::Q4_K& y, const float* qw) {
  uint8_t L[QK];
  q45_k_levels(x, y, L, qw, 15);
  uint8_t* q = y.qs;
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) q[32 * c + l] = uint8_t(L[64 * c + l] | (L[64 * c + l + 32] << 4));
}

void q5_k_block(const float* x, blk::Q5_K& y, const float* qw) {
  uint8_t L[QK];
  q45_k_levels(x, y, L, qw, 31);
  uint8_t* qh = y.qh;
  uint8_t* ql = y.qs;
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      int l1 = L[64 * c + l], l2 = L[64 * c + l + 32];
      if (l1 > 15) {
        l1 -= 16;
        qh[l] = uint8_t(qh[l] | (1 << (2 * c)));
      }
      if (l2 > 15) {
        l2 -= 16;
        qh[l] = uint8_t(qh[l] | (2 << (2 * c)));
      }
      ql[32 * c + l] = uint8_t(l1 | (l2 << 4));
    }
  }
}

// ---------------------------------------------------------------- Q6_K

void q6_k_block(const float* x, blk::Q6_K& y, const float* qw) {
  int8_t L[QK];
  float scales[16];
  float max_scale = 0, max_abs_scale = 0;
  for (int j = 0; j < 16; ++j) {
    scales[j] = make_qx(16, 32, x + 16 * j, L + 16 * j, qw ? qw + 16 * j : nullptr);
    const float a = std::fabs(scales[j]);
    if (a > max_abs_scale) {
      max_abs_scale = a;
      max_scale = scales[j];
    }
  }
  if (max_abs_scale < kGroupMaxEps) {
    y = blk::Q6_K{};
    return;
  }
  const float iscale = -128.f / max_scale;
  y.d = fp32_to_fp16(1 / iscale);
  int8_t* sc = y.scales;
  for (int j = 0; j < 16; ++j) sc[j] = int8_t(std::min(127, nearest_int(iscale * scales[j])));
  const float d = fp16_to_fp32(y.d);
  for (int j = 0; j < 16; ++j) {
    const float dq = d * float(sc[j]);
    if (dq == 0) continue;
    for (int i = 0; i < 16; ++i)
      L[16 * j + i] = int8_t(clampi(nearest_int(x[16 * j + i] / dq), -32, 31) + 32);
  }
  uint8_t* ql = y.ql;
  uint8_t* qh = y.qh;
  for (int h = 0; h < 2; ++h) {
    const int8_t* Lh = L + 128 * h;
    for (int l = 0; l < 32; ++l) {
      ql[64 * h + l] = uint8_t((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
      ql[64 * h + l + 32] = uint8_t((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
      qh[32 * h + l] = uint8_t((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                               ((Lh[l + 96] >> 4) << 6));
    }
  }
}

// Each block is built in a zeroed struct and then copied out (y has no alignment guarantee).
template <class B, void (*Quantize)(const float*, B&, const float*)>
void over_blocks(const float* x, uint8_t* y, int64_t n, const float* imatrix) {
  for (int64_t ib = 0; ib < n / QK; ++ib) {
    B b{};
    Quantize(x + QK * ib, b, imatrix ? imatrix + QK * ib : nullptr);
    store_block(y, ib, b);
  }
}

}  // namespace

void quantize_row_q2_k(const float* x, uint8_t* y, int64_t n, const float* imatrix) {
  over_blocks<blk::Q2_K, q2_k_block>(x, y, n, imatrix);
}
void quantize_row_q3_k(const float* x, uint8_t* y, int64_t n, const float* imatrix) {
  over_blocks<blk::Q3_K, q3_k_block>(x, y, n, imatrix);
}
void quantize_row_q4_k(const float* x, uint8_t* y, int64_t n, const float* imatrix) {
  over_blocks<blk::Q4_K, q4_k_block>(x, y, n, imatrix);
}
void quantize_row_q5_k(const float* x, uint8_t* y, int64_t n, const float* imatrix) {
  over_blocks<blk::Q5_K, q5_k_block>(x, y, n, imatrix);
}
void quantize_row_q6_k(const float* x, uint8_t* y, int64_t n, const float* imatrix) {
  over_blocks<blk::Q6_K, q6_k_block>(x, y, n, imatrix);
}

}  // namespace k3::quant::detail
