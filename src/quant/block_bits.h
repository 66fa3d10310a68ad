// quant/block_bits: little helpers shared by the block codecs (internal to k3_quant).
// Contract: the block layouts, the block copies and the field loads/stores are quant/blocks.h
// (blk::, brought into detail here). This adds nearest_int with the exact semantics of the
// reference quantizers (ties to even via the 1.5·2^23 magic add, valid for |v| < 2^22; outside
// that range it returns what the reference returns, not a clamp).
#pragma once

#include <cstdint>
#include <cstring>

#include "quant/blocks.h"
#include "quant/codec.h"

namespace k3::quant::detail {

using blk::load_block;
using blk::load_u16;
using blk::load_u32;
using blk::store_block;
using blk::store_u16;
using blk::store_u32;

inline int nearest_int(float v) {
  // Adding 1.5·2^23 pushes the integer part into the low mantissa bits with the FPU's
  // round-to-nearest-even; the quantizers depend on exactly this rounding.
  const float shifted = v + 12582912.f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

}  // namespace k3::quant::detail
