// quant/codec: block dequantization and reference quantization for every file type.
// Contract: dequantize_row is bit-exact with ggml's reference dequantizers
// (../research/ggml-formats.md §2, vectors in tests/data/formats). quantize_rows reproduces
// ggml's reference quantizers (§3), optionally weighted by an importance matrix (one weight
// per column, n_per_row floats). n / n_per_row must be multiples of the type's block size;
// callers validate shapes first (these functions assert, they do not throw).
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace k3::quant {

// src: row of n elements in encoding t; dst: n floats.
void dequantize_row(Type t, const void* src, float* dst, int64_t n);

// Whether the type can be produced by quantize_rows.
bool can_quantize(Type t);
// Whether ggml refuses to quantize this type without an importance matrix.
bool requires_imatrix(Type t);

// Quantizes nrows rows of n_per_row floats into dst (row_bytes(t, n_per_row) each).
// imatrix may be null. Returns the bytes written. Throws k3::Error if the type cannot be
// quantized or needs an imatrix that was not given.
size_t quantize_rows(Type t, const float* src, void* dst, int64_t nrows, int64_t n_per_row,
                     const float* imatrix);

// Scalar conversions used throughout (IEEE half, bfloat16, E8M0 exponent).
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);  // round to nearest even, as F16C does
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);  // round to nearest even, NaN kept quiet

}  // namespace k3::quant
