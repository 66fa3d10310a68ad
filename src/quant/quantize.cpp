// quant/quantize: quantize_rows, can_quantize and requires_imatrix — the public entry points of
// the reference quantizers. Routes block types to quant_rows.h and grid types to quantize_iq.
// Contract: see quant/codec.h. The imatrix rule is llama-quantize's (checked against its
// source): IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S and IQ1_M refuse to run without one; the Q2_K_S rule
// depends on the file type, not the tensor type, so it belongs to the caller.
#include "quant/fp_strict.h"  // first: no FMA contraction in this file

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "quant/codec.h"
#include "quant/quant_rows.h"
#include "quant/quantize_iq.h"

namespace k3::quant {

namespace {

detail::QuantRowFn row_quantizer(Type t) {
  using namespace detail;
  switch (t) {
    case Type::Q8_0: return quantize_row_q8_0;
    case Type::Q4_0: return quantize_row_q4_0;
    case Type::Q5_0: return quantize_row_q5_0;
    case Type::Q5_1: return quantize_row_q5_1;
    case Type::MXFP4: return quantize_row_mxfp4;
    case Type::Q2_K: return quantize_row_q2_k;
    case Type::Q3_K: return quantize_row_q3_k;
    case Type::Q4_K: return quantize_row_q4_k;
    case Type::Q5_K: return quantize_row_q5_k;
    case Type::Q6_K: return quantize_row_q6_k;
    case Type::IQ4_NL: return quantize_row_iq4_nl;
    case Type::IQ4_XS: return quantize_row_iq4_xs;
    default: return nullptr;
  }
}

bool is_scalar_float(Type t) { return t == Type::F32 || t == Type::F16 || t == Type::BF16; }

// The block quantizers convert scaled values to integers, which is undefined for NaN/Inf; such
// input is a broken tensor, so name the first bad element instead.
void check_finite(Type t, const float* src, int64_t nrows, int64_t n_per_row) {
  for (int64_t r = 0; r < nrows; ++r)
    for (int64_t c = 0; c < n_per_row; ++c)
      if (!std::isfinite(src[r * n_per_row + c]))
        fail("cannot quantize to {}: non-finite value {} at row {}, column {}", type_name(t),
             src[r * n_per_row + c], r, c);
}

}  // namespace

bool can_quantize(Type t) { return is_scalar_float(t) || row_quantizer(t) || is_grid_type(t); }

bool requires_imatrix(Type t) {
  switch (t) {
    case Type::IQ2_XXS:
    case Type::IQ2_XS:
    case Type::IQ2_S:
    case Type::IQ1_S:
    case Type::IQ1_M: return true;
    default: return false;
  }
}

size_t quantize_rows(Type t, const float* src, void* dst, int64_t nrows, int64_t n_per_row,
                     const float* imatrix) {
  if (!can_quantize(t)) fail("quantization to {} is not supported", type_name(t));
  if (requires_imatrix(t) && !imatrix)
    fail("quantization to {} requires an importance matrix (imatrix); none was given", type_name(t));
  const size_t row = row_bytes(t, n_per_row);
  if (!is_scalar_float(t)) check_finite(t, src, nrows, n_per_row);
  auto* out = static_cast<uint8_t*>(dst);
  if (is_grid_type(t)) return quantize_iq(t, src, dst, nrows, n_per_row, imatrix);
  const detail::QuantRowFn fn = row_quantizer(t);
  for (int64_t r = 0; r < nrows; ++r) {
    const float* x = src + r * n_per_row;
    uint8_t* y = out + size_t(r) * row;
    if (fn) {
      fn(x, y, n_per_row, imatrix);
      continue;
    }
    // Plain float encodings: the imatrix is meaningless here.
    for (int64_t i = 0; i < n_per_row; ++i) {
      if (t == Type::F32) {
        std::memcpy(y + 4 * i, &x[i], 4);
      } else {
        const uint16_t h = t == Type::F16 ? fp32_to_fp16(x[i]) : fp32_to_bf16(x[i]);
        y[2 * i] = uint8_t(h);
        y[2 * i + 1] = uint8_t(h >> 8);
      }
    }
  }
  return row * size_t(nrows);
}

}  // namespace k3::quant
