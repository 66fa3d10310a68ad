// runtime/engine: batch validation, micro-batching and sequence bookkeeping around
// model::forward (see engine.h for the contract).
#include "runtime/engine.h"

#include <algorithm>
#include <type_traits>

#include "core/error.h"
#include "core/thread_pool.h"
#include "model/collective.h"
#include "model/scratch.h"

namespace k3::runtime {

namespace {

// What rank 0 sends the other ranks before each state change (then the batch, if any).
enum Op : uint32_t { kDecode = 1, kSeqClear = 2, kSeqCopy = 3, kStop = 4, kSeqSet = 5 };
struct OpHeader {
  uint32_t op = 0;
  int32_t a = 0, b = 0;
  uint64_t n = 0;  // batch tokens that follow
};
static_assert(std::is_trivially_copyable_v<BatchToken>);

}  // namespace

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

Engine::~Engine() {
  model::Collective* c = opts_.hooks.collective;
  if (c && c->size() > 1 && c->rank() == 0) {
    try {
      send(kStop, 0, 0);
    } catch (const std::exception&) {  // the others are gone already: nothing left to tell
    }
  }
}

bool Engine::follower() const {
  const model::Collective* c = opts_.hooks.collective;
  return c && c->size() > 1 && c->rank() != 0;
}

void Engine::send(uint32_t op, int32_t a, int32_t b, std::span<const BatchToken> batch) {
  model::Collective* c = opts_.hooks.collective;
  if (!c || c->size() == 1 || c->rank() != 0) return;
  OpHeader h{op, a, b, batch.size()};
  c->broadcast(&h, sizeof h);
  if (!batch.empty()) c->broadcast(const_cast<BatchToken*>(batch.data()), batch.size_bytes());
  // Embedding rows travel after the batch, in batch order (their pointers mean nothing there).
  const size_t row = model_->hparams().n_embd * sizeof(float);
  for (const BatchToken& t : batch)
    if (t.embd) c->broadcast(const_cast<float*>(t.embd), row);
}

void Engine::receive_rows(std::vector<BatchToken>& batch, std::vector<float>& rows) {
  const size_t E = model_->hparams().n_embd;
  size_t n = 0;
  for (const BatchToken& t : batch) n += t.embd != nullptr;
  rows.resize(n * E);
  size_t i = 0;
  for (BatchToken& t : batch) {
    if (!t.embd) continue;
    opts_.hooks.collective->broadcast(rows.data() + i * E, E * sizeof(float));
    t.embd = rows.data() + i++ * E;
  }
}

void Engine::follow() {
  if (!follower()) fail("engine: follow() is for the ranks other than 0 of a distributed run");
  model::Collective& c = *opts_.hooks.collective;
  std::vector<BatchToken> batch;
  std::vector<float> rows;
  for (;;) {
    OpHeader h;
    c.broadcast(&h, sizeof h, /*idle=*/true);
    switch (h.op) {
      case kDecode: {
        batch.resize(h.n);
        c.broadcast(batch.data(), batch.size() * sizeof(BatchToken));
        receive_rows(batch, rows);
        int64_t n_logits = 0;
        for (const BatchToken& t : batch) n_logits += t.want_logits;
        run(batch, n_logits);
        break;
      }
      case kSeqClear: do_seq_clear(h.a); break;
      case kSeqCopy: do_seq_copy(h.a, h.b); break;
      case kSeqSet: receive_state(h.a, static_cast<int64_t>(h.n)); break;
      case kStop: return;
      default: fail("engine: rank {}: unknown request {} from rank 0", c.rank(), h.op);
    }
  }
}

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
  send(kSeqClear, seq, 0);
  do_seq_clear(seq);
}

void Engine::do_seq_clear(int32_t seq) {
  if (seqs_[seq]) seqs_[seq]->clear();
}

void Engine::seq_copy(int32_t src, int32_t dst) {
  for (int32_t s : {src, dst})
    if (s < 0 || s >= opts_.n_seq_max)
      fail("seq_copy: sequence id {} is outside 0..{}", s, opts_.n_seq_max - 1);
  send(kSeqCopy, src, dst);
  do_seq_copy(src, dst);
}

void Engine::do_seq_copy(int32_t src, int32_t dst) {
  if (src == dst) return;
  if (!seqs_[src]) {
    if (seqs_[dst]) seqs_[dst]->clear();
    return;
  }
  seqs_[dst] = std::make_unique<model::SequenceState>(*seqs_[src]);
  seqs_[dst]->set_max_rows(n_ctx_);
}

const model::SequenceState* Engine::seq_state(int32_t seq) const {
  if (seq < 0 || seq >= opts_.n_seq_max)
    fail("seq_state: sequence id {} is outside 0..{}", seq, opts_.n_seq_max - 1);
  return seqs_[seq].get();
}

void Engine::seq_set(int32_t seq, std::unique_ptr<model::SequenceState> st) {
  if (seq < 0 || seq >= opts_.n_seq_max)
    fail("seq_set: sequence id {} is outside 0..{}", seq, opts_.n_seq_max - 1);
  if (!st || st->cache_type() != opts_.cache_type)
    fail("seq_set: the state's cache type is not the engine's");
  if (st->n_past() > n_ctx_) fail("seq_set: the state holds {} tokens, the context {}", st->n_past(), n_ctx_);
  model::Collective* c = opts_.hooks.collective;
  if (c && c->size() > 1 && c->rank() == 0) {
    // The header's n carries the token count; the chunks follow in chunks() order, whose
    // sizes the other ranks derive from it exactly as the file reader does.
    OpHeader h{kSeqSet, seq, 0, static_cast<uint64_t>(st->n_past())};
    c->broadcast(&h, sizeof h);
    for (auto [p, n] : st->chunks()) c->broadcast(p, n);
  }
  st->set_max_rows(n_ctx_);
  seqs_[seq] = std::move(st);
}

void Engine::receive_state(int32_t seq, int64_t n_past) {
  auto st = std::make_unique<model::SequenceState>(model_->hparams(), opts_.cache_type);
  st->set_max_rows(n_ctx_);
  st->set_rows(model_->hparams(), n_past);
  for (auto [p, n] : st->chunks()) opts_.hooks.collective->broadcast(p, n);
  seqs_.at(static_cast<size_t>(seq)) = std::move(st);
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
  send(kDecode, 0, 0, batch);
  return run(batch, n_logits);
}

std::vector<float> Engine::run(std::span<const BatchToken> batch, int64_t n_logits) {
  const int64_t V = n_vocab();
  std::vector<float> logits(static_cast<size_t>(n_logits * V));
  std::vector<int32_t> tokens;
  std::vector<model::SequenceState*> seqs;
  std::vector<uint8_t> want;
  std::vector<const float*> embd;
  int64_t written = 0;
  for (size_t u0 = 0; u0 < batch.size(); u0 += static_cast<size_t>(opts_.n_ubatch)) {
    const size_t u1 = std::min(batch.size(), u0 + static_cast<size_t>(opts_.n_ubatch));
    tokens.clear();
    seqs.clear();
    want.clear();
    embd.clear();
    bool any_embd = false;
    for (size_t i = u0; i < u1; ++i) {
      tokens.push_back(batch[i].token);
      seqs.push_back(&state(batch[i].seq));
      want.push_back(batch[i].want_logits ? 1 : 0);
      embd.push_back(batch[i].embd);
      any_embd |= batch[i].embd != nullptr;
    }
    model::ForwardInput in{tokens, seqs, want};
    if (any_embd) in.embd = embd;
    written += model::forward(*model_, in, logits.data() + written * V, pool_.get(), *scratch_, opts_.hooks,
                              opts_.checks);
  }
  return logits;
}

}  // namespace k3::runtime
