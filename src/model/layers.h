// model/layers: the sublayer forwards used by forward.cpp (internal to the model module).
// Each works on a micro-batch of n tokens: inputs are n rows of normed activations, outputs
// n rows of the sublayer result. Sequence-mixing sublayers read and update the state of the
// token's sequence (see forward.h for the grouping contract).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/forward.h"
#include "model/ops.h"
#include "model/scratch.h"

namespace k3 {
class ThreadPool;
}

namespace k3::model {

class Model;
class SequenceState;
struct FfnWeights;

struct BatchCtx {
  const Model& model;
  int64_t n = 0;
  std::span<const SeqGroup> groups;
  ThreadPool* pool = nullptr;
  const ForwardHooks& hooks;
  const ForwardChecks& checks;
  ops::Matmul mm;
  Scratch& scratch;
};

void kda_forward(const BatchCtx& b, uint32_t il, const float* xn, float* out);
void mla_forward(const BatchCtx& b, uint32_t il, const float* xn, float* out);
void ffn_forward(const BatchCtx& b, const FfnWeights& w, const float* x, float* out);
void moe_forward(const BatchCtx& b, uint32_t il, const float* xn, float* out);

// AttnRes mixing (docs/MODEL.md) for n rows of width E: out = softmax-weighted mix of the bank
// entries and cur, scored by rmsnorm(candidate)·w. An empty bank copies cur.
void res_mix(std::span<const float* const> bank, const float* cur, const float* w, int64_t n, int64_t E,
             float eps, float* out);

}  // namespace k3::model
