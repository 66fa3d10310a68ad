// quant/iq_three_bit: reference quantizers of IQ3_XXS and IQ3_S (one row at a time).
// Contract: reproduces ggml's quantize_iq3_xxs / quantize_iq3_s: 4-coordinate grids with 3-bit
// levels (q = 2l+1), 32-value sub-blocks, the sign-parity trick for IQ3_XXS and full sign bytes for
// IQ3_S. Without an importance vector the weights are x².
// One deliberate difference: when an IQ3_S sub-block is exactly zero, ggml skips it without
// advancing its qs/signs write pointers, so the following sub-blocks land one slot early and
// the block decodes wrongly. We write every sub-block at its own position; bytes differ from
// ggml only for rows containing an all-zero 32-value sub-block.
#pragma GCC optimize("fp-contract=off")

#include "quant/iq_common.h"
#include "quant/iq_grid_search.h"

namespace k3::quant::iq {
namespace {

constexpr int kMaxQ = 8;  // levels 0..7, q = 1, 3, ..., 15

inline int sub_scale(float id, float scale) {
  int l = nearest_int(0.5f * (id * scale - 1));
  return l < 0 ? 0 : (l > 15 ? 15 : l);
}

struct SubBlockResult {
  float scale;
  int index[8];      // grid index per 4-value group
  uint8_t signs[4];  // IQ3_XXS: 7-bit sign indices; IQ3_S: full sign bytes
};

// Quantizes one 32-value sub-block; returns false (nothing to store) when it is skipped.
template <bool kIsS>
bool quantize_sub_block(const GridIndex& gi, const float* xb, const float* qw, float sigma2,
                        SubBlockResult& r) {
  float weight[32], xval[32], waux[32];
  int8_t L[32], Laux[32];
  bool is_on_grid[8], is_on_grid_aux[8];
  if (qw) {
    for (int i = 0; i < 32; ++i) weight[i] = qw[i] * __builtin_sqrtf(sigma2 + xb[i] * xb[i]);
  } else {
    for (int i = 0; i < 32; ++i) weight[i] = xb[i] * xb[i];
  }
  for (int i = 0; i < 32; ++i) waux[i] = __builtin_sqrtf(weight[i]);
  for (int k = 0; k < 4; ++k) { r.signs[k] = group_signs(xb + 8 * k, weight + 8 * k, xval + 8 * k, !kIsS); }
  float max = xval[0];
  for (int i = 1; i < 32; ++i) max = max_of(max, xval[i]);
  std::memset(L, 0, 32);
  if (kIsS ? !max : max < 1e-8f) return false;

  float best = 0;
  float scale = max / (2 * kMaxQ - 1);
  // IQ3_S starts "off grid" so that the final refit always runs.
  for (int k = 0; k < 8; ++k) is_on_grid[k] = !kIsS;
  constexpr int kTrials = kIsS ? 9 : 15;
  for (int is = -kTrials; is <= kTrials; ++is) {
    const float id = (2 * kMaxQ - 1 + is * 0.2f) / max;
    const float this_scale = 1 / id;
    for (int k = 0; k < 8; ++k) {
      assign_group<4>(gi, xval + 4 * k, waux + 4 * k, id, this_scale, Laux + 4 * k, &is_on_grid_aux[k]);
    }
    float sumqx, sumq2;
    level_sums<32>(weight, xval, Laux, sumqx, sumq2);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      scale = sumqx / sumq2;
      best = scale * sumqx;
      std::memcpy(L, Laux, 32);
      for (int k = 0; k < 8; ++k) is_on_grid[k] = is_on_grid_aux[k];
    }
  }
  int n_not_on_grid = 0;
  for (int k = 0; k < 8; ++k) n_not_on_grid += is_on_grid[k] ? 0 : 1;
  if (n_not_on_grid > 0 && scale > 0) {
    const float id = 1 / scale;
    bool unused;
    for (int k = 0; k < 8; ++k) {
      if (!kIsS && is_on_grid[k]) continue;  // IQ3_S redoes every group
      assign_group<4>(gi, xval + 4 * k, waux + 4 * k, id, scale, L + 4 * k, &unused);
    }
    float sumqx, sumq2;
    level_sums<32>(weight, xval, L, sumqx, sumq2);
    if (sumq2 > 0) scale = sumqx / sumq2;
  }
  if (scale < 0) {
    scale = -scale;
    for (int k = 0; k < 4; ++k) {
      r.signs[k] = static_cast<uint8_t>(kIsS ? ~r.signs[k] : (~r.signs[k] & 127));
    }
  }
  for (int k = 0; k < 8; ++k) r.index[k] = index_of_levels(gi, L + 4 * k);
  r.scale = scale;
  return true;
}

}  // namespace

// IQ3_XXS (blk::IQ3_XXS): d, qs[64] grid indices, then 8 × u32 (4 × 7-bit sign index,
// scale << 28).
void quantize_row_iq3_xxs(const float* x, uint8_t* out, int64_t n, const float* qw_row) {
  const GridIndex& gi = grid_index(Grid::Iq3xxs);
  for (int64_t ibl = 0; ibl < n / kSuperBlock; ++ibl) {
    blk::IQ3_XXS y{};
    uint32_t scales_and_signs[8] = {};
    float scales[8];
    float max_scale = 0;
    const float* xbl = x + kSuperBlock * ibl;
    float sumx2 = 0;
    for (int i = 0; i < kSuperBlock; ++i) sumx2 += xbl[i] * xbl[i];
    const float sigma2 = 2 * sumx2 / kSuperBlock;
    for (int ib = 0; ib < 8; ++ib) {
      const float* qw = qw_row ? qw_row + kSuperBlock * ibl + 32 * ib : nullptr;
      SubBlockResult r;
      if (!quantize_sub_block<false>(gi, xbl + 32 * ib, qw, sigma2, r)) {
        scales[ib] = 0;
        continue;
      }
      for (int k = 0; k < 8; ++k) y.qs[8 * ib + k] = static_cast<uint8_t>(r.index[k]);
      scales_and_signs[ib] =
          r.signs[0] | (r.signs[1] << 7) | (r.signs[2] << 14) | (static_cast<uint32_t>(r.signs[3]) << 21);
      scales[ib] = r.scale;
      max_scale = max_of(max_scale, r.scale);
    }
    if (!max_scale) {
      store_block(out, ibl, blk::IQ3_XXS{});  // ggml zeroes the whole block
      continue;
    }
    const float d = max_scale / 31;
    y.d = to_f16(d * 1.0125f);
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ++ib) {
      scales_and_signs[ib] |= static_cast<uint32_t>(sub_scale(id, scales[ib])) << 28;
      store_u32(y.qs + 64 + 4 * ib, scales_and_signs[ib]);
    }
    store_block(out, ibl, y);
  }
}

// IQ3_S (blk::IQ3_S): d, qs[64] low index bytes, qh[8] index bit 8, signs[32], scales[4].
void quantize_row_iq3_s(const float* x, uint8_t* out, int64_t n, const float* qw_row) {
  const GridIndex& gi = grid_index(Grid::Iq3s);
  for (int64_t ibl = 0; ibl < n / kSuperBlock; ++ibl) {
    blk::IQ3_S y{};
    float scales[8];
    float max_scale = 0;
    const float* xbl = x + kSuperBlock * ibl;
    float sumx2 = 0;
    for (int i = 0; i < kSuperBlock; ++i) sumx2 += xbl[i] * xbl[i];
    const float sigma2 = 2 * sumx2 / kSuperBlock;
    for (int ib = 0; ib < 8; ++ib) {
      const float* qw = qw_row ? qw_row + kSuperBlock * ibl + 32 * ib : nullptr;
      SubBlockResult r;
      if (!quantize_sub_block<true>(gi, xbl + 32 * ib, qw, sigma2, r)) {
        scales[ib] = 0;
        continue;
      }
      for (int k = 0; k < 8; ++k) {
        y.qs[8 * ib + k] = static_cast<uint8_t>(r.index[k] & 255);
        y.qh[ib] |= static_cast<uint8_t>((r.index[k] >> 8) << k);
      }
      for (int k = 0; k < 4; ++k) y.signs[4 * ib + k] = r.signs[k];
      scales[ib] = r.scale;
      max_scale = max_of(max_scale, r.scale);
    }
    if (!max_scale) {
      store_block(out, ibl, y);
      continue;
    }
    const float d = max_scale / 31;
    y.d = to_f16(d * 1.033f);
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ib += 2) {
      y.scales[ib / 2] =
          static_cast<uint8_t>(sub_scale(id, scales[ib]) | (sub_scale(id, scales[ib + 1]) << 4));
    }
    store_block(out, ibl, y);
  }
}

}  // namespace k3::quant::iq
