// quant/dequant_fp4: decoders of the FP4 (E2M1) types MXFP4 (E8M0 block scale) and NVFP4
// (UE4M3 scale per 16 elements). Both use the doubled E2M1 table, hence "half" scales (the
// encodings are in docs/quant-formats.md).
#include "quant/fp_strict.h"  // first: no FMA contraction in this file

#include <bit>
#include <cmath>

#include "quant/codebooks.h"
#include "quant/dequant_blocks.h"

namespace k3::quant::detail {

float e8m0_half(uint8_t e) {
  // 2^(e-128) as exact f32 bits; e < 2 lands in the subnormal range.
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (uint32_t(e - 1) << 23);
  return std::bit_cast<float>(bits);
}

namespace {

// Half of the UE4M3 value (bit 7 ignored; 0x00 and 0x7F are zero).
float ue4m3_half(uint8_t raw) {
  const int v = raw & 0x7F;
  if (v == 0 || v == 0x7F) return 0.f;
  const int exp = v >> 3, man = v & 7;
  const float value = exp == 0 ? std::ldexp(float(man), -9) : std::ldexp(float(8 + man), exp - 10);
  return value * 0.5f;
}

}  // namespace

void dequant_mxfp4(const uint8_t* b, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, b += 17, y += 32) {
    const float d = e8m0_half(b[0]);
    const uint8_t* qs = b + 1;
    for (int j = 0; j < 16; ++j) {
      y[j] = float(kValuesFp4[qs[j] & 0xF]) * d;
      y[j + 16] = float(kValuesFp4[qs[j] >> 4]) * d;
    }
  }
}

void dequant_nvfp4(const uint8_t* b, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, b += 36) {
    const uint8_t* qs = b + 4;
    for (int s = 0; s < 4; ++s, y += 16) {
      const float ds = ue4m3_half(b[s]);
      for (int j = 0; j < 8; ++j) {
        y[j] = float(kValuesFp4[qs[8 * s + j] & 0xF]) * ds;
        y[j + 8] = float(kValuesFp4[qs[8 * s + j] >> 4]) * ds;
      }
    }
  }
}

}  // namespace k3::quant::detail
