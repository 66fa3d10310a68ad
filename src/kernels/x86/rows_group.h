// kernels/x86/rows_group: what the multi-row decode kernels (DotRowsFn, vec_dot.h) of the
// AVX2 (vec_dot_iquants.cpp) and AVX-512 (vec_dot_avx512.cpp) builds share: the L2 prefetch
// distance of a block, for one row or a group of rows read side by side, and the driver that
// runs whole groups and then the remaining rows one at a time.
// Internal linkage, like simd.h: each including file is compiled for its own target and keeps
// its own copy.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace k3::kernels::impl {
namespace {

// Decode reads expert matrices of a few hundred KiB, each cold, at only 3–15 GB/s per core;
// the hardware prefetchers ramp up too slowly for that, so each block asks for the line 2 KiB
// ahead into L2 (streaming IQ1_M measured ~25 % faster than without; into L2 rather than L1
// another ~3 %, as for Q8_0 in q8_loops.h).
constexpr size_t kPfAhead = 2048;

// A group of R rows reads them side by side, so 2 KiB past a block is mostly the next row of
// the same group, already on its way; each block instead asks for itself whole groups ahead
// (at least 2 KiB). Without this, 4-row groups over 7168-wide IQ1_M rows streamed ~15 % slower
// than one row at a time. One row (R = 1) needs no row stride.
template <int R>
size_t prefetch_distance(size_t rs) {
  if constexpr (R == 1) return kPfAhead;
  const size_t g = R * rs;
  return g * ((kPfAhead + g - 1) / g);
}

inline void prefetch_at(const void* p, size_t ahead) {
  _mm_prefetch(static_cast<const char*>(p) + ahead, _MM_HINT_T1);
}

// Rows [0, n_rows) of a matrix with row stride rs: Group over kRows rows at a time, One (the
// same kernel over one row) for the rest.
using RowsKernel = void (*)(int64_t n, const uint8_t* w, size_t rs, const void* act, float* out);

template <int kRows, RowsKernel Group, RowsKernel One>
void rows_by_group(int64_t n, const void* w, size_t rs, int64_t n_rows, const void* act, float* out) {
  const uint8_t* p = static_cast<const uint8_t*>(w);
  int64_t r = 0;
  for (; r + kRows <= n_rows; r += kRows) Group(n, p + r * rs, rs, act, out + r);
  for (; r < n_rows; ++r) One(n, p + r * rs, rs, act, out + r);
}

}  // namespace
}  // namespace k3::kernels::impl
