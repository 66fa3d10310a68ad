// quant/iq_grid_search: the per-group grid projection shared by the IQ1, IQ2 and IQ3
// quantizers.
// Contract: best_neighbour() scores an off-grid key's neighbours exactly as ggml's scalar loops
// do (no fused operations), first minimum winning in list ((distance, index)) order; with
// K3_SIMD_X86 it is the AVX2 form, else its scalar twin, and the two agree bit for bit
// (tests/quant/iq_twins_test.cpp). assign_group() rounds a group of magnitudes to levels at
// inverse scale `id` and, if the key is not a grid point, replaces it by the neighbour
// minimising Σ w·(scale·q − x)², as ggml's iq2/iq3_find_best_neighbour. Include only after
// `#pragma GCC optimize("fp-contract=off")` so the arithmetic stays unfused.
#pragma once

#include <cfloat>
#include <cstdint>

#include "quant/iq_common.h"
#include "quant/iq_grid_index.h"

namespace k3::quant::iq {

// Among the neighbours of off-grid `key`, the point minimising Σ_j w_j·(scale·v[l_j] − x_j)²
// where v maps a level to its value (`table`: 8 floats; v[l] = 2l+1 for IQ2/IQ3, the
// delta-shifted ±1/0 values for IQ1). Each score sums its coordinates in index order with
// separate multiplies and adds, (w·diff)·diff, so it is bit-identical to ggml's scalar loop; the
// first strict minimum in list order wins, as there. Only non-finite scores leave nothing
// chosen; ggml aborts there, we take the nearest (the list's first point).

// The scalar twin: ggml's loop over the list.
template <int NC>
inline int best_neighbour_scalar(const GridIndex& gi, uint32_t key, const float* xval, const float* w,
                                 float scale, const float* table) {
  const GridIndex::List& list = gi.list_of(key);
  const uint16_t* ids = gi.neighbour_ids.data() + list.first;
  float best = FLT_MAX;
  int first = -1;
  for (uint32_t m = 0; m < list.count; ++m) {
    const int8_t* pl = gi.point_levels(ids[m]);
    float score = 0;
    for (int j = 0; j < NC; ++j) {
      const float diff = scale * table[pl[j] & 7] - xval[j];
      score += w[j] * diff * diff;
    }
    if (score < best) {
      best = score;
      first = static_cast<int>(m);
    }
  }
  return ids[first >= 0 ? first : 0];
}

#if defined(K3_SIMD_X86)
// The AVX2 form: eight neighbours at once (one per lane, levels from the transposed `lanes`
// table), every lane computing the scalar twin's score with the same operations in the same
// order; then the smallest position among the lanes holding the overall minimum.
template <int NC>
inline int best_neighbour_avx2(const GridIndex& gi, uint32_t key, const float* xval, const float* w,
                               float scale, const float* table) {
  const GridIndex::List& list = gi.list_of(key);
  const uint16_t* ids = gi.neighbour_ids.data() + list.first;
  const uint32_t* lanes = gi.lanes.data() + list.lanes;
  const __m256i nibble_shift = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  const __m256 vtable = _mm256_loadu_ps(table);
  const __m256 vscale = _mm256_set1_ps(scale);
  __m256 vx[NC], vw[NC];
  for (int j = 0; j < NC; ++j) {
    vx[j] = _mm256_set1_ps(xval[j]);
    vw[j] = _mm256_set1_ps(w[j]);
  }
  // Per lane: the smallest score so far (strict <, so the earliest on ties) and its position.
  // Scores are never NaN for finite inputs; a NaN lane would simply never win, as in ggml.
  __m256 best = _mm256_set1_ps(FLT_MAX);
  __m256i best_pos = _mm256_set1_epi32(-1);
  __m256i pos = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i eight = _mm256_set1_epi32(8);
  const __m256i count = _mm256_set1_epi32(static_cast<int>(list.count));
  for (uint32_t base = 0; base < list.count; base += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (int j = 0; j < NC; ++j) {
      // vpermps reads only the low 3 bits of each index: the lane's level after the shift.
      const __m256i lv = _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(lanes[j])), nibble_shift);
      const __m256 q = _mm256_permutevar8x32_ps(vtable, lv);
      const __m256 diff = _mm256_sub_ps(_mm256_mul_ps(vscale, q), vx[j]);
      acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_mul_ps(vw[j], diff), diff));
    }
    lanes += NC;
    const __m256 in_list = _mm256_castsi256_ps(_mm256_cmpgt_epi32(count, pos));
    const __m256 better = _mm256_and_ps(_mm256_cmp_ps(acc, best, _CMP_LT_OQ), in_list);
    best = _mm256_blendv_ps(best, acc, better);
    best_pos = _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(best_pos), _mm256_castsi256_ps(pos), better));
    pos = _mm256_add_epi32(pos, eight);
  }
  // The overall first minimum: the smallest lane minimum, and among lanes holding it the
  // smallest position. Lanes that never took a value keep FLT_MAX and position -1.
  __m256 m = _mm256_min_ps(best, _mm256_permute2f128_ps(best, best, 1));
  m = _mm256_min_ps(m, _mm256_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm256_min_ps(m, _mm256_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
  const __m256i taken = _mm256_cmpgt_epi32(best_pos, _mm256_set1_epi32(-1));
  const __m256i at_min = _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(best, m, _CMP_EQ_OQ)), taken);
  __m256i p = _mm256_blendv_epi8(_mm256_set1_epi32(INT32_MAX), best_pos, at_min);
  p = _mm256_min_epi32(p, _mm256_permute2x128_si256(p, p, 1));
  p = _mm256_min_epi32(p, _mm256_shuffle_epi32(p, _MM_SHUFFLE(1, 0, 3, 2)));
  p = _mm256_min_epi32(p, _mm256_shuffle_epi32(p, _MM_SHUFFLE(2, 3, 0, 1)));
  const int32_t first = _mm256_cvtsi256_si32(p);
  // Only non-finite scores leave nothing chosen; ggml aborts there, we take the nearest.
  return ids[first != INT32_MAX ? first : 0];
}
#endif

template <int NC>
inline int best_neighbour(const GridIndex& gi, uint32_t key, const float* xval, const float* w, float scale,
                          const float* table) {
#if defined(K3_SIMD_X86)
  return best_neighbour_avx2<NC>(gi, key, xval, w, scale, table);
#else
  return best_neighbour_scalar<NC>(gi, key, xval, w, scale, table);
#endif
}

// v[l] = 2l+1: the level values of the IQ2/IQ3 grids.
inline constexpr float kOddLevels[8] = {1, 3, 5, 7, 9, 11, 13, 15};

// Returns the grid index; L receives its levels; *on_grid tells whether no search was needed.
template <int NC>
inline int assign_group(const GridIndex& gi, const float* xval, const float* w, float id, float scale,
                        int8_t* L, bool* on_grid) {
  uint32_t key = 0;
  for (int i = 0; i < NC; ++i) {
    int l = nearest_int(0.5f * (id * xval[i] - 1));
    l = l < 0 ? 0 : (l > gi.max_level ? gi.max_level : l);
    L[i] = static_cast<int8_t>(l);
    key |= static_cast<uint32_t>(l) << (gi.key_bits * i);
  }
  int p = gi.map[key];
  if (p >= 0) {
    *on_grid = true;
    return p;
  }
  *on_grid = false;
  p = best_neighbour<NC>(gi, key, xval, w, scale, kOddLevels);
  const int8_t* pl = gi.point_levels(p);
  for (int i = 0; i < NC; ++i) L[i] = pl[i];
  return p;
}

// Σ w·x·q and Σ w·q² with q = 2L+1, accumulated in index order as ggml does.
template <int N>
inline void level_sums(const float* w, const float* xval, const int8_t* L, float& sumqx, float& sumq2) {
  sumqx = 0;
  sumq2 = 0;
  for (int i = 0; i < N; ++i) {
    const float q = static_cast<float>(2 * L[i] + 1);
    sumqx += w[i] * xval[i] * q;
    sumq2 += w[i] * q * q;
  }
}

// Grid index of levels that are known to be on the grid (after assign_group); 0 if not, which
// only non-finite input could cause.
inline int index_of_levels(const GridIndex& gi, const int8_t* L) {
  uint32_t key = 0;
  for (int i = 0; i < gi.n_coords; ++i) {
    key |= static_cast<uint32_t>(L[i] & ((1 << gi.key_bits) - 1)) << (gi.key_bits * i);
  }
  const int p = gi.map[key];
  return p >= 0 ? p : 0;
}

// Magnitudes and sign bits of an 8-group. With `parity`, an odd number of negatives is made
// even by flipping the sign of the element with the smallest w·x² (its xval becomes −|x|), so
// that the 7-bit index plus the parity bit of ksigns_iq2xs reproduces the mask.
inline uint8_t group_signs(const float* xb, const float* w, float* xval, bool parity) {
  uint8_t s = 0;
  int nflip = 0;
  for (int i = 0; i < 8; ++i) {
    if (xb[i] >= 0) {
      xval[i] = xb[i];
    } else {
      xval[i] = -xb[i];
      ++nflip;
      s |= static_cast<uint8_t>(1u << i);
    }
  }
  if (parity && (nflip % 2)) {
    int imin = 0;
    float min = w[0] * xb[0] * xb[0];
    for (int i = 1; i < 8; ++i) {
      const float ax = w[i] * xb[i] * xb[i];
      if (ax < min) {
        min = ax;
        imin = i;
      }
    }
    xval[imin] = -xval[imin];
    s ^= static_cast<uint8_t>(1u << imin);
  }
  return parity ? static_cast<uint8_t>(s & 127) : s;
}

}  // namespace k3::quant::iq
