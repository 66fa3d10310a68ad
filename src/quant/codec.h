// quant/codec: block dequantization and reference quantization for every file type.
// Contract: dequantize_row is bit-exact with ggml's reference dequantizers
// (docs/quant-formats.md, vectors in tests/data/formats). quantize_rows reproduces ggml's
// reference quantizers (ggml-quants.c), optionally weighted by an importance matrix (one weight
// per column, n_per_row floats). n / n_per_row must be multiples of the type's block size;
// callers validate shapes first — a wrong shape or type still throws k3::Error rather than
// touching memory out of bounds.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace k3::quant {

// src: row of n elements in encoding t; dst: n floats.
void dequantize_row(Type t, const void* src, float* dst, int64_t n);
// Whether dequantize_row has a decoder for the type (all file types; not Q8_1/Q8_K).
bool can_dequantize(Type t);

// Whether the type can be produced by quantize_rows.
bool can_quantize(Type t);
// Whether llama-quantize refuses to quantize this type without an importance matrix
// (IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M; docs/quant-formats.md, importance matrix).
bool requires_imatrix(Type t);

// Quantizes nrows rows of n_per_row floats into dst (row_bytes(t, n_per_row) each).
// imatrix may be null. Returns the bytes written. Throws k3::Error if the type cannot be
// quantized, needs an imatrix that was not given, or src holds NaN/Inf (block types).
size_t quantize_rows(Type t, const float* src, void* dst, int64_t nrows, int64_t n_per_row,
                     const float* imatrix);

// Scalar conversions used throughout (IEEE half, bfloat16, E8M0 exponent).
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);  // round to nearest even, as F16C does
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);  // round to nearest even, NaN kept quiet

}  // namespace k3::quant
