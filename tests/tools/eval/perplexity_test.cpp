// Perplexity against an independent computation from the float64 golden reference logits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "tools/eval/golden_io.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/eval_logits.h"
#include "tools/eval/perplexity.h"

namespace k3::tools {
namespace {

using testing::golden_floats;
using testing::golden_tokens;

struct Expected {
  double nll = 0;    // mean -log p over the scored tokens
  double bound = 0;  // |Δ mean nll| allowed
  int64_t n_scored = 0;
};

// One chunk of 48: positions 24…46 predict tokens 25…47 (llama-perplexity scores the second
// half). Tolerance: for each scored row t, |Δ log p(target)| ≤ |Δl_target| + max_j|Δl_j| ≤ 2·e_t
// with e_t = ‖Δl_t‖₂, so |Δ mean nll| ≤ (2/S)·Σ e_t ≤ 2·sqrt(Σ_t e_t² / S) ≤
// 2·sqrt(T·Σ ref² / S), where T is the golden acceptance NMSE the engine must meet
// (README "Acceptance rule": NMSE(engine vs ref64) ≤ T) and Σ ref² runs over all 48 rows.
Expected expected_from_ref64(const std::string& name, int64_t n_vocab, double nmse_accept) {
  const std::vector<float> ref = golden_floats(name + ".ref64.f32");
  const std::vector<int32_t> tok = golden_tokens(name);
  EXPECT_EQ(ref.size(), 48u * n_vocab);
  Expected e;
  double sum_sq = 0;
  for (float v : ref) sum_sq += double(v) * v;
  for (int64_t pos = 24; pos <= 46; ++pos) {
    const float* row = ref.data() + pos * n_vocab;
    double mx = row[0];
    for (int64_t j = 1; j < n_vocab; ++j) mx = std::max(mx, double(row[j]));
    double s = 0;
    for (int64_t j = 0; j < n_vocab; ++j) s += std::exp(double(row[j]) - mx);
    e.nll -= double(row[tok[pos + 1]]) - mx - std::log(s);
    ++e.n_scored;
  }
  e.nll /= double(e.n_scored);
  e.bound = 2 * std::sqrt(nmse_accept * sum_sq / double(e.n_scored));
  return e;
}

void check_model(const std::string& name, double nmse_accept) {
  auto model = model::Model::load(testing::golden_path(name + ".gguf"));
  const int64_t n_vocab = model->hparams().n_vocab;
  runtime::Engine eng(model, {.n_threads = 2, .n_ctx = 48, .n_ubatch = 16});
  PerplexityOptions po;
  po.n_ctx = 48;
  const PerplexityResult r = perplexity(eng, golden_tokens(name), po);
  const Expected e = expected_from_ref64(name, n_vocab, nmse_accept);
  EXPECT_EQ(r.n_chunks, 1);
  EXPECT_EQ(r.n_scored, e.n_scored);
  ASSERT_EQ(r.running.size(), 1u);
  EXPECT_DOUBLE_EQ(r.running[0], r.ppl);
  EXPECT_NEAR(r.nll, e.nll, e.bound) << name << ": PPL " << r.ppl << " vs ref64 " << std::exp(e.nll);
  EXPECT_NEAR(std::log(r.ppl), r.nll, 1e-12);
  EXPECT_GT(r.ppl_err, 0);
  // The bound must be tight enough to mean something: well under the spread of the nll.
  EXPECT_LT(e.bound, 0.05 * e.nll) << name;
}

// F32 model: acceptance NMSE 1e-9 (the table of tests/data/golden/README.md).
TEST(Perplexity, MatchesRef64OnTiny10Base) { check_model("tiny10-base", 1e-9); }
TEST(Perplexity, MatchesRef64OnTiny10Softplus) { check_model("tiny10-softplus", 1e-9); }

// The scoring arithmetic alone: PPL from the engine's own full logits (eval_logits, every
// position) must equal what perplexity() computes from the rows it asks for.
TEST(Perplexity, MatchesEnginesOwnLogits) {
  for (const char* name : {"tiny10-base", "small-q8_0", "small-q2k"}) {
    auto model = model::Model::load(testing::golden_path(std::string(name) + ".gguf"));
    const int64_t V = model->hparams().n_vocab;
    runtime::Engine eng(model, {.n_threads = 2, .n_ctx = 48});
    const auto tok = golden_tokens(name);
    const std::vector<float> all = runtime::eval_logits(eng, tok, runtime::EvalMode{});
    const std::vector<float> ref = golden_floats(std::string(name) + ".ref64.f32");
    double d2 = 0, r2 = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      d2 += (double(all[i]) - ref[i]) * (double(all[i]) - ref[i]);
      r2 += double(ref[i]) * ref[i];
    }
    double nll = 0;
    for (int64_t pos = 24; pos <= 46; ++pos) nll -= log_prob_of(all.data() + pos * V, V, tok[pos + 1]);
    nll /= 23;
    PerplexityOptions po;
    po.n_ctx = 48;
    const PerplexityResult r = perplexity(eng, tok, po);
    std::printf("%s: nmse %.3e ppl %.6f direct %.6f\n", name, d2 / r2, r.ppl, std::exp(nll));
    EXPECT_NEAR(r.nll, nll, 1e-6) << name << " (engine NMSE vs ref64 of eval_logits: " << d2 / r2 << ")";
  }
}

TEST(Perplexity, ChunkingAndScoringFollowLlamaPerplexity) {
  EXPECT_EQ(perplexity_scored_per_chunk(48), 23);
  EXPECT_EQ(perplexity_scored_per_chunk(512), 255);
  PerplexityOptions po;
  po.n_ctx = 16;
  EXPECT_EQ(perplexity_n_chunks(48, po), 3);
  EXPECT_EQ(perplexity_n_chunks(47, po), 2);
  po.max_chunks = 1;
  EXPECT_EQ(perplexity_n_chunks(48, po), 1);
  po.max_chunks = -1;
  EXPECT_THROW(perplexity_n_chunks(15, po), k3::Error);
  po.bos_token = 7;
  std::vector<int32_t> t(40);
  for (int i = 0; i < 40; ++i) t[i] = 100 + i;
  const auto ct = perplexity_chunk_tokens(t, po, 2);
  ASSERT_EQ(ct.size(), 32u);
  EXPECT_EQ(ct[0], 7);
  EXPECT_EQ(ct[1], 101);
  EXPECT_EQ(ct[16], 7);
  EXPECT_EQ(ct[17], 117);
}

// Several chunks: each chunk restarts from an empty sequence, so chunk k's result equals a
// one-chunk run over its own tokens.
TEST(Perplexity, ChunksAreIndependent) {
  auto model = model::Model::load(testing::golden_path("tiny10-base.gguf"));
  runtime::Engine eng(model, {.n_threads = 2, .n_ctx = 16});
  const auto tok = golden_tokens("tiny10-base");
  PerplexityOptions po;
  po.n_ctx = 16;
  const PerplexityResult all = perplexity(eng, tok, po);
  ASSERT_EQ(all.n_chunks, 3);
  double nll_sum = 0;
  for (int c = 0; c < 3; ++c) {
    std::vector<int32_t> part(tok.begin() + 16 * c, tok.begin() + 16 * (c + 1));
    const PerplexityResult one = perplexity(eng, part, po);
    nll_sum += one.nll * double(one.n_scored);
    EXPECT_NEAR(std::exp(nll_sum / double(7 * (c + 1))), all.running[c], 1e-9 * all.running[c]);
  }
}

TEST(Perplexity, LogProbIsANormalisedLogSoftmax) {
  const float l[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  double lse = 0, total = 0;
  for (int i = 0; i < 4; ++i) total += std::exp(log_prob_of(l, 4, i, &lse));
  EXPECT_NEAR(total, 1.0, 1e-15);
  EXPECT_NEAR(lse, 4.0 + std::log(1 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-3.0)), 1e-12);
  EXPECT_EQ(argmax_of(l, 4), 3);
}

}  // namespace
}  // namespace k3::tools
