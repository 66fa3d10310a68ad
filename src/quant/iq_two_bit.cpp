// quant/iq_two_bit: reference quantizers of IQ2_XXS, IQ2_XS and IQ2_S (one row at a time).
// Contract: byte-identical to ggml's quantize_iq2_xxs / _xs / _s: same scale trials, neighbour
// searches, sign-parity trick and float evaluation order. IQ2_XXS and IQ2_XS need an importance
// vector; IQ2_S falls back to 0.25·σ² + x².
#pragma GCC optimize("fp-contract=off")

#include <type_traits>

#include "quant/iq_common.h"
#include "quant/iq_grid_search.h"

namespace k3::quant::iq {
namespace {

constexpr int kMaxQ = 3;  // levels 0..2, q = 1, 3, 5

// ggml's make_qp_quants for n <= 32 values with levels 0..nmax. Levels live in a uint8 array
// as in ggml: a negative rounding (possible here because of the sign-parity trick) wraps
// modulo 256 and later reads see the wrapped value. Only the returned scale is used.
float make_qp(int n, int nmax, const float* x, const float* w) {
  uint8_t L[32];
  float max = 0;
  for (int i = 0; i < n; ++i) max = max_of(max, x[i]);
  if (max < 1e-15f) return 0.f;
  float iscale = static_cast<float>(nmax) / max;
  for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(nearest_int(iscale * x[i]));
  const float scale = 1 / iscale;
  float best_mse = 0;
  for (int i = 0; i < n; ++i) {
    const float diff = x[i] - scale * L[i];
    best_mse += w[i] * diff * diff;
  }
  for (int is = -4; is <= 4; ++is) {
    if (is == 0) continue;
    const float iscale_is = (0.1f * is + nmax) / max;
    const float scale_is = 1 / iscale_is;
    float mse = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale_is * x[i]);
      l = l < nmax ? l : nmax;
      const float diff = x[i] - scale_is * l;
      mse += w[i] * diff * diff;
    }
    if (mse < best_mse) {
      best_mse = mse;
      iscale = iscale_is;
    }
  }
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = l < nmax ? l : nmax;
    L[i] = static_cast<uint8_t>(l);
    sumlx += w[i] * x[i] * l;
    suml2 += w[i] * l * l;
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      float slx = sumlx - w[i] * x[i] * L[i];
      float sl2 = suml2 - w[i] * L[i] * L[i];
      if (slx > 0 && sl2 > 0) {
        int new_l = nearest_int(x[i] * sl2 / slx);
        new_l = new_l < nmax ? new_l : nmax;
        if (new_l != L[i]) {
          slx += w[i] * x[i] * new_l;
          sl2 += w[i] * new_l * new_l;
          if (slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<uint8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (!n_changed) break;
  }
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// The 4-bit sub-block scale shared by every IQ2/IQ3 type: (2s+1)/2 units of d.
inline int sub_scale(float id, float scale) {
  int l = nearest_int(0.5f * (id * scale - 1));
  return l < 0 ? 0 : (l > 15 ? 15 : l);
}

}  // namespace

// IQ2_XXS (blk::IQ2_XXS): d, then per 32 values u32 A (4 grid indices) and u32 B (4 × 7-bit
// sign index, 4-bit scale in bits 28..31).
void quantize_row_iq2_xxs(const float* x, uint8_t* out, int64_t n, const float* qw_row) {
  const GridIndex& gi = grid_index(Grid::Iq2xxs);
  float weight[32], xval[32], waux[32], scales[8];
  int8_t L[32], Laux[32];
  uint8_t block_signs[4];
  for (int64_t ibl = 0; ibl < n / kSuperBlock; ++ibl) {
    uint32_t q2[16] = {};
    float max_scale = 0;
    const float* xbl = x + kSuperBlock * ibl;
    float sumx2 = 0;
    for (int i = 0; i < kSuperBlock; ++i) sumx2 += xbl[i] * xbl[i];
    const float sigma2 = sumx2 / kSuperBlock;

    for (int ib = 0; ib < 8; ++ib) {
      const float* xb = xbl + 32 * ib;
      const float* qw = qw_row + kSuperBlock * ibl + 32 * ib;
      for (int i = 0; i < 32; ++i) weight[i] = qw[i] * __builtin_sqrtf(sigma2 + xb[i] * xb[i]);
      for (int i = 0; i < 32; ++i) waux[i] = __builtin_sqrtf(weight[i]);
      for (int k = 0; k < 4; ++k) {
        block_signs[k] = group_signs(xb + 8 * k, weight + 8 * k, xval + 8 * k, true);
      }
      // Overwritten on every path that finite input takes; zeroed so that no other can read
      // stale levels.
      std::memset(L, 0, 32);
      float max = xval[0];
      for (int i = 1; i < 32; ++i) max = max_of(max, xval[i]);
      if (max < 1e-15f) {
        scales[ib] = 0;
        continue;
      }
      float scale = make_qp(32, kMaxQ + 1, xval, weight);
      const float eff_max = scale * kMaxQ;
      if (eff_max <= 0) {
        scales[ib] = 0;
        continue;
      }
      bool on_grid;
      float best = 0;
      for (int is = -6; is <= 6; ++is) {
        const float id = (2 * kMaxQ - 1 + is * 0.1f) / eff_max;
        const float this_scale = 1 / id;
        for (int k = 0; k < 4; ++k) {
          assign_group<8>(gi, xval + 8 * k, waux + 8 * k, id, this_scale, Laux + 8 * k, &on_grid);
        }
        float sumqx, sumq2;
        level_sums<32>(weight, xval, Laux, sumqx, sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
          scale = sumqx / sumq2;
          best = scale * sumqx;
          std::memcpy(L, Laux, 32);
        }
      }
      // scale > 0 here unless a trial produced a negative fit; the refit recomputes every group
      // (so make_qp's levels, never copied to L here, are not needed).
      if (scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < 4; ++k) {
          assign_group<8>(gi, xval + 8 * k, waux + 8 * k, id, scale, L + 8 * k, &on_grid);
        }
        float sumqx, sumq2;
        level_sums<32>(weight, xval, L, sumqx, sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
      }
      if (scale < 0) {
        scale = -scale;
        for (int k = 0; k < 4; ++k) block_signs[k] = static_cast<uint8_t>(~block_signs[k] & 127);
      }
      for (int k = 0; k < 4; ++k) {
        const int p = index_of_levels(gi, L + 8 * k);
        q2[2 * ib + 0] |= static_cast<uint32_t>(p) << (8 * k);
        q2[2 * ib + 1] |= static_cast<uint32_t>(block_signs[k]) << (7 * k);
      }
      scales[ib] = scale;
      max_scale = max_of(max_scale, scale);
    }

    blk::IQ2_XXS y{};
    if (max_scale) {
      const float d = max_scale / 31;
      y.d = to_f16(d);
      const float id = 1 / d;
      for (int ib = 0; ib < 8; ++ib) {
        q2[2 * ib + 1] |= static_cast<uint32_t>(sub_scale(id, scales[ib])) << 28;
      }
      for (int i = 0; i < 16; ++i) store_u32(&y.qs[2 * i], q2[i]);
    }
    store_block(out, ibl, y);
  }
}

namespace {

// IQ2_XS (blk::IQ2_XS: d, u16 qs[32], scales[8]) and IQ2_S (blk::IQ2_S: d, qs[32] index bytes,
// then signs[32], qh[8], scales[8]) share one algorithm over 16-value sub-blocks.
template <bool kIsS>
void quantize_row_iq2_16(const float* x, uint8_t* out, int64_t n, const float* qw_row) {
  using Block = std::conditional_t<kIsS, blk::IQ2_S, blk::IQ2_XS>;
  const GridIndex& gi = grid_index(kIsS ? Grid::Iq2s : Grid::Iq2xs);
  constexpr float kEps = kIsS ? 1e-8f : 1e-15f;
  float weight[16], xval[16], waux[16], scales[16];
  int8_t L[16], Laux[16];
  bool is_on_grid[2], is_on_grid_aux[2];
  uint8_t block_signs[2];
  for (int64_t ibl = 0; ibl < n / kSuperBlock; ++ibl) {
    Block y{};
    uint16_t q2[32] = {};  // IQ2_XS: index | sign << 9
    float max_scale = 0;
    const float* xbl = x + kSuperBlock * ibl;
    float sumx2 = 0;
    for (int i = 0; i < kSuperBlock; ++i) sumx2 += xbl[i] * xbl[i];
    const float sigma2 = kIsS ? 2 * sumx2 / kSuperBlock : sumx2 / kSuperBlock;

    for (int ib = 0; ib < 16; ++ib) {
      const float* xb = xbl + 16 * ib;
      if (qw_row) {
        const float* qw = qw_row + kSuperBlock * ibl + 16 * ib;
        for (int i = 0; i < 16; ++i) weight[i] = qw[i] * __builtin_sqrtf(sigma2 + xb[i] * xb[i]);
      } else {
        for (int i = 0; i < 16; ++i) weight[i] = 0.25f * sigma2 + xb[i] * xb[i];
      }
      for (int i = 0; i < 16; ++i) waux[i] = __builtin_sqrtf(weight[i]);
      for (int k = 0; k < 2; ++k) {
        block_signs[k] = group_signs(xb + 8 * k, weight + 8 * k, xval + 8 * k, !kIsS);
      }
      float max = xval[0];
      for (int i = 1; i < 16; ++i) max = max_of(max, xval[i]);
      std::memset(L, 0, 16);
      if (max < kEps) {
        scales[ib] = 0;
        continue;
      }
      float best = 0;
      float scale = max / (2 * kMaxQ - 1);
      is_on_grid[0] = is_on_grid[1] = true;
      for (int is = -9; is <= 9; ++is) {
        const float id = (2 * kMaxQ - 1 + is * 0.1f) / max;
        const float this_scale = 1 / id;
        for (int k = 0; k < 2; ++k) {
          assign_group<8>(gi, xval + 8 * k, waux + 8 * k, id, this_scale, Laux + 8 * k, &is_on_grid_aux[k]);
        }
        float sumqx, sumq2;
        level_sums<16>(weight, xval, Laux, sumqx, sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
          scale = sumqx / sumq2;
          best = scale * sumqx;
          std::memcpy(L, Laux, 16);
          is_on_grid[0] = is_on_grid_aux[0];
          is_on_grid[1] = is_on_grid_aux[1];
        }
      }
      // Only groups that needed a neighbour search are redone at the final scale.
      if ((!is_on_grid[0] || !is_on_grid[1]) && scale > 0) {
        const float id = 1 / scale;
        bool unused;
        for (int k = 0; k < 2; ++k) {
          if (is_on_grid[k]) continue;
          assign_group<8>(gi, xval + 8 * k, waux + 8 * k, id, scale, L + 8 * k, &unused);
        }
        float sumqx, sumq2;
        level_sums<16>(weight, xval, L, sumqx, sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
      }
      if (scale < 0) {
        scale = -scale;
        for (int k = 0; k < 2; ++k) {
          block_signs[k] = static_cast<uint8_t>(kIsS ? ~block_signs[k] : (~block_signs[k] & 127));
        }
      }
      for (int k = 0; k < 2; ++k) {
        const int p = index_of_levels(gi, L + 8 * k);
        const int i8 = 2 * ib + k;
        if constexpr (kIsS) {
          y.qs[i8] = static_cast<uint8_t>(p & 255);
          y.qh[i8 / 4] |= static_cast<uint8_t>((p >> 8) << (2 * (i8 % 4)));
          y.qs[32 + i8] = block_signs[k];
        } else {
          q2[i8] = static_cast<uint16_t>(p | (block_signs[k] << 9));
        }
      }
      scales[ib] = scale;
      max_scale = max_of(max_scale, scale);
    }

    // All scales zero: d stays 0. IQ2_S keeps the index/sign bytes already written (as ggml
    // does); IQ2_XS never copied its staged words, so its block is all zero, as in ggml.
    if (!max_scale) {
      store_block(out, ibl, y);
      continue;
    }
    const float d = max_scale / 31;
    y.d = to_f16(kIsS ? d * 0.9875f : d);
    const float id = 1 / d;
    uint8_t* sc = y.scales;
    for (int ib = 0; ib < 16; ++ib) {
      const int l = sub_scale(id, scales[ib]);
      if (ib % 2 == 0) {
        sc[ib / 2] = static_cast<uint8_t>(l);
      } else {
        sc[ib / 2] |= static_cast<uint8_t>(l << 4);
      }
    }
    if constexpr (!kIsS) {
      for (int i = 0; i < 32; ++i) y.qs[i] = q2[i];
    }
    store_block(out, ibl, y);
  }
}

}  // namespace

void quantize_row_iq2_xs(const float* x, uint8_t* y, int64_t n, const float* qw) {
  quantize_row_iq2_16<false>(x, y, n, qw);
}

void quantize_row_iq2_s(const float* x, uint8_t* y, int64_t n, const float* qw) {
  quantize_row_iq2_16<true>(x, y, n, qw);
}

}  // namespace k3::quant::iq
