// runtime/engine: the public way to run a K3 model — batches of tokens from one or more
// sequences in, logits out, per-sequence state kept between calls.
//
// Contract:
// * An Engine owns the state of up to opts.n_seq_max sequences (ids 0 … n_seq_max-1) and a
//   thread pool; it shares the (immutable) model. One caller thread at a time.
// * decode(batch) evaluates the tokens in batch order. Each token names its sequence and
//   its position; the position must be the sequence's next one (seq_pos(seq) plus the
//   number of that sequence's tokens earlier in the batch), or -1 for "next". K3's recurrent
//   (KDA) state cannot be rolled back, so positions cannot skip or rewind; use seq_clear /
//   seq_copy instead. Bad tokens, sequence ids or positions throw k3::Error before any state
//   changes. Large batches are split into micro-batches of opts.n_ubatch tokens; the result
//   does not depend on the split beyond float rounding.
// * decode returns the logits of the tokens that asked for them, in batch order, as one
//   row-major block of n_logits × n_vocab floats.
// * Sequence management: seq_clear(s) forgets everything of s; seq_copy(src, dst) makes dst
//   an exact copy of src (prompt sharing, forking); seq_pos(s) is how many tokens s holds.
// * Saved states (runtime/state_file.h): seq_state(s) is s's state for a reader (null before
//   s's first token), and another thread may read it while the caller changes no state of s
//   (the prompt cache's disk writer does so while the engine decodes other sequences).
//   seq_set(s, state) makes s that state (it must have this engine's cache type and fit
//   its context); on a distributed run rank 0 sends it to every rank, which all hold the
//   same states.
// * Distributed (opts.hooks.collective with N > 1 ranks, docs/distributed.md): rank 0's engine
//   is driven as above and sends every decode, seq_clear and seq_copy to the other ranks; on
//   the others (follower() is true) the caller calls follow() instead, which runs rank 0's
//   requests until rank 0's engine is destroyed. Every rank then holds the same states and
//   computes the same logits, bit for bit those of one process.
//
// Typical use:
//   auto model = k3::model::Model::load(path);
//   k3::runtime::Engine eng(model, {.n_threads = 8});
//   std::vector<k3::runtime::BatchToken> b;
//   for (size_t i = 0; i < prompt.size(); ++i)
//     b.push_back({prompt[i], 0, -1, i + 1 == prompt.size()});
//   auto logits = eng.decode(b);            // n_vocab floats: the last prompt position
//   … sample t …; logits = eng.decode({{t, 0, -1, true}});
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/forward.h"
#include "model/model.h"
#include "model/sequence_state.h"

namespace k3 {
class ThreadPool;
}

namespace k3::runtime {

using model::CacheType;

// The context an engine gets: `requested` when > 0, else the model's context_length, else
// kDefaultContext (a model without the key is not unbounded: the memory plan and the engine
// must agree on how many tokens a sequence may hold).
constexpr int64_t kDefaultContext = 4096;
inline int64_t context_size(int64_t n_ctx_train, int64_t requested) {
  if (requested > 0) return requested;
  return n_ctx_train > 0 ? n_ctx_train : kDefaultContext;
}

struct EngineOptions {
  int n_threads = 0;                      // 0: ThreadPool::default_threads()
  int n_seq_max = 1;                      // sequence ids 0 … n_seq_max-1
  int64_t n_ctx = 0;                      // max tokens per sequence; 0: context_size() of the model
  int64_t n_ubatch = 512;                 // tokens per forward micro-batch
  CacheType cache_type = CacheType::F32;  // MLA latent cache precision
  model::ForwardHooks hooks{};            // observer / profile of the tools (k3 imatrix, reap, bench)
  model::ForwardChecks checks{};          // verification switches of the tests; leave default
};

struct BatchToken {
  int32_t token = 0;
  int32_t seq = 0;
  int64_t pos = -1;  // -1: the sequence's next position
  bool want_logits = false;
  // Non-null: this position's input is these n_embd floats instead of the token's embedding
  // row (an image token, vision/encode.h); `token` still names it (a media placeholder). The
  // caller keeps them alive until decode returns.
  const float* embd = nullptr;
};

class Engine {
 public:
  Engine(std::shared_ptr<const model::Model> model, const EngineOptions& opts = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  std::vector<float> decode(std::span<const BatchToken> batch);

  void seq_clear(int32_t seq);
  void seq_copy(int32_t src, int32_t dst);
  int64_t seq_pos(int32_t seq) const;
  const model::SequenceState* seq_state(int32_t seq) const;
  void seq_set(int32_t seq, std::unique_ptr<model::SequenceState> st);

  // Distributed: a rank other than 0. follow() returns when rank 0's engine goes away.
  bool follower() const;
  void follow();

  int32_t n_vocab() const;
  int n_seq_max() const { return opts_.n_seq_max; }
  int64_t n_ctx() const { return n_ctx_; }
  const EngineOptions& options() const { return opts_; }
  const model::Model& model() const { return *model_; }
  ThreadPool& pool() { return *pool_; }
  // Bytes of sequence state held now (all sequences).
  size_t state_bytes() const;
  // Bytes of the forward pass's working memory held now (its high-water mark; model/scratch.h).
  size_t scratch_bytes() const;

 private:
  model::SequenceState& state(int32_t seq);
  std::vector<float> run(std::span<const BatchToken> batch, int64_t n_logits);
  void do_seq_clear(int32_t seq);
  void do_seq_copy(int32_t src, int32_t dst);
  void receive_state(int32_t seq, int64_t n_past);
  void receive_rows(std::vector<BatchToken>& batch, std::vector<float>& rows);
  void send(uint32_t op, int32_t a, int32_t b, std::span<const BatchToken> batch = {});
  std::shared_ptr<const model::Model> model_;
  EngineOptions opts_;
  int64_t n_ctx_ = 0;
  std::unique_ptr<ThreadPool> pool_;
  std::vector<std::unique_ptr<model::SequenceState>> seqs_;
  std::unique_ptr<model::Scratch> scratch_;  // reused by every forward()
};

}  // namespace k3::runtime
