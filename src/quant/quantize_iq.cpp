// quant/quantize_iq: entry point of the grid-type quantizers; validates shapes and inputs and
// hands each row to the type's row quantizer (iq_one_bit / iq_two_bit / iq_three_bit).
// Rows are independent and the shared grid indexes are immutable once built, so concurrent
// calls (e.g. one per thread over disjoint row ranges) are safe.
#include "quant/quantize_iq.h"

#include <cmath>

#include "core/error.h"
#include "quant/iq_common.h"

namespace k3::quant {
namespace {

using RowFn = void (*)(const float*, uint8_t*, int64_t, const float*);

RowFn row_fn(Type t) {
  switch (t) {
    case Type::IQ1_S: return iq::quantize_row_iq1_s;
    case Type::IQ1_M: return iq::quantize_row_iq1_m;
    case Type::IQ2_XXS: return iq::quantize_row_iq2_xxs;
    case Type::IQ2_XS: return iq::quantize_row_iq2_xs;
    case Type::IQ2_S: return iq::quantize_row_iq2_s;
    case Type::IQ3_XXS: return iq::quantize_row_iq3_xxs;
    case Type::IQ3_S: return iq::quantize_row_iq3_s;
    default: return nullptr;
  }
}

// The algorithms have no meaningful answer for Inf/NaN (ggml would abort or emit garbage), and
// a negative importance makes sqrt(w) NaN; reject both with the offending position.
void check_finite_row(Type t, const float* x, int64_t n, int64_t row) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) {
      fail("cannot quantize to {}: non-finite value {} at row {}, column {}", type_name(t), x[i], row, i);
    }
  }
}

}  // namespace

bool is_grid_type(Type t) { return row_fn(t) != nullptr; }

size_t quantize_iq(Type t, const float* src, void* dst, int64_t nrows, int64_t n_per_row,
                   const float* imatrix) {
  const RowFn fn = row_fn(t);
  if (!fn) fail("{} is not a grid (i-quant) type", type_name(t));
  if (nrows < 0 || n_per_row <= 0 || n_per_row % iq::kSuperBlock != 0) {
    fail("cannot quantize to {}: row length {} is not a positive multiple of {}", type_name(t), n_per_row,
         iq::kSuperBlock);
  }
  if (!imatrix && (t == Type::IQ1_S || t == Type::IQ2_XXS || t == Type::IQ2_XS)) {
    fail("quantization to {} requires an importance matrix", type_name(t));
  }
  if (imatrix) {
    for (int64_t i = 0; i < n_per_row; ++i) {
      if (!(imatrix[i] >= 0) || !std::isfinite(imatrix[i])) {
        fail("cannot quantize to {}: importance matrix entry {} is {} (must be finite and >= 0)",
             type_name(t), i, imatrix[i]);
      }
    }
  }
  const size_t bytes_per_row = row_bytes(t, n_per_row);
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t r = 0; r < nrows; ++r) {
    const float* x = src + r * n_per_row;
    check_finite_row(t, x, n_per_row, r);
    fn(x, out + r * bytes_per_row, n_per_row, imatrix);
  }
  return static_cast<size_t>(nrows) * bytes_per_row;
}

}  // namespace k3::quant
