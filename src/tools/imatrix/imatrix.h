// tools/imatrix: collects an importance matrix (per-column sums of squared matmul inputs) the
// way llama-imatrix does, and writes it in llama.cpp's GGUF imatrix format
// (docs/imatrix.md), so that `k3 quantize --imatrix` and llama-quantize
// both read it; tools/quantize/quantize_imatrix.h is the reader.
//
// Contract:
// * Entries: every matmul whose weight is a `blk.*` tensor (output.weight is not collected,
//   as llama-imatrix without --process-output). For a 2-D weight: n_in = ne0, one count =
//   rows seen. For *_exps (routed experts): n_mat = ne2 experts, per-expert sums and counts
//   (count = tokens routed to that expert). For another 3-D weight (attn_k_b, attn_v_b, one
//   matrix per head): n_in = ne0·ne2 (head h's columns at h·ne0), one count = token rows —
//   the layout llama-imatrix writes for them.
// * Tokens are cut into n_chunks = min(max_chunks, n_tokens / n_ctx) chunks of n_ctx tokens
//   (a partial tail is dropped); each runs from a cleared sequence; bos_token ≥ 0 replaces a
//   chunk's first token (llama-imatrix does when the vocabulary adds BOS).
// * Coverage: per MoE layer, how many tokens were routed to each expert.
// * The file: KVs general.type = "imatrix", imatrix.datasets, imatrix.chunk_count,
//   imatrix.chunk_size; then per entry, sorted by name, NAME.in_sum2 (F32, [n_in] or
//   [n_in, n_mat]) and NAME.counts (F32, [1] or [1, n_mat]). Written atomically.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/observer.h"

namespace k3::gguf {
class GgufFile;
}
namespace k3::model {
class Model;
struct HParams;
}  // namespace k3::model

namespace k3::tools {

struct ImatrixStat {
  int64_t n_in = 0;
  int64_t n_mat = 1;
  bool per_matrix_counts = false;  // *_exps: one count per expert
  std::vector<double> sums;        // n_in · n_mat
  std::vector<int64_t> counts;     // n_mat
};

struct ImatrixStats {
  std::vector<std::string> datasets;
  uint32_t chunk_count = 0;
  uint32_t chunk_size = 0;
  std::map<std::string, ImatrixStat> entries;
};

void write_imatrix_gguf(const std::string& path, const ImatrixStats& stats);

struct LayerCoverage {
  uint32_t layer = 0;
  std::vector<int64_t> tokens;  // per expert: tokens routed to it

  int64_t activated() const;
  int64_t min_count() const;
  double mean_count() const;
  std::vector<int32_t> never_routed() const;
};

// Text report: one line per MoE layer plus a warning line per layer with unrouted experts.
std::string format_coverage(const std::vector<LayerCoverage>& cov);

// The observer: maps each matmul weight back to its tensor by address (see model/observer.h).
class ImatrixCollector : public model::ForwardObserver {
 public:
  ImatrixCollector(const gguf::GgufFile& file, const model::HParams& hp);
  void on_matmul_input(const kernels::WeightView& w, const float* x, int64_t n_rows,
                       int64_t x_stride) override;
  void on_routing(uint32_t layer, int64_t n_tokens, int64_t k, const int32_t* experts,
                  const double* weights) override;

  const std::map<std::string, ImatrixStat>& entries() const { return entries_; }
  const std::vector<LayerCoverage>& coverage() const { return coverage_; }
  int64_t unresolved() const { return unresolved_; }  // matmuls on weights outside blk.*

 private:
  struct Range {
    const uint8_t* begin;
    const uint8_t* end;
    std::string name;
    int64_t ne0, n_mat;
    uint64_t mat_bytes;
    bool exps;
  };
  std::vector<Range> ranges_;  // sorted by begin
  std::map<std::string, ImatrixStat> entries_;
  std::vector<LayerCoverage> coverage_;
  std::vector<int> cov_index_;  // layer → index in coverage_, -1 for dense layers
  int64_t unresolved_ = 0;
};

struct ImatrixOptions {
  int64_t n_ctx = 512;
  int64_t max_chunks = -1;  // < 0: all
  int n_threads = 0;
  int32_t bos_token = -1;
  std::string dataset;  // recorded in imatrix.datasets
  // Called after each chunk with (tokens done, tokens in all); may be empty.
  std::function<void(int64_t, int64_t)> progress;
};

struct ImatrixResult {
  ImatrixStats stats;
  std::vector<LayerCoverage> coverage;
  int64_t n_chunks = 0;
};

// Runs the model over the chunks and collects. Throws k3::Error if there is not one chunk.
ImatrixResult collect_imatrix(std::shared_ptr<const model::Model> model, const std::vector<int32_t>& tokens,
                              const ImatrixOptions& opt);

}  // namespace k3::tools
