// kernels/decode_layout: a second encoding of IQ1_M rows for one-token (decode) products, made
// in memory from the file's blocks where there is room for it (the mapped expert store,
// model/expert_source.h). Why: IQ1_M stores 8 weights as an 11-bit index into a 2048-entry
// grid, so every 64 weights cost a table gather, and the decode kernel runs at ~4 GB/s per
// core, a tenth of the memory's speed. Here the grid values are written out, 2 bits each; the
// kernel then needs only shifts and a byte shuffle (bench/RESULTS.md has the measurements).
// Per 256 weights, 80 bytes instead of 56:
//   codes[64]   grid value + 1 (0, 1 or 2) of each weight in 2 bits: weight 64p + 16k + j
//               (p, k < 4, j < 16) in bits 2k..2k+1 of byte 16p + j, so one 16-byte broadcast
//               and one shift per 128-bit lane put a quarter's 64 codes in weight order;
//   delta_plus  bit m set when the 4 weights 4m..4m+3 take the delta +1/8 (IQ1_M's delta
//               sign bit clear; each 8-weight group sets two bits);
//   scales[8]   IQ1_M's scales field as it is (3-bit sub-block scales, the f16 d in the
//               top nibbles).
// Contract: repack_for_decode writes whole super-blocks; a decode-layout product computes
// IQ1_M's integer sums to the bit and scales them in the same order, so its results equal the
// file layout's kernel bit for bit (the SIMD kernel the SIMD kernel, the scalar twin
// dot_iq1_m_scalar). Types without a decode layout: decode_row_bytes() is 0.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace k3::kernels {

struct Iq1mDecodeBlock {
  uint8_t codes[64];
  uint64_t delta_plus;
  uint8_t scales[8];
};
static_assert(sizeof(Iq1mDecodeBlock) == 80);

// Bytes of one row of `cols` weights of type t in its decode layout; 0 where t has none.
size_t decode_row_bytes(quant::Type t, int64_t cols);

// Rewrites n_blocks consecutive super-blocks of type t (one that has a decode layout) from
// src (file layout) to dst (decode layout). Rows are whole super-blocks, so a run of rows is
// one call.
void repack_for_decode(quant::Type t, const void* src, void* dst, int64_t n_blocks);

// The plain-C one-token product over a row in the decode layout: dot_iq1_m_scalar's result,
// bit for bit (the reference the SIMD kernel is tested against).
float dot_iq1_m_decode_scalar(int64_t n, const void* w, const void* act);

}  // namespace k3::kernels
