// quant/iq_one_bit: reference quantizers of IQ1_S and IQ1_M (one row at a time).
// Contract: byte-identical to ggml's quantize_iq1_s / quantize_iq1_m: exhaustive search of the two
// split points over the values sorted ascending (stable, as glibc's merge-sort qsort), delta-shift
// hypotheses, neighbour search with raw weights and signed values, refit, and the final scale
// packing.
// IQ1_M's split search accumulates each candidate directly (the formulation the reference
// vectors were produced with; newer ggml derives the sums from prefix sums, which rounds
// differently).
#pragma GCC optimize("fp-contract=off")

#include <cfloat>
#include <cmath>

#include "quant/iq_common.h"
#include "quant/iq_grid_search.h"
#include "quant/iq_one_bit.h"

namespace k3::quant::iq {
namespace {

constexpr float kDelta = 0.125f;  // IQ1S_DELTA == IQ1M_DELTA
constexpr float kXp[3] = {-1 + kDelta, kDelta, 1 + kDelta};
constexpr float kXm[3] = {-1 - kDelta, -kDelta, 1 - kDelta};

// Sorts positions 0..N-1 by value ascending; equal values keep index order (insertion sort:
// stable, allocation-free, and fast for N <= 32).
template <int N>
void sort_positions(const float* xb, int* idx) {
  for (int j = 0; j < N; ++j) {
    int m = j;
    while (m > 0 && xb[j] < xb[idx[m - 1]]) {
      idx[m] = idx[m - 1];
      --m;
    }
    idx[m] = j;
  }
}

// Grid index for the levels of one 8-group; off-grid keys go to the best neighbour and the
// levels are replaced by the chosen point's. Returns false in *on_grid when a search was needed.
int group_index(const GridIndex& gi, int8_t* L, const float* xb, const float* w, float scale, const float* xg,
                bool* on_grid) {
  uint32_t key = 0;
  for (int j = 0; j < 8; ++j) key |= static_cast<uint32_t>(L[j]) << (2 * j);
  int p = gi.map[key];
  if (p >= 0) return p;
  *on_grid = false;
  const float table[8] = {xg[0], xg[1], xg[2], 0, 0, 0, 0, 0};
  p = best_neighbour<8>(gi, key, xb, w, scale, table);
  const int8_t* pl = gi.point_levels(p);
  for (int j = 0; j < 8; ++j) L[j] = pl[j];
  return p;
}

inline int sub_scale3(float id, float scale) {
  int l = nearest_int(0.5f * (id * scale - 1));
  return l < 0 ? 0 : (l > 7 ? 7 : l);
}

}  // namespace

// The scalar twin of the split search (quant/iq_one_bit.h): the candidates one at a time, each
// summed exactly as one lane of the AVX2 form.
void iq1m_split_search_scalar(const float* xb, const float* weight, const int* idx, float& scale, int& besti1,
                              int& besti2, int& best_k) {
  constexpr int kBs = 16;
  float best_score = -FLT_MAX;
  for (int i1 = 0; i1 <= kBs; ++i1) {
    for (int i2 = i1; i2 <= kBs; ++i2) {
      float sqx[4] = {0, 0, 0, 0}, sq2[4] = {0, 0, 0, 0};
      for (int j = 0; j < kBs; ++j) {
        const int i = idx[j];
        const int level = j < i1 ? 0 : (j < i2 ? 1 : 2);
        const float vp = kXp[level], vm = kXm[level];
        const float wp = weight[i] * vp, wm = weight[i] * vm;
        const float qxp = wp * xb[i], qxm = wm * xb[i];
        const float q2p = wp * vp, q2m = wm * vm;
        // Hypotheses 0..3 = (+,+), (+,−), (−,+), (−,−) for (first 8, last 8).
        const bool first_half = i < kBs / 2;
        sqx[0] += qxp;
        sqx[3] += qxm;
        sq2[0] += q2p;
        sq2[3] += q2m;
        sqx[1] += first_half ? qxp : qxm;
        sqx[2] += first_half ? qxm : qxp;
        sq2[1] += first_half ? q2p : q2m;
        sq2[2] += first_half ? q2m : q2p;
      }
      for (int k = 0; k < 4; ++k) {
        if (sq2[k] > 0 && sqx[k] * sqx[k] > best_score * sq2[k]) {
          scale = sqx[k] / sq2[k];
          best_score = scale * sqx[k];
          besti1 = i1;
          besti2 = i2;
          best_k = k;
        }
      }
    }
  }
}

#if defined(K3_SIMD_X86)
// Eight consecutive i2 at once (one per lane); the winner is then chosen sequentially.
void iq1m_split_search_avx2(const float* xb, const float* weight, const int* idx, float& scale, int& besti1,
                            int& besti2, int& best_k) {
  constexpr int kBs = 16;
  float best_score = -FLT_MAX;
  const __m256 p0 = _mm256_set1_ps(kXp[0]), p1 = _mm256_set1_ps(kXp[1]), p2 = _mm256_set1_ps(kXp[2]);
  const __m256 m0 = _mm256_set1_ps(kXm[0]), m1 = _mm256_set1_ps(kXm[1]), m2 = _mm256_set1_ps(kXm[2]);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  alignas(32) float qx[4][8], q2[4][8];
  for (int i1 = 0; i1 <= kBs; ++i1) {
    for (int base = i1; base <= kBs; base += 8) {
      const __m256i i2 = _mm256_add_epi32(_mm256_set1_epi32(base), lane);
      __m256 sqx[4], sq2[4];
      for (int k = 0; k < 4; ++k) sqx[k] = sq2[k] = _mm256_setzero_ps();
      for (int j = 0; j < kBs; ++j) {
        const int i = idx[j];
        __m256 vp, vm;
        if (j < i1) {
          vp = p0;
          vm = m0;
        } else {  // level 1 in lanes with j < i2, else level 2
          const __m256 lvl1 = _mm256_castsi256_ps(_mm256_cmpgt_epi32(i2, _mm256_set1_epi32(j)));
          vp = _mm256_blendv_ps(p2, p1, lvl1);
          vm = _mm256_blendv_ps(m2, m1, lvl1);
        }
        const __m256 w = _mm256_set1_ps(weight[i]);
        const __m256 x = _mm256_set1_ps(xb[i]);
        const __m256 wp = _mm256_mul_ps(w, vp), wm = _mm256_mul_ps(w, vm);
        const __m256 qxp = _mm256_mul_ps(wp, x), qxm = _mm256_mul_ps(wm, x);
        const __m256 q2p = _mm256_mul_ps(wp, vp), q2m = _mm256_mul_ps(wm, vm);
        // Hypotheses 0..3 = (+,+), (+,−), (−,+), (−,−) for (first 8, last 8).
        const bool first_half = i < kBs / 2;
        sqx[0] = _mm256_add_ps(sqx[0], qxp);
        sqx[3] = _mm256_add_ps(sqx[3], qxm);
        sq2[0] = _mm256_add_ps(sq2[0], q2p);
        sq2[3] = _mm256_add_ps(sq2[3], q2m);
        sqx[1] = _mm256_add_ps(sqx[1], first_half ? qxp : qxm);
        sqx[2] = _mm256_add_ps(sqx[2], first_half ? qxm : qxp);
        sq2[1] = _mm256_add_ps(sq2[1], first_half ? q2p : q2m);
        sq2[2] = _mm256_add_ps(sq2[2], first_half ? q2m : q2p);
      }
      for (int k = 0; k < 4; ++k) {
        _mm256_store_ps(qx[k], sqx[k]);
        _mm256_store_ps(q2[k], sq2[k]);
      }
      const int n = kBs - base + 1 < 8 ? kBs - base + 1 : 8;
      for (int m = 0; m < n; ++m) {
        for (int k = 0; k < 4; ++k) {
          if (q2[k][m] > 0 && qx[k][m] * qx[k][m] > best_score * q2[k][m]) {
            scale = qx[k][m] / q2[k][m];
            best_score = scale * qx[k][m];
            besti1 = i1;
            besti2 = base + m;
            best_k = k;
          }
        }
      }
    }
  }
}

#endif

// IQ1_S (blk::IQ1_S): d, qs[32] low index bytes, qh[8] u16 (3 high bits per group, scale in
// bits 12..14, delta sign in bit 15).
void quantize_row_iq1_s(const float* x, uint8_t* out, int64_t n, const float* qw_row) {
  const GridIndex& gi = grid_index(Grid::Iq1s);
  constexpr int kBs = 32;
  float weight[kBs], sumx[kBs + 1], sumw[kBs + 1], scales[8];
  int8_t L[kBs];
  int idx[kBs];
  int shifts[8];
  for (int64_t ibl = 0; ibl < n / kSuperBlock; ++ibl) {
    blk::IQ1_S y{};
    uint16_t qh[8] = {};
    float max_scale = 0;
    const float* xbl = x + kSuperBlock * ibl;
    float sumx2 = 0;
    for (int i = 0; i < kSuperBlock; ++i) sumx2 += xbl[i] * xbl[i];
    const float sigma2 = 2 * sumx2 / kSuperBlock;

    for (int ib = 0; ib < 8; ++ib) {
      const float* xb = xbl + kBs * ib;
      const float* qw = qw_row + kSuperBlock * ibl + kBs * ib;
      for (int i = 0; i < kBs; ++i) weight[i] = qw[i] * __builtin_sqrtf(sigma2 + xb[i] * xb[i]);
      float max = std::fabs(xb[0]);
      for (int i = 1; i < kBs; ++i) max = max_of(max, std::fabs(xb[i]));
      scales[ib] = 0;
      shifts[ib] = 1;
      if (max < 1e-12f) continue;
      sort_positions<kBs>(xb, idx);
      sumx[0] = sumw[0] = 0;
      for (int j = 0; j < kBs; ++j) {
        const int i = idx[j];
        sumx[j + 1] = sumx[j] + weight[i] * xb[i];
        sumw[j + 1] = sumw[j] + weight[i];
      }
      float best_score = -FLT_MAX, scale = max;
      int besti1 = -1, besti2 = -1, best_shift = 0;
      for (int i1 = 0; i1 <= kBs; ++i1) {
        for (int i2 = i1; i2 <= kBs; ++i2) {
          for (int h = 0; h < 2; ++h) {  // xp first, then xm
            const float* v = h == 0 ? kXp : kXm;
            const float sumqx =
                (sumx[i1] - sumx[0]) * v[0] + (sumx[i2] - sumx[i1]) * v[1] + (sumx[kBs] - sumx[i2]) * v[2];
            const float sumq2 = (sumw[i1] - sumw[0]) * v[0] * v[0] + (sumw[i2] - sumw[i1]) * v[1] * v[1] +
                                (sumw[kBs] - sumw[i2]) * v[2] * v[2];
            if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
              scale = sumqx / sumq2;
              best_score = scale * sumqx;
              besti1 = i1;
              besti2 = i2;
              best_shift = h == 0 ? 1 : -1;
            }
          }
        }
      }
      if (besti1 < 0 || besti2 < 0 || best_shift == 0) continue;
      for (int j = 0; j < besti1; ++j) L[idx[j]] = 0;
      for (int j = besti1; j < besti2; ++j) L[idx[j]] = 1;
      for (int j = besti2; j < kBs; ++j) L[idx[j]] = 2;
      if (scale < 0) {
        for (int j = 0; j < kBs; ++j) L[j] = static_cast<int8_t>(2 - L[j]);
        scale = -scale;
        best_shift = -best_shift;
      }
      const float* xx = best_shift == 1 ? kXp : kXm;
      bool all_on_grid = true;
      int index[4];
      for (int k = 0; k < 4; ++k) {
        index[k] = group_index(gi, L + 8 * k, xb + 8 * k, weight + 8 * k, scale, xx, &all_on_grid);
      }
      if (!all_on_grid) {
        float sumqx = 0, sumq2 = 0;
        for (int k = 0; k < 4; ++k) {
          const int8_t* pl = gi.point_levels(index[k]);
          for (int j = 0; j < 8; ++j) {
            const float w = weight[8 * k + j];
            const float q = xx[pl[j]];
            sumqx += w * q * xb[8 * k + j];
            sumq2 += w * q * q;
          }
        }
        if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
      }
      uint16_t h = 0;
      for (int k = 0; k < 4; ++k) {
        y.qs[4 * ib + k] = static_cast<uint8_t>(index[k] & 255);
        h = static_cast<uint16_t>(h | ((index[k] >> 8) << (3 * k)));
      }
      qh[ib] = h;
      scales[ib] = scale;
      shifts[ib] = best_shift;
      max_scale = max_of(max_scale, scale);
    }

    if (!max_scale) {
      for (int ib = 0; ib < 8; ++ib) y.qh[ib] = qh[ib];
      store_block(out, ibl, y);
      continue;
    }
    const float d = max_scale / 15;
    y.d = to_f16(d * 1.125f);
    const float id = 1 / d;
    for (int ib = 0; ib < 8; ++ib) {
      int l = sub_scale3(id, scales[ib]);
      if (shifts[ib] == -1) l |= 8;
      qh[ib] = static_cast<uint16_t>(qh[ib] | (l << 12));
      y.qh[ib] = qh[ib];
    }
    store_block(out, ibl, y);
  }
}

// IQ1_M (blk::IQ1_M): qs[32] low index bytes, qh[16] (3 high bits + delta sign per group),
// scales as 4 × u16 (3-bit scale per 16 values, f16 super-block scale in the top nibbles).
void quantize_row_iq1_m(const float* x, uint8_t* out, int64_t n, const float* qw_row) {
  const GridIndex& gi = grid_index(Grid::Iq1s);
  constexpr int kBs = 16;
  constexpr uint8_t kMasks[4] = {0x00, 0x80, 0x08, 0x88};
  float weight[kBs], scales[16];
  int8_t L[kBs];
  int idx[kBs];
  int shifts[16];
  int indices[16][2];
  for (int64_t ibl = 0; ibl < n / kSuperBlock; ++ibl) {
    blk::IQ1_M y{};
    uint8_t* qs = y.qs;
    uint8_t* qh = y.qh;
    uint16_t sc[4] = {};
    float max_scale = 0;
    const float* xbl = x + kSuperBlock * ibl;
    float sumx2 = 0;
    for (int i = 0; i < kSuperBlock; ++i) sumx2 += xbl[i] * xbl[i];
    const float sigma2 = 2 * sumx2 / kSuperBlock;

    auto fill_weights = [&](int ib, const float* xb) {
      if (qw_row) {
        const float* qw = qw_row + kSuperBlock * ibl + kBs * ib;
        for (int i = 0; i < kBs; ++i) weight[i] = qw[i] * __builtin_sqrtf(sigma2 + xb[i] * xb[i]);
      } else {
        for (int i = 0; i < kBs; ++i) weight[i] = xb[i] * xb[i];
      }
    };
    // Value table of group k (0: first 8, 1: last 8) under hypothesis h:
    // 0 = (+,+), 1 = (+,−), 2 = (−,+), 3 = (−,−).
    auto table = [](int h, int k) -> const float* { return (k == 0 ? h < 2 : h % 2 == 0) ? kXp : kXm; };

    for (int ib = 0; ib < 16; ++ib) {
      const float* xb = xbl + kBs * ib;
      fill_weights(ib, xb);
      float max = std::fabs(xb[0]);
      for (int i = 1; i < kBs; ++i) max = max_of(max, std::fabs(xb[i]));
      scales[ib] = 0;
      shifts[ib] = 0;
      indices[ib][0] = indices[ib][1] = 0;
      if (max < 1e-7f) continue;
      sort_positions<kBs>(xb, idx);
      float scale = max;
      int besti1 = -1, besti2 = -1, best_k = -1;
      iq1m_split_search(xb, weight, idx, scale, besti1, besti2, best_k);
      if (besti1 < 0 || besti2 < 0 || best_k < 0) continue;
      for (int j = 0; j < besti1; ++j) L[idx[j]] = 0;
      for (int j = besti1; j < besti2; ++j) L[idx[j]] = 1;
      for (int j = besti2; j < kBs; ++j) L[idx[j]] = 2;
      if (scale < 0) {
        for (int j = 0; j < kBs; ++j) L[j] = static_cast<int8_t>(2 - L[j]);
        scale = -scale;
        best_k = 3 - best_k;
      }
      bool all_on_grid = true;
      int index[2];
      for (int k = 0; k < 2; ++k) {
        index[k] =
            group_index(gi, L + 8 * k, xb + 8 * k, weight + 8 * k, scale, table(best_k, k), &all_on_grid);
      }
      if (!all_on_grid) {
        float sumqx = 0, sumq2 = 0;
        for (int k = 0; k < 2; ++k) {
          const float* xx = table(best_k, k);
          const int8_t* pl = gi.point_levels(index[k]);
          for (int j = 0; j < 8; ++j) {
            const float w = weight[8 * k + j];
            const float q = xx[pl[j]];
            sumqx += w * q * xb[8 * k + j];
            sumq2 += w * q * q;
          }
        }
        if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
      }
      qs[2 * ib + 0] = static_cast<uint8_t>(index[0] & 255);
      qs[2 * ib + 1] = static_cast<uint8_t>(index[1] & 255);
      qh[ib] = static_cast<uint8_t>((index[0] >> 8) | ((index[1] >> 8) << 4));
      indices[ib][0] = index[0];
      indices[ib][1] = index[1];
      scales[ib] = scale;
      shifts[ib] = best_k;
      max_scale = max_of(max_scale, scale);
    }

    if (!max_scale) {
      store_block(out, ibl, y);
      continue;
    }

    // Least-squares super-block scale over the chosen points and 3-bit sub-block scales; the
    // skipped sub-blocks take part too (index 0, scale code 0), as in ggml.
    float d = max_scale / 15;
    const float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int ib = 0; ib < 16; ++ib) {
      const int l = sub_scale3(id, scales[ib]);
      sc[ib / 4] = static_cast<uint16_t>(sc[ib / 4] | (l << (3 * (ib % 4))));
      qh[ib] |= kMasks[shifts[ib]];
      const float* xb = xbl + kBs * ib;
      fill_weights(ib, xb);
      for (int k = 0; k < 2; ++k) {
        const float* xx = table(shifts[ib], k);
        const int8_t* pl = gi.point_levels(indices[ib][k]);
        for (int j = 0; j < 8; ++j) {
          const float w = weight[8 * k + j];
          const float q = xx[pl[j]] * (2 * l + 1);
          sumqx += w * q * xb[8 * k + j];
          sumq2 += w * q * q;
        }
      }
    }
    if (sumq2 > 0) d = sumqx / sumq2;
    const uint16_t bits = to_f16(d * 1.1125f);
    sc[0] = static_cast<uint16_t>(sc[0] | ((bits & 0x000f) << 12));
    sc[1] = static_cast<uint16_t>(sc[1] | ((bits & 0x00f0) << 8));
    sc[2] = static_cast<uint16_t>(sc[2] | ((bits & 0x0f00) << 4));
    sc[3] = static_cast<uint16_t>(sc[3] | (bits & 0xf000));
    for (int i = 0; i < 4; ++i) store_u16(y.scales + 2 * i, sc[i]);
    store_block(out, ibl, y);
  }
}

}  // namespace k3::quant::iq
