// kernels/ffn_fused: the gate/up half of a SiTU FFN in one pass
// (docs/MODEL.md): y[t][r] = situ((W_gate·x_t)[r], (W_up·x_t)[r]).
// Contract: gate and up have the same cols and rows; x/y strides as in matmul (defaults cols
// and rows). When both share an encoding with a fast kernel, x is converted once and each row
// pair is computed back to back (one dispatch, no gate/up temporaries); otherwise this is two
// matmul calls and situ. Results equal matmul + situ exactly (same kernels, same order).
#pragma once

#include <cstdint>

#include "kernels/matmul.h"

namespace k3::kernels {

void matmul_gate_up_situ(const WeightView& gate, const WeightView& up, const float* x, int64_t n_tok,
                         float* y, ThreadPool* pool, float beta, float lambda, int64_t x_stride = -1,
                         int64_t y_stride = -1);

}  // namespace k3::kernels
