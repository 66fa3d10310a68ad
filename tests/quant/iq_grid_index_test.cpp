// The grid search structures against brute force: every key's neighbour list equals the points
// at the smallest distinct distances in (distance, index) order, on-grid keys map to their
// point, and the 8-wide neighbour scoring picks exactly what ggml's scalar loop picks
// (including ties, forced here by repeated values).
#pragma GCC optimize("fp-contract=off")  // the scalar oracle must not be fused either

#include <gtest/gtest.h>

#include <cfloat>
#include <map>
#include <random>
#include <vector>

#include "quant/codebooks.h"
#include "quant/iq_grid_search.h"

namespace k3::quant::iq {
namespace {

struct Expect {
  Grid grid;
  const uint16_t* compact;
  int n_points, n_coords, bits, max_level, nwant;
};

const Expect kGrids[] = {
    {Grid::Iq2xxs, kGrid2bit256, 256, 8, 2, 2, 2}, {Grid::Iq2xs, kGrid2bit512, 512, 8, 2, 2, 2},
    {Grid::Iq2s, kGrid2bit1024, 1024, 8, 2, 2, 1}, {Grid::Iq1s, kGrid1bit2048, 2048, 8, 2, 2, 3},
    {Grid::Iq3xxs, kGrid3bit256, 256, 4, 3, 7, 2}, {Grid::Iq3s, kGrid3bit512, 512, 4, 3, 7, 3},
};

int level_of(uint32_t key, int j, int bits) { return (key >> (bits * j)) & ((1 << bits) - 1); }

TEST(IqGridIndex, MapsAndNeighbourListsMatchBruteForce) {
  for (const auto& e : kGrids) {
    const GridIndex& gi = grid_index(e.grid);
    ASSERT_EQ(gi.n_points, e.n_points);
    for (int p = 0; p < e.n_points; ++p) ASSERT_EQ(gi.map[e.compact[p]], p);
    std::mt19937 rng(static_cast<uint32_t>(e.n_points));
    int checked = 0;
    for (uint32_t key = 0; key < gi.map.size() && checked < 300; ++key) {
      bool valid = true;
      for (int j = 0; j < e.n_coords; ++j) valid &= level_of(key, j, e.bits) <= e.max_level;
      if (!valid || gi.map[key] >= 0 || rng() % 8 != 0) continue;
      ++checked;
      std::map<int, std::vector<int>> by_dist;  // sorted by distance, indices ascending
      for (int p = 0; p < e.n_points; ++p) {
        int d2 = 0;
        for (int j = 0; j < e.n_coords; ++j) {
          const int d = 2 * (level_of(e.compact[p], j, e.bits) - level_of(key, j, e.bits));
          d2 += d * d;
        }
        by_dist[d2].push_back(p);
      }
      std::vector<int> want;
      int taken = 0;
      for (const auto& [d, ps] : by_dist) {
        if (taken++ == e.nwant) break;
        want.insert(want.end(), ps.begin(), ps.end());
      }
      const auto& list = gi.list_of(key);
      std::vector<int> got(gi.neighbour_ids.begin() + list.first,
                           gi.neighbour_ids.begin() + list.first + list.count);
      ASSERT_EQ(got, want) << "grid " << e.n_points << " key " << key;
    }
    EXPECT_EQ(checked, 300);
  }
}

// ggml's scalar neighbour choice, written out plainly.
// *tied tells whether another neighbour reached the winning score too.
int scalar_best(const GridIndex& gi, uint32_t key, const float* x, const float* w, float scale,
                const float* table, bool* tied) {
  const auto& list = gi.list_of(key);
  float best = FLT_MAX;
  int best_p = -1;
  *tied = false;
  for (uint32_t m = 0; m < list.count; ++m) {
    const int p = gi.neighbour_ids[list.first + m];
    float d2 = 0;
    for (int j = 0; j < gi.n_coords; ++j) {
      const float diff = scale * table[gi.point_levels(p)[j]] - x[j];
      d2 += w[j] * diff * diff;
    }
    if (d2 < best) {
      best = d2;
      best_p = p;
      *tied = false;
    } else if (d2 == best) {
      *tied = true;
    }
  }
  return best_p;
}

TEST(IqGridIndex, VectorScoringMatchesScalarLoop) {
  const float iq1_table[8] = {-0.875f, 0.125f, 1.125f, 0, 0, 0, 0, 0};
  for (const auto& e : kGrids) {
    const GridIndex& gi = grid_index(e.grid);
    const float* table = e.grid == Grid::Iq1s ? iq1_table : kOddLevels;
    std::mt19937 rng(99);
    std::uniform_real_distribution<float> ud(0.f, 1.f);
    int ties = 0;
    for (int trial = 0; trial < 4000; ++trial) {
      uint32_t key;
      do {
        key = 0;
        for (int j = 0; j < e.n_coords; ++j) key |= (rng() % (e.max_level + 1)) << (e.bits * j);
      } while (gi.map[key] >= 0);
      float x[8], w[8];
      // Half the trials use coarse values and equal weights, which makes equal scores common.
      const bool coarse = trial % 2 == 0;
      for (int j = 0; j < e.n_coords; ++j) {
        x[j] = coarse ? static_cast<float>(rng() % 4) : ud(rng) * 10;
        w[j] = coarse ? 1.f : ud(rng);
      }
      const float scale = coarse ? 1.f : 0.5f + ud(rng);
      bool tied;
      const int want = scalar_best(gi, key, x, w, scale, table, &tied);
      ties += tied ? 1 : 0;
      int got;
      if (e.n_coords == 8) {
        got = best_neighbour<8>(gi, key, x, w, scale, table);
      } else {
        got = best_neighbour<4>(gi, key, x, w, scale, table);
      }
      ASSERT_EQ(got, want) << "grid " << e.n_points << " key " << key << " trial " << trial;
    }
    EXPECT_GT(ties, 100);
  }
}

}  // namespace
}  // namespace k3::quant::iq
