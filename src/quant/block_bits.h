// quant/block_bits: little helpers shared by the block codecs (internal to k3_quant).
// Contract: unaligned little-endian loads/stores of block fields, and nearest_int with the exact
// semantics of the reference quantizers (ties to even via the 1.5·2^23 magic add, valid
// for |v| < 2^22; outside that range it returns what the reference returns, not a clamp).
#pragma once

#include <cstdint>
#include <cstring>

#include "quant/codec.h"

namespace k3::quant::detail {

inline uint16_t load_u16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline uint32_t load_u32(const uint8_t* p) {
  return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
inline void store_u16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}
inline void store_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline float load_f16(const uint8_t* p) { return fp16_to_fp32(load_u16(p)); }
inline void store_f16(uint8_t* p, float v) { store_u16(p, fp32_to_fp16(v)); }

// The stored f16 value as the reference re-reads it (f32(f16(x))).
inline float round_f16(float v) { return fp16_to_fp32(fp32_to_fp16(v)); }

inline int nearest_int(float v) {
  // Adding 1.5·2^23 pushes the integer part into the low mantissa bits with the FPU's
  // round-to-nearest-even; the quantizers depend on exactly this rounding.
  const float shifted = v + 12582912.f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

}  // namespace k3::quant::detail
