// model/observer: an optional hook that sees the activations of a forward pass, for tools
// that measure the model rather than run it (k3 imatrix, k3 reap).
// Contract: attach with ForwardHooks::observer (EngineOptions::hooks.observer); null (the
// default) costs one pointer test per matmul. Calls come from the thread that runs forward(),
// never from pool workers, and the pointers are valid only during the call.
// * on_matmul_input: before every matmul of the model. The weight is identified by address:
//   w.data lies inside one GGUF tensor's mapped bytes (for a 3-D tensor, at the start of one
//   of its matrices: an expert of *_exps, a head of attn_k_b/attn_v_b), so an observer maps
//   it back to (tensor, matrix) with the file's tensor table. x holds n_rows rows of w.cols
//   floats, x_stride floats apart.
// * on_routing: after top-k selection of MoE layer `layer`: for each of n_tokens batch rows,
//   k expert ids and the weights that scale their outputs (after normalisation and scaling).
// * on_expert_output: after routed expert `expert` ran: toks[i] = (batch row, router weight)
//   and y + i·width its output row (before weighting).
#pragma once

#include <cstdint>
#include <span>
#include <utility>

#include "kernels/matmul.h"

namespace k3::model {

struct ForwardObserver {
  virtual ~ForwardObserver() = default;
  virtual void on_matmul_input(const kernels::WeightView& w, const float* x, int64_t n_rows,
                               int64_t x_stride) = 0;
  virtual void on_routing(uint32_t /*layer*/, int64_t /*n_tokens*/, int64_t /*k*/, const int32_t* /*experts*/,
                          const double* /*weights*/) {}
  virtual void on_expert_output(uint32_t /*layer*/, int32_t /*expert*/,
                                std::span<const std::pair<int64_t, double>> /*toks*/, const float* /*y*/,
                                int64_t /*width*/) {}
};

}  // namespace k3::model
