// quant/iq_common: scalar helpers and per-row entry points shared by the grid quantizers.
// Contract: the helpers reproduce ggml's reference arithmetic bit for bit (binary32, no FMA
// contraction — every file that includes this header and does float math starts with
// `#pragma GCC optimize("fp-contract=off")`; the ground rules are in docs/quant-formats.md).
// The row functions quantize one row of n floats (n a multiple of 256) into n/256 blocks;
// `qw` is the importance vector for that row (n floats) or null where the type allows it.
// Inputs are assumed finite (quantize_iq validates them).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace k3::quant::iq {

inline constexpr int kSuperBlock = 256;  // QK_K

// Round to nearest, ties to even, via the 1.5·2^23 magic add (valid for |v| < 2^22), exactly
// as ggml's nearest_int; outside that range it returns the same garbage ggml does.
inline int nearest_int(float v) {
  const float t = v + 12582912.f;
  int32_t i;
  std::memcpy(&i, &t, sizeof(i));
  return (i & 0x007fffff) - 0x00400000;
}

// IEEE binary16 with round-to-nearest-even (F16C), as ggml's GGML_FP32_TO_FP16.
inline uint16_t to_f16(float v) { return static_cast<uint16_t>(_cvtss_sh(v, 0)); }

inline void store_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, sizeof(v)); }
inline void store_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, sizeof(v)); }

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
