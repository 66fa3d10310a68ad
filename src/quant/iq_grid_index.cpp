// quant/iq_grid_index: builds the key map and neighbour lists of the i-quant grids (see header).
// The compact grids (kGrid*) hold one level per coordinate; ggml builds the same structures in
// iq2xs_init_impl / iq3xs_init_impl. Neighbour order must be (distance, index): the quantizers
// keep the first best candidate, so the order decides ties.
#include "quant/iq_grid_index.h"

#include <array>
#include <mutex>

#include "quant/codebooks.h"

namespace k3::quant::iq {
namespace {

struct GridSpec {
  const uint16_t* compact;
  int n_points;
  int n_coords;
  int key_bits;
  int max_level;
  int nwant;  // number of distinct nearest distances kept
};

GridSpec spec_of(Grid g) {
  switch (g) {
    case Grid::Iq2xxs: return {kGrid2bit256, 256, 8, 2, 2, 2};
    case Grid::Iq2xs: return {kGrid2bit512, 512, 8, 2, 2, 2};
    case Grid::Iq2s: return {kGrid2bit1024, 1024, 8, 2, 2, 1};
    case Grid::Iq1s: return {kGrid1bit2048, 2048, 8, 2, 2, 3};
    case Grid::Iq3xxs: return {kGrid3bit256, 256, 4, 3, 7, 2};
    case Grid::Iq3s: return {kGrid3bit512, 512, 4, 3, 7, 3};
    case Grid::Count: break;
  }
  return {nullptr, 0, 0, 0, 0, 0};
}

void build(GridIndex& gi, const GridSpec& s) {
  gi.n_points = s.n_points;
  gi.n_coords = s.n_coords;
  gi.key_bits = s.key_bits;
  gi.max_level = s.max_level;
  const uint32_t level_mask = (1u << s.key_bits) - 1;
  gi.levels.resize(static_cast<size_t>(s.n_points) * s.n_coords);
  gi.q.resize(gi.levels.size());
  const size_t key_space = size_t{1} << (s.key_bits * s.n_coords);
  gi.map.assign(key_space, -1);
  for (int p = 0; p < s.n_points; ++p) {
    for (int j = 0; j < s.n_coords; ++j) {
      const int l = static_cast<int>((s.compact[p] >> (s.key_bits * j)) & level_mask);
      gi.levels[p * s.n_coords + j] = static_cast<int8_t>(l);
      gi.q[p * s.n_coords + j] = static_cast<float>(2 * l + 1);
    }
    gi.map[s.compact[p]] = p;
  }

  // Neighbour lists only for keys a quantizer can produce (every level <= max_level); the
  // 2-bit grids never see level 3. Distances are in q = 2l+1 units, as in ggml.
  std::vector<int> dist(s.n_points);
  std::vector<int> key_levels(s.n_coords);
  for (size_t key = 0; key < key_space; ++key) {
    if (gi.map[key] >= 0) continue;
    bool valid = true;
    for (int j = 0; j < s.n_coords; ++j) {
      key_levels[j] = static_cast<int>((key >> (s.key_bits * j)) & level_mask);
      if (key_levels[j] > s.max_level) valid = false;
    }
    if (!valid) continue;
    for (int p = 0; p < s.n_points; ++p) {
      int d2 = 0;
      const int8_t* pl = gi.point_levels(p);
      for (int j = 0; j < s.n_coords; ++j) {
        const int diff = 2 * (pl[j] - key_levels[j]);
        d2 += diff * diff;
      }
      dist[p] = d2;
    }
    // The nwant smallest distinct distances, then every point at those distances, in
    // (distance, index) order — equal to ggml's qsort by (distance, index) and cut.
    GridIndex::List list{static_cast<uint32_t>(gi.neighbour_ids.size()), 0,
                         static_cast<uint32_t>(gi.lanes.size())};
    int last = -1;
    for (int have = 0; have < s.nwant; ++have) {
      int next = -1;
      for (int p = 0; p < s.n_points; ++p) {
        if (dist[p] > last && (next < 0 || dist[p] < next)) next = dist[p];
      }
      if (next < 0) break;
      for (int p = 0; p < s.n_points; ++p) {
        if (dist[p] == next) gi.neighbour_ids.push_back(static_cast<uint16_t>(p));
      }
      last = next;
    }
    list.count = static_cast<uint32_t>(gi.neighbour_ids.size() - list.first);
    const uint32_t chunks = (list.count + 7) / 8;
    gi.lanes.resize(gi.lanes.size() + static_cast<size_t>(chunks) * s.n_coords, 0);
    for (uint32_t m = 0; m < list.count; ++m) {
      const int8_t* pl = gi.point_levels(gi.neighbour_ids[list.first + m]);
      for (int j = 0; j < s.n_coords; ++j) {
        gi.lanes[list.lanes + (m / 8) * s.n_coords + j] |= static_cast<uint32_t>(pl[j]) << (4 * (m % 8));
      }
    }
    gi.map[key] = -static_cast<int32_t>(gi.lists.size()) - 1;
    gi.lists.push_back(list);
  }
  gi.neighbour_ids.shrink_to_fit();
  gi.lanes.shrink_to_fit();
}

constexpr int kGridCount = static_cast<int>(Grid::Count);
std::array<std::once_flag, kGridCount> g_once;
std::array<GridIndex, kGridCount> g_index;

}  // namespace

const GridIndex& grid_index(Grid g) {
  const int i = static_cast<int>(g);
  std::call_once(g_once[i], [i, g] { build(g_index[i], spec_of(g)); });
  return g_index[i];
}

}  // namespace k3::quant::iq
