// quant/fp16: exact scalar conversions between f32 and IEEE binary16 / bfloat16.
// Contract (docs/quant-formats.md): decoding is exact for every input (subnormals, ±0, Inf, NaN
// payloads); f32→f16 rounds to nearest even without flushing, overflows to ±Inf, and turns any NaN
// into 0x7E00 with the input's sign; f32→bf16 rounds to nearest even and forces NaNs quiet.
#include "quant/fp_strict.h"  // first: no FMA contraction in this file

#include <bit>
#include <cstdint>

#include "quant/codec.h"

namespace k3::quant {

float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ff;
  if (exp == 0) {
    // Subnormal (or zero): man · 2^-24 is exact in binary32.
    const float mag = float(man) * 0x1p-24f;
    return std::bit_cast<float>(std::bit_cast<uint32_t>(mag) | sign);
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t fp32_to_fp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const uint32_t mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return sign | 0x7e00;  // NaN
  // 65520 (0x477ff000) is the tie between 65504 (odd mantissa) and 2^16, so it and everything
  // above rounds to infinity.
  if (mag >= 0x477ff000u) return sign | 0x7c00;
  if (mag < 0x38800000u) {
    // Result is an f16 subnormal or zero: count units of 2^-24 with round-to-nearest-even.
    if (mag <= 0x33000000u) return sign;  // ≤ 2^-25: rounds to zero (the tie goes to even 0)
    const uint32_t e = mag >> 23;
    const uint32_t m = (mag & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // value = m · 2^(e-150) = (m >> shift) units of 2^-24
    const uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    const uint32_t r = q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
    return uint16_t(sign | r);  // r may reach 0x400, which is exactly the smallest normal
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits; a carry correctly
  // propagates into the exponent.
  const uint32_t base = ((mag >> 23) - 112) << 10 | ((mag >> 13) & 0x3ff);
  const uint32_t rem = mag & 0x1fff;
  const uint32_t r = base + ((rem > 0x1000 || (rem == 0x1000 && (base & 1))) ? 1 : 0);
  return uint16_t(sign | r);
}

float bf16_to_fp32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

uint16_t fp32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);
  return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

}  // namespace k3::quant
