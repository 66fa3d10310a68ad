// runtime/engine: batch validation, micro-batching and sequence bookkeeping around
// model::forward (see engine.h for the contract).
#include "runtime/engine.h"

#include <algorithm>

#include "core/error.h"
#include "core/thread_pool.h"
#include "model/scratch.h"

namespace k3::runtime {

Engine::Engine(std::shared_ptr<const model::Model> model, const EngineOptions& opts)
    : model_(std::move(model)), opts_(opts) {
  if (!model_) fail("engine: no model");
  if (opts_.n_seq_max < 1) fail("engine: n_seq_max must be at least 1 (got {})", opts_.n_seq_max);
  if (opts_.n_ubatch < 1) fail("engine: n_ubatch must be at least 1 (got {})", opts_.n_ubatch);
  if (opts_.n_ctx < 0) fail("engine: n_ctx must not be negative (got {})", opts_.n_ctx);
  n_ctx_ = context_size(static_cast<int64_t>(model_->hparams().n_ctx_train), opts_.n_ctx);
  const int threads = opts_.n_threads > 0 ? opts_.n_threads : ThreadPool::default_threads();
  pool_ = std::make_unique<ThreadPool>(threads);
  seqs_.resize(static_cast<size_t>(opts_.n_seq_max));
  scratch_ = std::make_unique<model::Scratch>();
}

Engine::~Engine() = default;

int32_t Engine::n_vocab() const { return static_cast<int32_t>(model_->hparams().n_vocab); }

model::SequenceState& Engine::state(int32_t seq) {
  auto& s = seqs_.at(static_cast<size_t>(seq));
  if (!s) {
    s = std::make_unique<model::SequenceState>(model_->hparams(), opts_.cache_type);
    s->set_max_rows(n_ctx_);
  }
  return *s;
}

void Engine::seq_clear(int32_t seq) {
  if (seq < 0 || seq >= opts_.n_seq_max)
    fail("seq_clear: sequence id {} is outside 0..{}", seq, opts_.n_seq_max - 1);
  if (seqs_[seq]) seqs_[seq]->clear();
}

void Engine::seq_copy(int32_t src, int32_t dst) {
  for (int32_t s : {src, dst})
    if (s < 0 || s >= opts_.n_seq_max)
      fail("seq_copy: sequence id {} is outside 0..{}", s, opts_.n_seq_max - 1);
  if (src == dst) return;
  if (!seqs_[src]) {
    if (seqs_[dst]) seqs_[dst]->clear();
    return;
  }
  seqs_[dst] = std::make_unique<model::SequenceState>(*seqs_[src]);
  seqs_[dst]->set_max_rows(n_ctx_);
}

int64_t Engine::seq_pos(int32_t seq) const {
  if (seq < 0 || seq >= opts_.n_seq_max)
    fail("seq_pos: sequence id {} is outside 0..{}", seq, opts_.n_seq_max - 1);
  return seqs_[seq] ? seqs_[seq]->n_past() : 0;
}

size_t Engine::scratch_bytes() const { return scratch_->bytes(); }

size_t Engine::state_bytes() const {
  size_t n = 0;
  for (const auto& s : seqs_)
    if (s) n += s->bytes();
  return n;
}

std::vector<float> Engine::decode(std::span<const BatchToken> batch) {
  // Validate everything before touching any state.
  const int32_t nv = n_vocab();
  std::vector<int64_t> next(static_cast<size_t>(opts_.n_seq_max), -1);
  int64_t n_logits = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const BatchToken& b = batch[i];
    if (b.seq < 0 || b.seq >= opts_.n_seq_max)
      fail("decode: batch entry {}: sequence id {} is outside 0..{}", i, b.seq, opts_.n_seq_max - 1);
    if (b.token < 0 || b.token >= nv)
      fail("decode: batch entry {}: token id {} is outside the vocabulary (0..{})", i, b.token, nv - 1);
    int64_t& nx = next[b.seq];
    if (nx < 0) nx = seq_pos(b.seq);
    if (b.pos >= 0 && b.pos != nx)
      fail(
          "decode: batch entry {}: sequence {} position {} is not the next position {} "
          "(K3 state cannot skip or rewind; clear or copy the sequence instead)",
          i, b.seq, b.pos, nx);
    if (nx >= n_ctx_) fail("decode: batch entry {}: sequence {} is full (context size {})", i, b.seq, n_ctx_);
    ++nx;
    n_logits += b.want_logits;
  }

  const int64_t V = nv;
  std::vector<float> logits(static_cast<size_t>(n_logits * V));
  std::vector<int32_t> tokens;
  std::vector<model::SequenceState*> seqs;
  std::vector<uint8_t> want;
  int64_t written = 0;
  for (size_t u0 = 0; u0 < batch.size(); u0 += static_cast<size_t>(opts_.n_ubatch)) {
    const size_t u1 = std::min(batch.size(), u0 + static_cast<size_t>(opts_.n_ubatch));
    tokens.clear();
    seqs.clear();
    want.clear();
    for (size_t i = u0; i < u1; ++i) {
      tokens.push_back(batch[i].token);
      seqs.push_back(&state(batch[i].seq));
      want.push_back(batch[i].want_logits ? 1 : 0);
    }
    model::ForwardInput in{tokens, seqs, want};
    written += model::forward(*model_, in, logits.data() + written * V, pool_.get(), *scratch_, opts_.hooks,
                              opts_.checks);
  }
  return logits;
}

}  // namespace k3::runtime
