// tools/perplexity: the chunk loop and the log-likelihood arithmetic.
#include "tools/eval/perplexity.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "runtime/engine.h"

namespace k3::tools {

int64_t perplexity_scored_per_chunk(int64_t n_ctx) { return n_ctx - n_ctx / 2 - 1; }

int64_t perplexity_n_chunks(int64_t n_tokens, const PerplexityOptions& opt) {
  if (opt.n_ctx < 4) fail("perplexity: context size {} is too small (need ≥ 4)", opt.n_ctx);
  if (n_tokens < opt.n_ctx)
    fail("perplexity: {} tokens are fewer than one chunk of {} (use a longer text or a smaller -c)", n_tokens,
         opt.n_ctx);
  int64_t n = n_tokens / opt.n_ctx;
  if (opt.max_chunks >= 0) n = std::min(n, opt.max_chunks);
  if (n < 1) fail("perplexity: no chunk to evaluate (--chunks {})", opt.max_chunks);
  return n;
}

std::vector<int32_t> perplexity_chunk_tokens(const std::vector<int32_t>& tokens, const PerplexityOptions& opt,
                                             int64_t n_chunks) {
  std::vector<int32_t> out(tokens.begin(), tokens.begin() + n_chunks * opt.n_ctx);
  if (opt.bos_token >= 0)
    for (int64_t c = 0; c < n_chunks; ++c) out[c * opt.n_ctx] = opt.bos_token;
  return out;
}

double log_prob_of(const float* logits, int64_t n_vocab, int32_t target, double* lse) {
  float mx = logits[0];
  for (int64_t i = 1; i < n_vocab; ++i) mx = std::max(mx, logits[i]);
  double s = 0;
  for (int64_t i = 0; i < n_vocab; ++i) s += std::exp(static_cast<double>(logits[i]) - mx);
  const double l = mx + std::log(s);
  if (lse) *lse = l;
  return static_cast<double>(logits[target]) - l;
}

int32_t argmax_of(const float* logits, int64_t n_vocab) {
  int32_t best = 0;
  for (int64_t i = 1; i < n_vocab; ++i)
    if (logits[i] > logits[best]) best = static_cast<int32_t>(i);
  return best;
}

PerplexityResult perplexity(runtime::Engine& engine, const std::vector<int32_t>& tokens,
                            const PerplexityOptions& opt, const RowFn& on_row, const ChunkFn& on_chunk) {
  const int64_t n_chunks = perplexity_n_chunks(static_cast<int64_t>(tokens.size()), opt);
  if (engine.n_ctx() < opt.n_ctx)
    fail("perplexity: engine context {} is smaller than -c {}", engine.n_ctx(), opt.n_ctx);
  const int64_t n_ctx = opt.n_ctx, first = n_ctx / 2, n_score = perplexity_scored_per_chunk(n_ctx);
  const int64_t n_vocab = engine.n_vocab();
  const std::vector<int32_t> toks = perplexity_chunk_tokens(tokens, opt, n_chunks);

  PerplexityResult r;
  r.n_chunks = n_chunks;
  double nll = 0, nll2 = 0;
  std::vector<runtime::BatchToken> batch(static_cast<size_t>(n_ctx));
  for (int64_t c = 0; c < n_chunks; ++c) {
    const int32_t* ct = toks.data() + c * n_ctx;
    engine.seq_clear(0);
    for (int64_t j = 0; j < n_ctx; ++j) batch[j] = {ct[j], 0, -1, j >= first && j < n_ctx - 1};
    const std::vector<float> logits = engine.decode(batch);
    if (static_cast<int64_t>(logits.size()) != n_score * n_vocab)
      fail("perplexity: engine returned {} logits, expected {}", logits.size(), n_score * n_vocab);
    for (int64_t i = 0; i < n_score; ++i) {
      const float* row = logits.data() + i * n_vocab;
      const int32_t target = ct[first + 1 + i];
      const double lp = log_prob_of(row, n_vocab, target);
      nll -= lp;
      nll2 += lp * lp;
      if (on_row) on_row(c, i, row, target);
    }
    r.n_scored += n_score;
    r.running.push_back(std::exp(nll / static_cast<double>(r.n_scored)));
    if (on_chunk) on_chunk(c, r.running.back());
  }
  const double cnt = static_cast<double>(r.n_scored);
  r.nll = nll / cnt;
  r.ppl = std::exp(r.nll);
  const double var = nll2 / cnt - r.nll * r.nll;
  r.ppl_err = (var > 0 && r.n_scored > 1) ? std::sqrt(var / (cnt - 1)) * r.ppl : 0.0;
  return r;
}

}  // namespace k3::tools
