// kernels/act_quant: the activation formats the quantized dot products consume, made ONCE per
// activation row and reused against every weight row (docs/quant-formats.md: activation
// formats and the dot-product pairing).
// Contract: quantize_act_q8_0 makes one BlockQ8_0A per 32 inputs: d = amax/127,
// qs = round-half-away(x·(1/d)) ∈ [−127, 127] (ggml's reference Q8_0 rule), d kept as f32 (ggml
// rounds it to f16; we keep the extra precision, it costs nothing). quantize_act_q8_k makes one
// BlockQ8KA per 256 inputs with ggml's quantize_row_q8_K_ref rule (the element of largest |x|
// maps to −127, ties to even) and bsums[i] = Σ qs[16i..16i+15]. n must be a multiple of the block.
#pragma once

#include <cstddef>
#include <cstdint>

namespace k3::kernels {

struct BlockQ8_0A {
  float d;
  int8_t qs[32];
};
static_assert(sizeof(BlockQ8_0A) == 36);

struct BlockQ8KA {
  float d;
  int16_t bsums[16];
  int8_t qs[256];
};
static_assert(sizeof(BlockQ8KA) == 292);

void quantize_act_q8_0(const float* x, BlockQ8_0A* y, int64_t n);
void quantize_act_q8_k(const float* x, BlockQ8KA* y, int64_t n);
// Plain-C twins of the (AVX2) functions above; the results are identical byte for byte.
void quantize_act_q8_0_scalar(const float* x, BlockQ8_0A* y, int64_t n);
void quantize_act_q8_k_scalar(const float* x, BlockQ8KA* y, int64_t n);

}  // namespace k3::kernels
