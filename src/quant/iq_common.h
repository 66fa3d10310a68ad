// quant/iq_common: scalar helpers and per-row entry points shared by the grid quantizers.
// Contract: the helpers reproduce ggml's reference arithmetic bit for bit (binary32, no FMA
// contraction — every file that includes this header and does float math starts with
// `#pragma GCC optimize("fp-contract=off")`; the ground rules are in docs/quant-formats.md).
// x86 intrinsics only behind K3_SIMD_X86, each beside a bit-identical portable twin.
// The row functions quantize one row of n floats (n a multiple of 256) into n/256 blocks;
// `qw` is the importance vector for that row (n floats) or null where the type allows it.
// Inputs are assumed finite (quantize_iq validates them).
#pragma once

#if defined(K3_SIMD_X86)
#include <immintrin.h>
#endif

#include <bit>
#include <cstdint>
#include <cstring>

#include "quant/block_bits.h"
#include "quant/blocks.h"
#include "quant/codec.h"

namespace k3::quant::iq {

inline constexpr int kSuperBlock = 256;  // QK_K

using blk::store_block;
using blk::store_u16;
using blk::store_u32;
// Round to nearest, ties to even, via the 1.5·2^23 magic add, exactly as ggml's nearest_int.
using detail::nearest_int;

// IEEE binary16, round to nearest even, exactly as F16C's vcvtps2ph does it (a NaN keeps its sign
// and top payload bits and is made quiet); for finite input this is fp32_to_fp16.
inline uint16_t to_f16_portable(float v) {
  const uint32_t x = std::bit_cast<uint32_t>(v);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7e00u | ((x >> 13) & 0x3ffu));
  return fp32_to_fp16(v);
}

// ggml's GGML_FP32_TO_FP16: F16C where the build has it, else its twin.
inline uint16_t to_f16(float v) {
#if defined(K3_SIMD_X86)
  return static_cast<uint16_t>(_cvtss_sh(v, 0));
#else
  return to_f16_portable(v);
#endif
}

// ggml's MAX(a, b): a > b ? a : b (the operand order matters only for NaN/-0).
inline float max_of(float a, float b) { return a > b ? a : b; }

void quantize_row_iq2_xxs(const float* x, uint8_t* y, int64_t n, const float* qw);
void quantize_row_iq2_xs(const float* x, uint8_t* y, int64_t n, const float* qw);
void quantize_row_iq2_s(const float* x, uint8_t* y, int64_t n, const float* qw);
void quantize_row_iq3_xxs(const float* x, uint8_t* y, int64_t n, const float* qw);
void quantize_row_iq3_s(const float* x, uint8_t* y, int64_t n, const float* qw);
void quantize_row_iq1_s(const float* x, uint8_t* y, int64_t n, const float* qw);
void quantize_row_iq1_m(const float* x, uint8_t* y, int64_t n, const float* qw);

}  // namespace k3::quant::iq
