// KL divergence: a model against itself, and small-q2k against small-q8_0 checked against a
// direct computation from both models' logits.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "tools/eval/golden_io.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/eval_logits.h"
#include "tools/eval/perplexity.h"
#include "tools/eval/perplexity_kl.h"

namespace k3::tools {
namespace {

namespace fs = std::filesystem;
using testing::golden_path;
using testing::golden_tokens;

constexpr int64_t kCtx = 48;

std::string temp_file(const std::string& stem) {
  return (fs::temp_directory_path() / (stem + "." + std::to_string(::getpid()) + ".klbase")).string();
}

// Runs `k3 perplexity --kl-base-out` in-process: writes the base file and returns the PPL.
PerplexityResult write_base(const std::string& model, const std::vector<int32_t>& tok,
                            const std::string& path, uint32_t top_k) {
  auto m = model::Model::load(golden_path(model + ".gguf"));
  runtime::Engine eng(m, {.n_threads = 2, .n_ctx = kCtx});
  PerplexityOptions po;
  po.n_ctx = kCtx;
  KlBaseHeader h;
  h.n_vocab = m->hparams().n_vocab;
  h.n_ctx = kCtx;
  h.n_chunks = 1;
  h.n_scored = static_cast<uint32_t>(perplexity_scored_per_chunk(kCtx));
  h.top_k = top_k;
  h.tokens_hash = tokens_hash(perplexity_chunk_tokens(tok, po, 1));
  KlBaseWriter w(path, h);
  auto r = perplexity(eng, tok, po, [&](int64_t, int64_t, const float* l, int32_t t) { w.add(l, t); });
  w.commit();
  return r;
}

struct Compared {
  KlSummary s;
  PerplexityResult r;
};

Compared compare(const std::string& model, const std::vector<int32_t>& tok, const std::string& path) {
  auto m = model::Model::load(golden_path(model + ".gguf"));
  runtime::Engine eng(m, {.n_threads = 2, .n_ctx = kCtx});
  KlBaseReader rd(path);
  PerplexityOptions po;
  po.n_ctx = rd.header().n_ctx;
  EXPECT_EQ(rd.header().tokens_hash, tokens_hash(perplexity_chunk_tokens(tok, po, 1)));
  KlAccumulator acc;
  KlRecord rec;
  Compared c;
  c.r = perplexity(eng, tok, po, [&](int64_t, int64_t, const float* l, int32_t t) {
    rd.next(rec);
    EXPECT_EQ(rec.target, t);
    acc.add(rec, l, m->hparams().n_vocab);
  });
  c.s = acc.summary();
  return c;
}

TEST(KlDivergence, ModelAgainstItselfIsZero) {
  const auto tok = golden_tokens("small-q8_0");
  for (uint32_t k : {272u, 16u}) {
    const std::string path = temp_file("self");
    const PerplexityResult base = write_base("small-q8_0", tok, path, k);
    const Compared c = compare("small-q8_0", tok, path);
    EXPECT_EQ(c.s.n, 23);
    EXPECT_EQ(c.s.kld_mean, 0.0) << "top-k " << k;
    EXPECT_EQ(c.s.kld_max, 0.0);
    EXPECT_EQ(c.s.top1, 1.0);
    EXPECT_NEAR(c.s.ppl_base, base.ppl, 1e-5 * base.ppl);  // stored as float log-probs
    EXPECT_NEAR(c.s.dppl(), 0.0, 1e-5 * base.ppl);
    fs::remove(path);
  }
}

// Exact KL from both models' full logits, in double.
TEST(KlDivergence, Q2kAgainstQ8MatchesDirectComputation) {
  const auto tok = golden_tokens("small-q8_0");
  const std::string path = temp_file("q8");
  write_base("small-q8_0", tok, path, 272);
  const Compared c = compare("small-q2k", tok, path);

  auto logits_of = [&](const std::string& name) {
    auto m = model::Model::load(golden_path(name + ".gguf"));
    runtime::Engine eng(m, {.n_threads = 2, .n_ctx = kCtx});
    return runtime::eval_logits(eng, tok, runtime::EvalMode{});
  };
  const std::vector<float> p = logits_of("small-q8_0"), q = logits_of("small-q2k");
  const int64_t V = 272;
  ASSERT_EQ(p.size(), size_t(kCtx * V));
  std::vector<double> kls;
  int same = 0;
  double nll_p = 0, nll_q = 0;
  for (int64_t pos = 24; pos <= 46; ++pos) {
    const float* a = p.data() + pos * V;
    const float* b = q.data() + pos * V;
    double la = 0, lb = 0;
    log_prob_of(a, V, 0, &la);
    log_prob_of(b, V, 0, &lb);
    double kl = 0;
    for (int64_t j = 0; j < V; ++j) {
      const double lpa = a[j] - la, lpb = b[j] - lb;
      kl += std::exp(lpa) * (lpa - lpb);
    }
    kls.push_back(kl);
    same += argmax_of(a, V) == argmax_of(b, V);
    nll_p -= a[tok[pos + 1]] - la;
    nll_q -= b[tok[pos + 1]] - lb;
  }
  double mean = 0;
  for (double k : kls) mean += k;
  mean /= double(kls.size());
  std::sort(kls.begin(), kls.end());

  EXPECT_GT(c.s.kld_mean, 1e-4);  // Q2_K is a much coarser quantization than Q8_0
  // Float rounding of the stored log-probs (~1e-7 relative) is the only difference.
  EXPECT_NEAR(c.s.kld_mean, mean, 1e-5 * mean + 1e-7);
  EXPECT_NEAR(c.s.kld_max, kls.back(), 1e-5 * kls.back() + 1e-7);
  EXPECT_NEAR(c.s.kld_median, kls[kls.size() / 2], 1e-5 * kls.back() + 1e-7);
  EXPECT_DOUBLE_EQ(c.s.top1, same / 23.0);
  EXPECT_NEAR(c.s.ppl_base, std::exp(nll_p / 23), 1e-5 * c.s.ppl_base);
  EXPECT_NEAR(c.s.ppl, std::exp(nll_q / 23), 1e-9 * c.s.ppl);
  EXPECT_NEAR(c.s.dppl(), std::exp(nll_q / 23) - std::exp(nll_p / 23), 1e-4);

  // A coarsened (top-16) base gives a lower bound on the exact KL, per the log-sum inequality.
  const std::string path16 = temp_file("q8k16");
  write_base("small-q8_0", tok, path16, 16);
  const Compared c16 = compare("small-q2k", tok, path16);
  EXPECT_GT(c16.s.kld_mean, 0.0);
  EXPECT_LE(c16.s.kld_mean, mean * (1 + 1e-5) + 1e-7);
  EXPECT_EQ(c16.s.top1, c.s.top1);
  fs::remove(path);
  fs::remove(path16);
}

TEST(KlDivergence, RejectsBadFiles) {
  const std::string path = temp_file("bad");
  {
    std::ofstream f(path, std::ios::binary);
    f << "not a KL base file at all, definitely not";
  }
  EXPECT_THROW(KlBaseReader{path}, k3::Error);
  // A valid file cut short names the truncation.
  const auto tok = golden_tokens("small-q8_0");
  write_base("small-q8_0", tok, path, 8);
  fs::resize_file(path, fs::file_size(path) - 4);
  try {
    KlBaseReader rd(path);
    FAIL() << "truncated file accepted";
  } catch (const k3::Error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  fs::remove(path);
  EXPECT_THROW(KlBaseReader{path}, k3::Error);  // missing
}

}  // namespace
}  // namespace k3::tools
