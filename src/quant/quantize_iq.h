// quant/quantize_iq: reference quantizers of the grid ("i-quant") types IQ1_S, IQ1_M,
// IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S (ggml's quantize_iq* in ggml-quants.c).
// Contract: same as quantize_rows in quant/codec.h, for these types only; callers go through
// quantize_rows, which checks the imatrix requirement first.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace k3::quant {

bool is_grid_type(Type t);
size_t quantize_iq(Type t, const float* src, void* dst, int64_t nrows, int64_t n_per_row,
                   const float* imatrix);

}  // namespace k3::quant
