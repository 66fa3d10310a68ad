// kernels/matmul: y = W·x for weights in any GGUF encoding, used in place.
// Contract: W is `rows` rows of `cols` elements in encoding `type` (row_stride bytes apart,
// normally row_bytes(type, cols)); x is n_tok rows of `cols` floats (x_stride floats apart);
// y gets n_tok rows of `rows` floats (y_stride apart): y[t][r] = Σ_k W[r][k]·x[t][k].
// F32 weights are applied in float32; F16/BF16 and block-quantized weights may round the
// activations as ggml's CPU backend does (see docs/NUMERICS.md). No exceptions: shapes are
// validated when the model binds its weights.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/types.h"

namespace k3 {
class ThreadPool;
}

namespace k3::kernels {

struct WeightView {
  quant::Type type = quant::Type::F32;
  const void* data = nullptr;
  int64_t cols = 0;       // ne[0]: input features
  int64_t rows = 0;       // ne[1]: output features
  size_t row_stride = 0;  // bytes between rows
  // The same rows in the type's decode layout (kernels/decode_layout.h), read instead of data by
  // one-token products; null: none.
  const void* decode = nullptr;
  size_t decode_stride = 0;

  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + r * row_stride; }
  const uint8_t* decode_row(int64_t r) const {
    return static_cast<const uint8_t*>(decode) + r * decode_stride;
  }
};

// y[i] = f(g[i], u[i]) for i < n, the gate/up pair of a fused product (e.g. SiTU with the
// model's constants); y may alias g. Called on runs of outputs so it can be vectorised.
using GateUpFn = void (*)(const float* g, const float* u, float* y, int64_t n, const void* ctx);

void matmul(const WeightView& w, const float* x, int64_t n_tok, float* y, ThreadPool* pool,
            int64_t x_stride = -1, int64_t y_stride = -1);

// Plain dequantize-then-dot reference, kept for testing the fast paths.
void matmul_reference(const WeightView& w, const float* x, int64_t n_tok, float* y, int64_t x_stride = -1,
                      int64_t y_stride = -1);

}  // namespace k3::kernels
