// quant/iq_grid_index: search structures over the quantizer-side grids of the i-quants.
// Contract: for each grid (IQ2_XXS/XS/S, IQ1_S/M, IQ3_XXS/S) grid_index() returns an immutable
// table, built on first use exactly once (std::call_once) and then shared by all threads:
//   * key(levels) -> grid point index, or the list of nearest grid points for an off-grid key.
//     A key packs one level per coordinate (2 bits for the 8-coordinate grids, 3 bits for the
//     4-coordinate IQ3 grids); a level l stands for the odd integer q = 2l+1.
//   * neighbours: all grid points whose squared distance (in q coordinates) to the key is among
//     the `nwant` smallest distinct distances, ordered by (distance, grid index) — the order in
//     which ggml's quantizers examine them (iq2xs_init_impl's kneighbors lists in ggml-quants.c).
// Grid indices are those of the codebooks (quant/codebooks.h), i.e. the stored format indices.
#pragma once

#include <cstdint>
#include <vector>

namespace k3::quant::iq {

enum class Grid : int { Iq2xxs = 0, Iq2xs, Iq2s, Iq1s, Iq3xxs, Iq3s, Count };

struct GridIndex {
  int n_points = 0;   // grid size
  int n_coords = 0;   // 8 (2-bit grids) or 4 (IQ3 grids)
  int key_bits = 0;   // bits per coordinate in a key (2 or 3)
  int max_level = 0;  // largest level a quantizer produces (2 or 7)
  // levels[p * n_coords + j]: level of coordinate j of grid point p.
  std::vector<int8_t> levels;
  // q[p * n_coords + j] = 2 * level + 1 as float (what the distance searches use).
  std::vector<float> q;
  // map[key] >= 0: the grid point with exactly these levels; otherwise -(list + 1), where
  // lists[list] describes the nearest points of that off-grid key.
  std::vector<int32_t> map;
  struct List {
    uint32_t first;  // into neighbour_ids
    uint32_t count;
    uint32_t lanes;  // into lanes: ceil(count/8) chunks of n_coords words
  };
  std::vector<List> lists;
  std::vector<uint16_t> neighbour_ids;
  // Levels of the neighbours transposed for 8-wide evaluation: word (chunk c, coordinate j)
  // holds the level of neighbour 8c+m in bits 4m..4m+3 (zero past the end of the list).
  // Nibbles keep the tables small enough to stay in cache.
  std::vector<uint32_t> lanes;

  const List& list_of(uint32_t key) const { return lists[-map[key] - 1]; }
  const int8_t* point_levels(int p) const { return levels.data() + p * n_coords; }
  const float* point_q(int p) const { return q.data() + p * n_coords; }
};

// The (lazily built, then immutable) index of one grid. Thread-safe.
const GridIndex& grid_index(Grid g);

}  // namespace k3::quant::iq
