// tools/reap_saliency: measures, per MoE layer and routed expert, how much the expert
// contributes to the layer's output on calibration text — the statistics `k3 reap` ranks
// experts by (REAP, Lasby et al. 2025; docs/reap.md).
//
// Contract:
// * ReapCollector is a model::ForwardObserver. For every (token, expert) pair the engine's
//   real routing selected, it adds 1 to count[e], the router weight the engine actually
//   used (after K3's sigmoid, selection-bias-free weighting, normalisation and scaling) to
//   weight_sum[e], and that weight × ‖expert output‖₂ (the expert's latent output row,
//   before weighting) to reap_sum[e]. Nothing else about the forward pass changes.
// * LayerSaliency::reap(e) = reap_sum / count, the REAP saliency (mean over the tokens routed
//   to e); 0 for an expert no token reached.
// * collect_reap_saliency runs each calibration sequence from a cleared state through one
//   Engine (sequence 0) and returns the layers in ascending order. Sequences longer than
//   n_ctx are refused (split them with chunk_calibration first); at most max_tokens tokens are
//   used (the last sequence is cut), max_tokens < 0 meaning all.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "model/observer.h"

namespace k3::model {
class Model;
}
namespace k3::runtime {
struct EngineOptions;
}

namespace k3::tools {

struct LayerSaliency {
  uint32_t layer = 0;
  std::vector<int64_t> count;      // per expert: tokens routed to it
  std::vector<double> weight_sum;  // per expert: Σ router weight used
  std::vector<double> reap_sum;    // per expert: Σ router weight × ‖expert output‖₂

  double reap(size_t e) const { return count[e] > 0 ? reap_sum[e] / double(count[e]) : 0.0; }
  double mean_weight(size_t e) const { return count[e] > 0 ? weight_sum[e] / double(count[e]) : 0.0; }
};

class ReapCollector : public model::ForwardObserver {
 public:
  // One LayerSaliency per MoE layer (il >= leading_dense_block_count) with n_expert slots.
  ReapCollector(uint32_t n_layer, uint32_t n_dense_lead, uint32_t n_expert);
  void on_matmul_input(const kernels::WeightView&, const float*, int64_t, int64_t) override {}
  void on_expert_output(uint32_t layer, int32_t expert, std::span<const std::pair<int64_t, double>> toks,
                        const float* y, int64_t width) override;

  const std::vector<LayerSaliency>& layers() const { return layers_; }

 private:
  std::vector<LayerSaliency> layers_;
  std::vector<int> index_;  // layer → index in layers_, -1 for dense layers
};

// Cuts one token stream into sequences of n_ctx tokens (the last one may be shorter; it is
// kept when it has at least min_tail tokens). bos ≥ 0 replaces each sequence's first token,
// as k3 imatrix / llama-imatrix do when the vocabulary asks for BOS.
std::vector<std::vector<int32_t>> chunk_calibration(const std::vector<int32_t>& tokens, int64_t n_ctx,
                                                    int32_t bos = -1, int64_t min_tail = 1);

struct ReapCalibOptions {
  int64_t n_ctx = 512;      // longest sequence (sizes the engine)
  int64_t max_tokens = -1;  // < 0: all
  int n_threads = 0;
  // Called after each sequence with (tokens done, tokens total); may be empty.
  std::function<void(int64_t, int64_t)> progress;
};

struct ReapCalibResult {
  std::vector<LayerSaliency> layers;
  int64_t n_tokens = 0;  // tokens run through the model
  int64_t n_sequences = 0;
};

// The options collect_reap_saliency builds its engine with (no observer yet), for the memory
// plan (store::shape_of). Throws k3::Error when n_ctx is below 1.
runtime::EngineOptions reap_engine_options(const ReapCalibOptions& opt);

// Throws k3::Error when there is no token to run or a sequence is longer than n_ctx.
ReapCalibResult collect_reap_saliency(std::shared_ptr<const model::Model> model,
                                      const std::vector<std::vector<int32_t>>& sequences,
                                      const ReapCalibOptions& opt);

}  // namespace k3::tools
