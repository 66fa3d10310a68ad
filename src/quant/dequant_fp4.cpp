// quant/dequant_fp4: decoders of the FP4 (E2M1) types MXFP4 (E8M0 block scale) and NVFP4
// (UE4M3 scale per 16 elements). Both use the doubled E2M1 table, hence "half" scales (the
// encodings are in docs/quant-formats.md).
#include "quant/fp_strict.h"  // first: no FMA contraction in this file

#include <cmath>

#include "quant/block_bits.h"
#include "quant/codebooks.h"
#include "quant/dequant_blocks.h"

namespace k3::quant::detail {

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

void dequant_mxfp4(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i, y += 32) {
    const auto b = load_block<blk::MXFP4>(src, i);
    const float d = blk::e8m0_half(b.e);
    for (int j = 0; j < 16; ++j) {
      y[j] = float(kValuesFp4[b.qs[j] & 0xF]) * d;
      y[j + 16] = float(kValuesFp4[b.qs[j] >> 4]) * d;
    }
  }
}

void dequant_nvfp4(const uint8_t* src, float* y, int64_t nblocks) {
  for (int64_t i = 0; i < nblocks; ++i) {
    const auto b = load_block<blk::NVFP4>(src, i);
    for (int s = 0; s < 4; ++s, y += 16) {
      const float ds = ue4m3_half(b.d[s]);
      for (int j = 0; j < 8; ++j) {
        y[j] = float(kValuesFp4[b.qs[8 * s + j] & 0xF]) * ds;
        y[j + 8] = float(kValuesFp4[b.qs[8 * s + j] >> 4]) * ds;
      }
    }
  }
}

}  // namespace k3::quant::detail
