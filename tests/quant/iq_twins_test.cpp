// The grid quantizer's SIMD forms against their portable twins (src/quant: best_neighbour,
// the IQ1_M split search, the F16C conversion), and the twins against plain brute-force
// formulations written out here. With K3_SIMD_X86 both comparisons run; the portable build runs
// the twins against the brute force. Inputs include coarse values and equal weights, so equal
// scores (ties) are common and the first-minimum / strict-improvement rules are exercised.
#pragma GCC optimize("fp-contract=off")  // the oracles must not be fused either

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <random>
#include <vector>

#include "quant/codec.h"
#include "quant/iq_common.h"
#include "quant/iq_grid_search.h"
#include "quant/iq_one_bit.h"

namespace k3::quant::iq {
namespace {

// ------------------------------------------------------------------ best_neighbour

// Brute force: every neighbour's score, then the first of the smallest (std::min_element keeps
// the first on ties). *tied tells whether another neighbour reached the same score.
int brute_best_neighbour(const GridIndex& gi, uint32_t key, const float* x, const float* w, float scale,
                         const float* table, bool* tied) {
  const auto& list = gi.list_of(key);
  std::vector<float> scores;
  for (uint32_t m = 0; m < list.count; ++m) {
    const int8_t* levels = gi.point_levels(gi.neighbour_ids[list.first + m]);
    float s = 0;
    for (int j = 0; j < gi.n_coords; ++j) {
      const float q = scale * table[levels[j]];
      s = s + (w[j] * (q - x[j])) * (q - x[j]);
    }
    scores.push_back(s);
  }
  const auto it = std::min_element(scores.begin(), scores.end());
  *tied = std::count(scores.begin(), scores.end(), *it) > 1;
  return gi.neighbour_ids[list.first + (it - scores.begin())];
}

struct NeighbourCase {
  uint32_t key;
  float x[8], w[8], scale;
};

NeighbourCase random_case(const GridIndex& gi, std::mt19937& rng, int trial) {
  std::uniform_real_distribution<float> ud(0.f, 1.f);
  NeighbourCase c{};
  do {
    c.key = 0;
    for (int j = 0; j < gi.n_coords; ++j) c.key |= (rng() % (gi.max_level + 1)) << (gi.key_bits * j);
  } while (gi.map[c.key] >= 0);
  // A third of the trials use small integers and equal weights, which makes equal scores common.
  const bool coarse = trial % 3 == 0;
  for (int j = 0; j < gi.n_coords; ++j) {
    c.x[j] = coarse ? static_cast<float>(rng() % 4) : ud(rng) * 10;
    c.w[j] = coarse ? 1.f : (trial % 3 == 1 ? ud(rng) : static_cast<float>(rng() % 3));
  }
  c.scale = coarse ? 1.f : 0.25f + 2 * ud(rng);
  return c;
}

const float kIq1Table[8] = {-0.875f, 0.125f, 1.125f, 0, 0, 0, 0, 0};
const Grid kGrids[] = {Grid::Iq2xxs, Grid::Iq2xs, Grid::Iq2s, Grid::Iq1s, Grid::Iq3xxs, Grid::Iq3s};

template <int NC>
int scalar_twin(const GridIndex& gi, const NeighbourCase& c, const float* table) {
  return best_neighbour_scalar<NC>(gi, c.key, c.x, c.w, c.scale, table);
}

TEST(IqTwins, BestNeighbourScalarTwinMatchesBruteForce) {
  for (const Grid g : kGrids) {
    const GridIndex& gi = grid_index(g);
    const float* table = g == Grid::Iq1s ? kIq1Table : kOddLevels;
    std::mt19937 rng(11 + static_cast<int>(g));
    int ties = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      const NeighbourCase c = random_case(gi, rng, trial);
      bool tied = false;
      const int want = brute_best_neighbour(gi, c.key, c.x, c.w, c.scale, table, &tied);
      ties += tied ? 1 : 0;
      const int got = gi.n_coords == 8 ? scalar_twin<8>(gi, c, table) : scalar_twin<4>(gi, c, table);
      ASSERT_EQ(got, want) << "grid " << static_cast<int>(g) << " trial " << trial;
    }
    EXPECT_GT(ties, 100) << "grid " << static_cast<int>(g);
  }
}

#if defined(K3_SIMD_X86)
TEST(IqTwins, BestNeighbourAvx2MatchesScalarTwin) {
  for (const Grid g : kGrids) {
    const GridIndex& gi = grid_index(g);
    const float* table = g == Grid::Iq1s ? kIq1Table : kOddLevels;
    std::mt19937 rng(23 + static_cast<int>(g));
    for (int trial = 0; trial < 5000; ++trial) {
      const NeighbourCase c = random_case(gi, rng, trial);
      int want, got;
      if (gi.n_coords == 8) {
        want = best_neighbour_scalar<8>(gi, c.key, c.x, c.w, c.scale, table);
        got = best_neighbour_avx2<8>(gi, c.key, c.x, c.w, c.scale, table);
      } else {
        want = best_neighbour_scalar<4>(gi, c.key, c.x, c.w, c.scale, table);
        got = best_neighbour_avx2<4>(gi, c.key, c.x, c.w, c.scale, table);
      }
      ASSERT_EQ(got, want) << "grid " << static_cast<int>(g) << " trial " << trial;
    }
  }
}
#endif

// ------------------------------------------------------------------ IQ1_M split search

struct Split {
  float scale;
  int i1, i2, k;
  bool operator==(const Split& o) const {
    return std::bit_cast<uint32_t>(scale) == std::bit_cast<uint32_t>(o.scale) && i1 == o.i1 && i2 == o.i2 &&
           k == o.k;
  }
};

std::ostream& operator<<(std::ostream& os, const Split& s) {
  return os << "{scale " << s.scale << ", i1 " << s.i1 << ", i2 " << s.i2 << ", k " << s.k << "}";
}

// Brute force: for each candidate, the level and delta-shifted value of every element written
// out, and the two sums accumulated in sorted order. *ties counts candidates that equalled the
// best score so far without beating it.
Split brute_split(const float* xb, const float* w, const int* idx, Split start, int* ties) {
  constexpr float kXp[3] = {-0.875f, 0.125f, 1.125f};
  constexpr float kXm[3] = {-1.125f, -0.125f, 0.875f};
  Split best = start;
  float best_score = -FLT_MAX;
  for (int i1 = 0; i1 <= 16; ++i1) {
    for (int i2 = i1; i2 <= 16; ++i2) {
      for (int k = 0; k < 4; ++k) {
        float sumqx = 0, sumq2 = 0;
        for (int j = 0; j < 16; ++j) {
          const int i = idx[j];
          const int level = j < i1 ? 0 : j < i2 ? 1 : 2;
          const bool minus = i < 8 ? k >= 2 : k % 2 == 1;  // k = (first 8, last 8): ++, +-, -+, --
          const float v = (minus ? kXm : kXp)[level];
          sumqx = sumqx + (w[i] * v) * xb[i];
          sumq2 = sumq2 + (w[i] * v) * v;
        }
        if (sumq2 > 0 && sumqx * sumqx == best_score * sumq2) ++*ties;
        if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
          best.scale = sumqx / sumq2;
          best_score = best.scale * sumqx;
          best.i1 = i1;
          best.i2 = i2;
          best.k = k;
        }
      }
    }
  }
  return best;
}

struct SplitCase {
  float x[16], w[16];
  int idx[16];
};

SplitCase random_split_case(std::mt19937& rng, int trial) {
  std::normal_distribution<float> nd(0.f, 1.f);
  SplitCase c{};
  const int kind = trial % 4;
  for (int i = 0; i < 16; ++i) {
    // 0: Gaussian values and importance-like weights; 1: small integers, equal weights (ties);
    // 2: x² weights as without an importance matrix; 3: some weights zero.
    c.x[i] = kind == 1 ? static_cast<float>(static_cast<int>(rng() % 5) - 2) : nd(rng);
    c.w[i] = kind == 1   ? 1.f
             : kind == 2 ? c.x[i] * c.x[i]
                         : (kind == 3 && rng() % 2 ? 0.f : std::fabs(nd(rng)));
  }
  if (trial % 97 == 5) std::fill(c.w, c.w + 16, 0.f);  // no candidate: outputs untouched
  // Positions sorted by value, equal values in index order (as the quantizer sorts).
  for (int i = 0; i < 16; ++i) c.idx[i] = i;
  std::stable_sort(c.idx, c.idx + 16, [&](int a, int b) { return c.x[a] < c.x[b]; });
  return c;
}

template <void (*Search)(const float*, const float*, const int*, float&, int&, int&, int&)>
Split run_split(const SplitCase& c) {
  Split s{-7.f, -1, -1, -1};
  Search(c.x, c.w, c.idx, s.scale, s.i1, s.i2, s.k);
  return s;
}

TEST(IqTwins, Iq1mSplitSearchScalarTwinMatchesBruteForce) {
  std::mt19937 rng(5);
  int ties = 0, untouched = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const SplitCase c = random_split_case(rng, trial);
    const Split want = brute_split(c.x, c.w, c.idx, Split{-7.f, -1, -1, -1}, &ties);
    untouched += want.i1 < 0 ? 1 : 0;
    ASSERT_EQ(run_split<iq1m_split_search_scalar>(c), want) << "trial " << trial;
  }
  EXPECT_GT(ties, 1000);
  EXPECT_GT(untouched, 10);
}

#if defined(K3_SIMD_X86)
TEST(IqTwins, Iq1mSplitSearchAvx2MatchesScalarTwin) {
  std::mt19937 rng(6);
  for (int trial = 0; trial < 4000; ++trial) {
    const SplitCase c = random_split_case(rng, trial);
    ASSERT_EQ(run_split<iq1m_split_search_avx2>(c), run_split<iq1m_split_search_scalar>(c))
        << "trial " << trial;
  }
}
#endif

// ------------------------------------------------------------------ f32 -> f16

// Random bit patterns, half of them in the f16 range, plus NaNs with payloads (quiet and
// signalling) and the rounding edges.
std::vector<float> f16_inputs() {
  std::vector<float> v;
  std::mt19937 rng(16);
  for (int i = 0; i < 400000; ++i) {
    uint32_t b = static_cast<uint32_t>(rng());
    if (i % 2) b = (b & 0x807fffffu) | ((100u + (b >> 8) % 46) << 23);
    if (i % 17 == 0) b |= 0x7f800000u;  // Inf or NaN with this payload
    v.push_back(std::bit_cast<float>(b));
  }
  for (uint32_t b : {0x7f800001u, 0xff800001u, 0x7fc00000u, 0xffffffffu, 0x7fbfe000u, 0x7f802000u,
                     0x477ff000u, 0x477fefffu, 0x33000000u, 0x33000001u, 0x80000000u})
    v.push_back(std::bit_cast<float>(b));
  return v;
}

TEST(IqTwins, ToF16PortableIsRoundToNearestEvenWithF16cNans) {
  int nans = 0;
  for (const float f : f16_inputs()) {
    const uint32_t b = std::bit_cast<uint32_t>(f);
    const uint16_t got = to_f16_portable(f);
    if ((b & 0x7fffffffu) > 0x7f800000u) {
      ++nans;
      // Sign, all-ones exponent, quiet bit, the payload's top nine bits.
      ASSERT_EQ(got, static_cast<uint16_t>((b >> 16 & 0x8000u) | 0x7e00u | (b >> 13 & 0x1ffu)))
          << std::hex << b;
    } else {
      ASSERT_EQ(got, fp32_to_fp16(f)) << std::hex << b;
    }
  }
  EXPECT_GT(nans, 10000);
  EXPECT_EQ(to_f16_portable(1.0f), 0x3c00);
  EXPECT_EQ(to_f16_portable(std::bit_cast<float>(0x7f800001u)), 0x7e00);
  EXPECT_EQ(to_f16_portable(std::bit_cast<float>(0xffffffffu)), 0xffff);
}

#if defined(K3_SIMD_X86)
TEST(IqTwins, ToF16MatchesF16c) {
  for (const float f : f16_inputs()) {
    ASSERT_EQ(to_f16_portable(f), to_f16(f)) << std::hex << std::bit_cast<uint32_t>(f);
  }
}
#endif

}  // namespace
}  // namespace k3::quant::iq
