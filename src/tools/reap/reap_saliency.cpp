// tools/reap_saliency: the REAP statistics observer and the calibration driver (see
// reap_saliency.h).
#include "tools/reap/reap_saliency.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "gguf/file.h"
#include "model/model.h"
#include "runtime/engine.h"

namespace k3::tools {

ReapCollector::ReapCollector(uint32_t n_layer, uint32_t n_dense_lead, uint32_t n_expert)
    : index_(n_layer, -1) {
  for (uint32_t il = n_dense_lead; il < n_layer; ++il) {
    index_[il] = static_cast<int>(layers_.size());
    LayerSaliency s;
    s.layer = il;
    s.count.assign(n_expert, 0);
    s.weight_sum.assign(n_expert, 0.0);
    s.reap_sum.assign(n_expert, 0.0);
    layers_.push_back(std::move(s));
  }
}

void ReapCollector::on_expert_output(uint32_t layer, int32_t expert,
                                     std::span<const std::pair<int64_t, double>> toks, const float* y,
                                     int64_t width) {
  // The engine only reports layers and experts of the model it was built for; a mismatch is
  // a programming error, but ignoring it beats writing outside the tables.
  if (layer >= index_.size() || index_[layer] < 0) return;
  LayerSaliency& s = layers_[static_cast<size_t>(index_[layer])];
  if (expert < 0 || static_cast<size_t>(expert) >= s.count.size()) return;
  const auto e = static_cast<size_t>(expert);
  for (size_t i = 0; i < toks.size(); ++i) {
    const float* row = y + static_cast<int64_t>(i) * width;
    double ss = 0.0;
    for (int64_t c = 0; c < width; ++c) ss += double(row[c]) * double(row[c]);
    const double w = toks[i].second;
    s.count[e] += 1;
    s.weight_sum[e] += w;
    s.reap_sum[e] += w * std::sqrt(ss);
  }
}

std::vector<std::vector<int32_t>> chunk_calibration(const std::vector<int32_t>& tokens, int64_t n_ctx,
                                                    int32_t bos, int64_t min_tail) {
  if (n_ctx < 1) fail("reap: the context size (-c) must be at least 1, not {}", n_ctx);
  std::vector<std::vector<int32_t>> out;
  const auto n = static_cast<int64_t>(tokens.size());
  for (int64_t start = 0; start < n; start += n_ctx) {
    const int64_t len = std::min(n_ctx, n - start);
    if (len < n_ctx && len < std::max<int64_t>(min_tail, 1)) break;
    out.emplace_back(tokens.begin() + start, tokens.begin() + start + len);
    if (bos >= 0) out.back()[0] = bos;
  }
  return out;
}

runtime::EngineOptions reap_engine_options(const ReapCalibOptions& opt) {
  if (opt.n_ctx < 1) fail("reap: the context size (-c) must be at least 1, not {}", opt.n_ctx);
  runtime::EngineOptions eo;
  eo.n_threads = opt.n_threads;
  eo.n_ctx = opt.n_ctx;
  eo.n_ubatch = std::min<int64_t>(opt.n_ctx, 512);
  return eo;
}

ReapCalibResult collect_reap_saliency(std::shared_ptr<const model::Model> model,
                                      const std::vector<std::vector<int32_t>>& sequences,
                                      const ReapCalibOptions& opt) {
  runtime::EngineOptions eo = reap_engine_options(opt);
  int64_t total = 0;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const auto len = static_cast<int64_t>(sequences[i].size());
    if (len > opt.n_ctx)
      fail("reap: calibration sequence {} has {} tokens, more than the context size {} (-c)", i, len,
           opt.n_ctx);
    total += len;
  }
  if (opt.max_tokens >= 0) total = std::min(total, opt.max_tokens);
  if (total < 1) fail("reap: no calibration tokens to run");

  const model::HParams& hp = model->hparams();
  if (!hp.has_moe() || hp.n_expert == 0)
    fail("{}: the model has no MoE layer, nothing to prune", model->gguf().path());
  ReapCollector col(hp.n_layer, hp.n_layer_dense_lead, hp.n_expert);
  eo.hooks.observer = &col;
  runtime::Engine engine(model, eo);

  ReapCalibResult r;
  std::vector<runtime::BatchToken> batch;
  for (const auto& seq : sequences) {
    const int64_t len = std::min<int64_t>(static_cast<int64_t>(seq.size()), total - r.n_tokens);
    if (len <= 0) break;
    engine.seq_clear(0);
    batch.assign(static_cast<size_t>(len), {});
    for (int64_t i = 0; i < len; ++i)
      batch[static_cast<size_t>(i)] = {seq[static_cast<size_t>(i)], 0, -1, false};
    engine.decode(batch);
    r.n_tokens += len;
    r.n_sequences += 1;
    if (opt.progress) opt.progress(r.n_tokens, total);
  }
  r.layers = col.layers();
  return r;
}

}  // namespace k3::tools
