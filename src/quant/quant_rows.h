// quant/quant_rows: per-row reference quantizers behind quantize_rows (internal to k3_quant).
// Contract: each quantizes one row of n floats (n a multiple of the block size) into
// row_bytes(type, n) bytes, byte-identical to ggml_quantize_chunk for that row; imatrix (n
// weights, may be null) follows the reference's use or ignores it as documented per type.
#pragma once

#include <cstdint>

namespace k3::quant::detail {

using QuantRowFn = void (*)(const float* x, uint8_t* y, int64_t n, const float* imatrix);

// quantize_legacy.cpp
void quantize_row_q8_0(const float* x, uint8_t* y, int64_t n, const float* imatrix);  // ignores imatrix
void quantize_row_q4_0(const float* x, uint8_t* y, int64_t n, const float* imatrix);
void quantize_row_q5_0(const float* x, uint8_t* y, int64_t n, const float* imatrix);
void quantize_row_q5_1(const float* x, uint8_t* y, int64_t n, const float* imatrix);
void quantize_row_mxfp4(const float* x, uint8_t* y, int64_t n, const float* imatrix);  // ignores imatrix

// quantize_kquants.cpp
void quantize_row_q2_k(const float* x, uint8_t* y, int64_t n, const float* imatrix);
void quantize_row_q3_k(const float* x, uint8_t* y, int64_t n, const float* imatrix);
void quantize_row_q4_k(const float* x, uint8_t* y, int64_t n, const float* imatrix);
void quantize_row_q5_k(const float* x, uint8_t* y, int64_t n, const float* imatrix);
void quantize_row_q6_k(const float* x, uint8_t* y, int64_t n, const float* imatrix);

// quantize_iq4.cpp
void quantize_row_iq4_nl(const float* x, uint8_t* y, int64_t n, const float* imatrix);
void quantize_row_iq4_xs(const float* x, uint8_t* y, int64_t n, const float* imatrix);

}  // namespace k3::quant::detail
