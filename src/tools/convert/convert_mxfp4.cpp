// tools/convert_mxfp4: the lossless HF (compressed-tensors "mxfp4-pack-quantized") ↔ GGUF
// MXFP4 block repack (see convert.h). Both layouts share the E2M1 codes and the E8M0 exponent
// byte (ggml's doubled table with scale 2^(e-128) equals E2M1 · 2^(e-127)); only the nibble
// order differs: HF packs neighbours (2i, 2i+1) per byte, ggml pairs element j with j+16
// (ggml's block_mxfp4; docs/quant-formats.md).
#include <cstdint>

#include "tools/convert/convert.h"

namespace k3::tools {

void repack_mxfp4_row(const uint8_t* packed, const uint8_t* scales, int64_t cols, uint8_t* dst) {
  const int64_t nb = cols / 32;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* p = packed + b * 16;  // 32 codes of this block
    uint8_t* o = dst + b * 17;
    o[0] = scales[b];
    for (int j = 0; j < 16; ++j) {
      const uint8_t lo = (p[j / 2] >> ((j & 1) * 4)) & 0x0F;                // element j
      const uint8_t hi = (p[(j + 16) / 2] >> (((j + 16) & 1) * 4)) & 0x0F;  // element j+16
      o[1 + j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void unpack_mxfp4_row(const uint8_t* blocks, int64_t cols, uint8_t* packed, uint8_t* scales) {
  const int64_t nb = cols / 32;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* in = blocks + b * 17;
    scales[b] = in[0];
    uint8_t codes[32];
    for (int j = 0; j < 16; ++j) {
      codes[j] = in[1 + j] & 0x0F;
      codes[j + 16] = in[1 + j] >> 4;
    }
    for (int i = 0; i < 16; ++i)
      packed[b * 16 + i] = static_cast<uint8_t>(codes[2 * i] | (codes[2 * i + 1] << 4));
  }
}

}  // namespace k3::tools
