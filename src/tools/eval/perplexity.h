// tools/perplexity: perplexity of a token sequence, computed the way llama-perplexity does.
//
// Contract:
// * The tokens are cut into n_chunks = min(max_chunks, n_tokens / n_ctx) chunks of exactly
//   n_ctx tokens (a partial tail is dropped). Each chunk runs from a freshly cleared sequence;
//   when bos_token ≥ 0 the chunk's first token is replaced by it (llama-perplexity does this
//   when the vocabulary adds BOS).
// * Only the second half is scored: with first = n_ctx / 2, the logits at positions
//   first … n_ctx-2 predict tokens first+1 … n_ctx-1, i.e. n_ctx - first - 1 scores a chunk.
// * nll is the mean of -log softmax(logits)[target] in double; PPL = exp(nll) and its error
//   is PPL · sqrt((mean(lp²) - nll²) / (count - 1)), as llama-perplexity prints it.
// * on_row sees every scored row (for KL statistics), on_chunk the running PPL after each
//   chunk. Too few tokens or a bad n_ctx throws k3::Error.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace k3::runtime {
class Engine;
}

namespace k3::tools {

struct PerplexityOptions {
  int64_t n_ctx = 512;
  int64_t max_chunks = -1;  // < 0: all
  int32_t bos_token = -1;   // ≥ 0: replaces the first token of every chunk
};

struct PerplexityResult {
  int64_t n_chunks = 0;
  int64_t n_scored = 0;  // total scored tokens
  double nll = 0;        // mean negative log-likelihood
  double ppl = 0, ppl_err = 0;
  std::vector<double> running;  // PPL after each chunk
};

// chunk, index of the scored row within the chunk, logits (n_vocab floats), target id.
using RowFn = std::function<void(int64_t chunk, int64_t row, const float* logits, int32_t target)>;
using ChunkFn = std::function<void(int64_t chunk, double running_ppl)>;

// Scores per chunk, for file headers and checks.
int64_t perplexity_scored_per_chunk(int64_t n_ctx);
// The exact token ids evaluated (after BOS replacement), chunk after chunk.
std::vector<int32_t> perplexity_chunk_tokens(const std::vector<int32_t>& tokens, const PerplexityOptions& opt,
                                             int64_t n_chunks);
int64_t perplexity_n_chunks(int64_t n_tokens, const PerplexityOptions& opt);

PerplexityResult perplexity(runtime::Engine& engine, const std::vector<int32_t>& tokens,
                            const PerplexityOptions& opt, const RowFn& on_row = {},
                            const ChunkFn& on_chunk = {});

// log softmax(logits)[target] in double; also the log-sum-exp if lse != nullptr.
double log_prob_of(const float* logits, int64_t n_vocab, int32_t target, double* lse = nullptr);
// Index of the largest logit (lowest index on ties).
int32_t argmax_of(const float* logits, int64_t n_vocab);

}  // namespace k3::tools
