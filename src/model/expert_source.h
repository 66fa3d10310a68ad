// model/expert_source: where the model reads routed-expert weights from.
// Contract: the model asks for (layer, expert) → gate/up/down views and never touches expert
// tensors directly, so a mapped store, a budgeted streaming store or a device trunk can be
// swapped in without changing model code. will_need() is a hint issued for all experts of a
// layer before any of them is acquired (a streaming store starts reads there). Views returned
// by acquire() stay valid until the matching release(). Calls come from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "kernels/matmul.h"

namespace k3::gguf {
class GgufFile;
}

namespace k3::model {

struct HParams;

struct ExpertWeights {
  kernels::WeightView gate;  // rows = n_ff_exp, cols = expert_in
  kernels::WeightView up;    // rows = n_ff_exp, cols = expert_in
  kernels::WeightView down;  // rows = expert_in, cols = n_ff_exp
};

class ExpertSource {
 public:
  virtual ~ExpertSource() = default;
  virtual void will_need(uint32_t layer, std::span<const int32_t> experts) = 0;
  virtual ExpertWeights acquire(uint32_t layer, int32_t expert) = 0;
  virtual void release(uint32_t layer, int32_t expert) = 0;
  // Optional prefetch hint, called once per MoE layer right after will_need(): the layer's
  // router input (n_tok rows of n_embd normed floats, valid only during the call). A
  // streaming store may run the next MoE layer's router on it to start that layer's reads
  // while this layer computes; the mapped store ignores it.
  virtual void router_input_hint(uint32_t layer, const float* xn, int64_t n_tok) {
    (void)layer, (void)xn, (void)n_tok;
  }
};

// The in-place store: views straight into the mapped GGUF, no copy (store/decode_copy.h wraps it
// to add the decode layout of the types that have one beside the file's rows). Binds and
// shape-checks ffn_{gate,up,down}_exps of every MoE layer; throws k3::Error naming a tensor
// that is missing or mis-shaped.
std::unique_ptr<ExpertSource> make_mapped_expert_source(const gguf::GgufFile& file, const HParams& hp);

}  // namespace k3::model
