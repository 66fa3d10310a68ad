// Tests for runtime/sampler: each filter against hand-computed distributions, the chain
// order, penalties with their window, greedy, and seeded reproducibility.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "core/error.h"
#include "runtime/sampler.h"

using k3::runtime::Sampler;
using k3::runtime::SamplerParams;
using k3::runtime::TokenProb;

namespace {

// Every filter off, temperature 1: the plain softmax.
SamplerParams plain() {
  SamplerParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.repeat_penalty = 1.0f;
  return p;
}

std::vector<float> log_probs(const std::vector<double>& p) {
  std::vector<float> l;
  for (double x : p) l.push_back(static_cast<float>(std::log(x)));
  return l;
}

std::map<int32_t, float> as_map(const std::vector<TokenProb>& d) {
  std::map<int32_t, float> m;
  for (const auto& x : d) m[x.token] = x.p;
  return m;
}

}  // namespace

TEST(Sampler, DisabledFiltersGiveThePlainSoftmax) {
  Sampler s(plain());
  auto d = as_map(s.distribution(log_probs({0.1, 0.2, 0.3, 0.4})));
  ASSERT_EQ(d.size(), 4u);
  EXPECT_NEAR(d[0], 0.1, 1e-6);
  EXPECT_NEAR(d[3], 0.4, 1e-6);
}

TEST(Sampler, GreedyIsArgmaxWithLowestIdOnTies) {
  SamplerParams p = plain();
  p.temperature = 0.0f;
  Sampler s(p);
  EXPECT_EQ(s.sample(std::vector<float>{0.1f, 3.0f, -1.0f, 2.9f}), 1);
  EXPECT_EQ(s.sample(std::vector<float>{5.0f, 1.0f, 5.0f}), 0);
  auto d = s.distribution(std::vector<float>{0.0f, 0.0f, 7.0f});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].token, 2);
  EXPECT_EQ(d[0].p, 1.0f);
}

TEST(Sampler, TopKKeepsTheKBest) {
  SamplerParams p = plain();
  p.top_k = 2;
  Sampler s(p);
  auto d = s.distribution(std::vector<float>{1, 2, 3, 4, 5});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].token, 4);
  EXPECT_EQ(d[1].token, 3);
  EXPECT_NEAR(d[0].p, 1.0 / (1.0 + std::exp(-1.0)), 1e-6);  // e^5 / (e^5 + e^4)
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  const auto logits = log_probs({0.05, 0.5, 0.15, 0.3});
  SamplerParams p = plain();
  p.top_p = 0.75f;  // 0.5 < 0.75 <= 0.5 + 0.3
  auto d = as_map(Sampler(p).distribution(logits));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NEAR(d[1], 0.5 / 0.8, 1e-6);
  EXPECT_NEAR(d[3], 0.3 / 0.8, 1e-6);
  p.top_p = 0.85f;  // needs the 0.15 as well
  d = as_map(Sampler(p).distribution(logits));
  ASSERT_EQ(d.size(), 3u);
  EXPECT_NEAR(d[2], 0.15 / 0.95, 1e-6);
  p.top_p = 0.4f;  // the best token alone suffices
  d = as_map(Sampler(p).distribution(logits));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NEAR(d[1], 1.0, 1e-6);
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheBest) {
  const auto logits = log_probs({0.5, 0.3, 0.15, 0.05});
  SamplerParams p = plain();
  p.min_p = 0.25f;  // threshold 0.125: keeps 0.5, 0.3, 0.15
  auto d = as_map(Sampler(p).distribution(logits));
  ASSERT_EQ(d.size(), 3u);
  EXPECT_NEAR(d[2], 0.15 / 0.95, 1e-6);
  p.min_p = 0.35f;  // threshold 0.175: keeps 0.5, 0.3
  d = as_map(Sampler(p).distribution(logits));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NEAR(d[0], 0.5 / 0.8, 1e-6);
}

TEST(Sampler, TemperatureScalesLogitsAfterTheFilters) {
  SamplerParams p = plain();
  p.temperature = 0.5f;
  auto d = as_map(Sampler(p).distribution(std::vector<float>{0.0f, 1.0f}));
  EXPECT_NEAR(d[1], std::exp(2.0) / (1.0 + std::exp(2.0)), 1e-6);
  // top-p judges the temperature-1 distribution: with p = 0.7 and probabilities
  // {0.6, 0.4}, both survive, whatever the temperature does afterwards.
  p.temperature = 0.1f;
  p.top_p = 0.7f;
  auto d2 = Sampler(p).distribution(log_probs({0.6, 0.4}));
  EXPECT_EQ(d2.size(), 2u);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  SamplerParams p = plain();
  p.repeat_penalty = 2.0f;
  p.repeat_last_n = 64;
  Sampler s(p);
  s.accept(0);
  s.accept(1);
  s.accept(0);  // counted once
  // [2, -2, 1.5] → [1, -4, 1.5]
  auto d = as_map(s.distribution(std::vector<float>{2.0f, -2.0f, 1.5f}));
  const double z = std::exp(1.0) + std::exp(-4.0) + std::exp(1.5);
  EXPECT_NEAR(d[0], std::exp(1.0) / z, 1e-6);
  EXPECT_NEAR(d[1], std::exp(-4.0) / z, 1e-6);
  EXPECT_NEAR(d[2], std::exp(1.5) / z, 1e-6);
  p.temperature = 0.0f;
  Sampler g(p);
  g.accept(0);
  EXPECT_EQ(g.sample(std::vector<float>{2.0f, -2.0f, 1.5f}), 2);
}

TEST(Sampler, PenaltyWindowForgetsOldTokens) {
  SamplerParams p = plain();
  p.temperature = 0.0f;
  p.repeat_penalty = 2.0f;
  p.repeat_last_n = 1;
  Sampler s(p);
  s.accept(0);
  s.accept(1);  // only token 1 is in the window now
  EXPECT_EQ(s.sample(std::vector<float>{2.0f, -2.0f, 1.5f}), 0);
  s.reset();
  EXPECT_EQ(s.sample(std::vector<float>{2.0f, -2.0f, 1.5f}), 0);
}

TEST(Sampler, FrequencyAndPresencePenalties) {
  SamplerParams p = plain();
  p.frequency_penalty = 0.5f;
  p.presence_penalty = 1.0f;
  Sampler s(p);
  s.accept(1);
  s.accept(1);
  // token 1: 3 − 2·0.5 − 1 = 1; token 0 stays 1: equal probabilities.
  auto d = as_map(s.distribution(std::vector<float>{1.0f, 3.0f}));
  EXPECT_NEAR(d[0], 0.5, 1e-6);
  EXPECT_NEAR(d[1], 0.5, 1e-6);
}

TEST(Sampler, SeedReproducibleAndFrequenciesFollowTheDistribution) {
  SamplerParams p = plain();
  p.seed = 1234;
  const auto logits = log_probs({0.5, 0.3, 0.2});
  Sampler a(p), b(p);
  p.seed = 1235;
  Sampler c(p);
  std::vector<int32_t> ra, rb, rc;
  std::vector<int> counts(3, 0);
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    ra.push_back(a.sample(logits));
    rb.push_back(b.sample(logits));
    rc.push_back(c.sample(logits));
    ++counts[ra.back()];
  }
  EXPECT_EQ(ra, rb);
  EXPECT_NE(ra, rc);
  EXPECT_NEAR(counts[0] / double(n), 0.5, 0.015);
  EXPECT_NEAR(counts[1] / double(n), 0.3, 0.015);
  EXPECT_NEAR(counts[2] / double(n), 0.2, 0.015);
  // reset() re-seeds: the same stream again.
  a.reset();
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.sample(logits), ra[i]);
}

TEST(Sampler, RejectsBadParameters) {
  SamplerParams p = plain();
  p.top_p = 0.0f;
  EXPECT_THROW(Sampler{p}, k3::Error);
  p = plain();
  p.min_p = 1.5f;
  EXPECT_THROW(Sampler{p}, k3::Error);
  p = plain();
  p.repeat_penalty = 0.0f;
  EXPECT_THROW(Sampler{p}, k3::Error);
  Sampler s(plain());
  EXPECT_THROW(s.sample(std::vector<float>{}), k3::Error);
}
