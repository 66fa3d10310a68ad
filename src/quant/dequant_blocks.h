// quant/dequant_blocks: per-type block decoders behind dequantize_row (internal to k3_quant).
// Contract: each decodes nblocks consecutive blocks of its type (the layouts of quant/blocks.h,
// src of any alignment) into nblocks·block_elems floats, bit-exact with ggml.
#pragma once

#include <cstdint>

namespace k3::quant::detail {

using DequantFn = void (*)(const uint8_t* src, float* y, int64_t nblocks);

// dequant_legacy.cpp: 32-element types.
void dequant_q4_0(const uint8_t* src, float* y, int64_t nblocks);
void dequant_q4_1(const uint8_t* src, float* y, int64_t nblocks);
void dequant_q5_0(const uint8_t* src, float* y, int64_t nblocks);
void dequant_q5_1(const uint8_t* src, float* y, int64_t nblocks);
void dequant_q8_0(const uint8_t* src, float* y, int64_t nblocks);
void dequant_iq4_nl(const uint8_t* src, float* y, int64_t nblocks);

// dequant_kquants.cpp: 256-element k-quant super-blocks.
void dequant_q2_k(const uint8_t* src, float* y, int64_t nblocks);
void dequant_q3_k(const uint8_t* src, float* y, int64_t nblocks);
void dequant_q4_k(const uint8_t* src, float* y, int64_t nblocks);
void dequant_q5_k(const uint8_t* src, float* y, int64_t nblocks);
void dequant_q6_k(const uint8_t* src, float* y, int64_t nblocks);

// dequant_iquants.cpp: grid types and IQ4_XS.
void dequant_iq2_xxs(const uint8_t* src, float* y, int64_t nblocks);
void dequant_iq2_xs(const uint8_t* src, float* y, int64_t nblocks);
void dequant_iq2_s(const uint8_t* src, float* y, int64_t nblocks);
void dequant_iq3_xxs(const uint8_t* src, float* y, int64_t nblocks);
void dequant_iq3_s(const uint8_t* src, float* y, int64_t nblocks);
void dequant_iq1_s(const uint8_t* src, float* y, int64_t nblocks);
void dequant_iq1_m(const uint8_t* src, float* y, int64_t nblocks);
void dequant_iq4_xs(const uint8_t* src, float* y, int64_t nblocks);

// dequant_fp4.cpp: FP4 (E2M1) types.
void dequant_mxfp4(const uint8_t* src, float* y, int64_t nblocks);
void dequant_nvfp4(const uint8_t* src, float* y, int64_t nblocks);

// dequant_lowbit.cpp: ternary and 1/2-bit types.
void dequant_tq1_0(const uint8_t* src, float* y, int64_t nblocks);
void dequant_tq2_0(const uint8_t* src, float* y, int64_t nblocks);
void dequant_q1_0(const uint8_t* src, float* y, int64_t nblocks);
void dequant_q2_0(const uint8_t* src, float* y, int64_t nblocks);

}  // namespace k3::quant::detail
