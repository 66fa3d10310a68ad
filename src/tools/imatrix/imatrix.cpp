// tools/imatrix: collection and expert coverage (see imatrix.h).
#include "tools/imatrix/imatrix.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "gguf/file.h"
#include "model/hparams.h"
#include "model/model.h"
#include "runtime/engine.h"

namespace k3::tools {

int64_t LayerCoverage::activated() const {
  return std::count_if(tokens.begin(), tokens.end(), [](int64_t c) { return c > 0; });
}

int64_t LayerCoverage::min_count() const {
  return tokens.empty() ? 0 : *std::min_element(tokens.begin(), tokens.end());
}

double LayerCoverage::mean_count() const {
  if (tokens.empty()) return 0.0;
  return static_cast<double>(std::accumulate(tokens.begin(), tokens.end(), int64_t{0})) /
         static_cast<double>(tokens.size());
}

std::vector<int32_t> LayerCoverage::never_routed() const {
  std::vector<int32_t> out;
  for (size_t e = 0; e < tokens.size(); ++e)
    if (tokens[e] == 0) out.push_back(static_cast<int32_t>(e));
  return out;
}

std::string format_coverage(const std::vector<LayerCoverage>& cov) {
  std::string s;
  for (const LayerCoverage& c : cov) {
    s += fmt::format("layer {:3}: {:4}/{:<4} experts activated, tokens per expert min {} mean {:.1f}\n",
                     c.layer, c.activated(), c.tokens.size(), c.min_count(), c.mean_count());
    const auto never = c.never_routed();
    if (!never.empty())
      s += fmt::format("warning: layer {}: {} expert(s) never routed: {}\n", c.layer, never.size(),
                       fmt::join(never, ","));
  }
  return s;
}

ImatrixCollector::ImatrixCollector(const gguf::GgufFile& file, const model::HParams& hp) {
  for (const gguf::TensorInfo& t : file.tensors()) {
    if (!t.name.starts_with("blk.") || t.ne.size() < 2 || !t.data) continue;
    const int64_t n_mat = t.dim(2) * t.dim(3);
    const bool exps = t.name.find("_exps") != std::string::npos;
    ranges_.push_back(
        {t.data, t.data + t.nbytes, t.name, t.dim(0), n_mat, t.nbytes / static_cast<uint64_t>(n_mat), exps});
  }
  std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  cov_index_.assign(hp.n_layer, -1);
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    if (hp.is_dense(il) || hp.n_expert == 0) continue;
    cov_index_[il] = static_cast<int>(coverage_.size());
    coverage_.push_back({il, std::vector<int64_t>(hp.n_expert, 0)});
  }
}

void ImatrixCollector::on_matmul_input(const kernels::WeightView& w, const float* x, int64_t n_rows,
                                       int64_t x_stride) {
  const auto* p = static_cast<const uint8_t*>(w.data);
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), p,
                             [](const uint8_t* q, const Range& r) { return q < r.begin; });
  if (it == ranges_.begin() || p >= std::prev(it)->end) {
    ++unresolved_;
    return;
  }
  const Range& r = *std::prev(it);
  const int64_t slot = static_cast<int64_t>(static_cast<uint64_t>(p - r.begin) / r.mat_bytes);
  if (w.cols != r.ne0)
    fail("imatrix: matmul on {} has {} input columns, the tensor {}", r.name, w.cols, r.ne0);
  ImatrixStat& e = entries_[r.name];
  if (e.sums.empty()) {
    e.per_matrix_counts = r.exps;
    e.n_mat = r.exps ? r.n_mat : 1;
    e.n_in = r.exps ? r.ne0 : r.ne0 * r.n_mat;
    e.sums.assign(static_cast<size_t>(e.n_in * e.n_mat), 0.0);
    e.counts.assign(static_cast<size_t>(e.n_mat), 0);
  }
  // Experts: row block `slot` with its own count. Per-head matrices: column block `slot` of
  // the one row; every head sees the same tokens, so only head 0 counts them.
  double* s = e.sums.data() + slot * r.ne0;
  for (int64_t i = 0; i < n_rows; ++i) {
    const float* xr = x + i * x_stride;
    for (int64_t c = 0; c < r.ne0; ++c) s[c] += static_cast<double>(xr[c]) * xr[c];
  }
  if (r.exps) e.counts[static_cast<size_t>(slot)] += n_rows;
  else if (slot == 0) e.counts[0] += n_rows;
}

void ImatrixCollector::on_routing(uint32_t layer, int64_t n_tokens, int64_t k, const int32_t* experts,
                                  const double*) {
  if (layer >= cov_index_.size() || cov_index_[layer] < 0) return;
  std::vector<int64_t>& t = coverage_[static_cast<size_t>(cov_index_[layer])].tokens;
  for (int64_t i = 0; i < n_tokens * k; ++i)
    if (experts[i] >= 0 && static_cast<size_t>(experts[i]) < t.size()) ++t[static_cast<size_t>(experts[i])];
}

ImatrixResult collect_imatrix(std::shared_ptr<const model::Model> model, const std::vector<int32_t>& tokens,
                              const ImatrixOptions& opt) {
  if (opt.n_ctx < 1) fail("imatrix: the chunk size (-c) must be at least 1, not {}", opt.n_ctx);
  int64_t n_chunks = static_cast<int64_t>(tokens.size()) / opt.n_ctx;
  if (opt.max_chunks >= 0) n_chunks = std::min(n_chunks, opt.max_chunks);
  if (n_chunks < 1)
    fail("imatrix: {} tokens do not make one chunk of {} (use a longer text or a smaller -c)", tokens.size(),
         opt.n_ctx);

  ImatrixCollector col(model->gguf(), model->hparams());
  runtime::EngineOptions eo;
  eo.n_threads = opt.n_threads;
  eo.n_ctx = opt.n_ctx;
  eo.n_ubatch = std::min<int64_t>(opt.n_ctx, 512);
  eo.hooks.observer = &col;
  runtime::Engine engine(model, eo);

  std::vector<runtime::BatchToken> batch(static_cast<size_t>(opt.n_ctx));
  if (opt.progress) opt.progress(0, n_chunks * opt.n_ctx);
  for (int64_t c = 0; c < n_chunks; ++c) {
    engine.seq_clear(0);
    for (int64_t i = 0; i < opt.n_ctx; ++i)
      batch[static_cast<size_t>(i)] = {tokens[static_cast<size_t>(c * opt.n_ctx + i)], 0, -1, false};
    if (opt.bos_token >= 0) batch[0].token = opt.bos_token;
    engine.decode(batch);
    if (opt.progress) opt.progress((c + 1) * opt.n_ctx, n_chunks * opt.n_ctx);
  }

  ImatrixResult r;
  r.n_chunks = n_chunks;
  r.stats.chunk_count = static_cast<uint32_t>(n_chunks);
  r.stats.chunk_size = static_cast<uint32_t>(opt.n_ctx);
  r.stats.datasets.push_back(opt.dataset);
  r.stats.entries = col.entries();
  r.coverage = col.coverage();
  return r;
}

}  // namespace k3::tools
