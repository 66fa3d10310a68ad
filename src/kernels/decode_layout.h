// kernels/decode_layout: a second encoding of the grid-type expert rows (IQ1_M, IQ2_XXS) for
// one-token (decode) products, made in memory from the file's blocks where there is room for it
// (the mapped expert store, model/expert_source.h). Why: these types store 8 weights as an
// index into a grid (IQ1_M: 11 bits into 2048 entries; IQ2_XXS: 8 bits into 256, with 7-bit
// sign indices), so every 8 weights cost a table lookup and the decode kernels run at 4–5 GB/s
// per core, a tenth of the memory's speed. Here the grid values are written out; the kernels
// then need only shifts and byte shuffles (bench/RESULTS.md has the measurements).
// IQ1_M, per 256 weights 80 bytes instead of 56:
//   codes[64]   grid value + 1 (0, 1 or 2) of each weight in 2 bits: weight 64p + 16k + j
//               (p, k < 4, j < 16) in bits 2k..2k+1 of byte 16p + j, so one 16-byte broadcast
//               and one shift per 128-bit lane put a quarter's 64 codes in weight order;
//   delta_plus  bit m set when the 4 weights 4m..4m+3 take the delta +1/8 (IQ1_M's delta
//               sign bit clear; each 8-weight group sets two bits);
//   scales[8]   IQ1_M's scales field as it is (3-bit sub-block scales, the f16 d in the
//               top nibbles).
// IQ1_S rows take IQ1_M's layout (80 bytes instead of 50): each scale of 32 weights serves
// both its sub-blocks of 16, its delta sign all four groups, d the top nibbles; IQ1_M's
// kernels then give IQ1_S's results bit for bit.
// IQ2_XXS, per 256 weights 144 bytes instead of 66 (only where a kernel needs it: the AVX2
// build; AVX-512 decodes the file's layout as fast):
//   w[128]      per group g of 32 weights, 16 bytes: byte j holds weight 32g + j in bits 0..2
//               and weight 32g + 16 + j in bits 4..6, each as its grid byte's code (8, 25, 43
//               → 0, 1, 2) | its sign << 2; bits 3 and 7 stay clear, so a byte or its high
//               nibble shifted down is a 16-entry pshufb index as it stands;
//   ls[8]       the group scales 2s + 1;
//   d           the f16 d as a float (exact); 4 bytes of padding make the block 9·16 bytes, so
//               no 16-byte load of a 16-aligned row splits a cache line.
// Contract: repack_for_decode writes whole super-blocks; a decode-layout product computes the
// type's integer sums to the bit and scales them in the same order, so its results equal the
// file layout's kernel bit for bit (the SIMD kernel the SIMD kernel, the scalar twin the
// type's scalar twin). Types without a decode layout: decode_row_bytes() is 0.
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

struct Iq2xxsDecodeBlock {
  uint8_t w[128];
  uint8_t ls[8];
  float d;
  uint8_t pad[4];
};
static_assert(sizeof(Iq2xxsDecodeBlock) == 144);

// Bytes of one row of `cols` weights of type t in its decode layout; 0 where t has none.
size_t decode_row_bytes(quant::Type t, int64_t cols);

// Rewrites n_blocks consecutive super-blocks of type t (one that has a decode layout) from
// src (file layout) to dst (decode layout). Rows are whole super-blocks, so a run of rows is
// one call.
void repack_for_decode(quant::Type t, const void* src, void* dst, int64_t n_blocks);

// The plain-C one-token products over a row in the decode layout: dot_iq1_m_scalar's (and, for
// rewritten IQ1_S rows, dot_iq1_s_scalar's) and dot_iq2_xxs_scalar's results, bit for bit (the
// references the SIMD kernels are tested against).
float dot_iq1_m_decode_scalar(int64_t n, const void* w, const void* act);
float dot_iq2_xxs_decode_scalar(int64_t n, const void* w, const void* act);

}  // namespace k3::kernels
