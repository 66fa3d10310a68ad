// store/predictor: which experts a MoE layer will ask for, guessed before it runs.
// Contract: predict_experts() runs `layer`'s router (with its selection bias and the
// model's gating function, as model/moe.cpp does) on rows that stand in for the layer's
// input — the store passes the previous MoE layer's normed input — and returns the distinct
// top-k experts of all rows, ascending. Of more than 64 rows it uses 64 evenly spaced ones
// (the router costs n·n_embd·n_expert; the experts many tokens share are the ones the
// sample finds, and the rest are read when the layer announces them).
#pragma once

#include <cstdint>
#include <vector>

namespace k3::model {
class Model;
}

namespace k3::store {

std::vector<int32_t> predict_experts(const model::Model& m, uint32_t layer, const float* xn, int64_t n);

}  // namespace k3::store
