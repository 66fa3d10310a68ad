// The one generation loop (the scheduler's, as the CLI drives it through server/local_job.h):
// greedy generation equals the argmax of the engine's logits fed the same tokens at every
// step; a stop request keeps the answer so far; a slot's kept
// state serves the same owner's next prompt, with the same tokens a fresh run gives; a model
// driven without a vocabulary reports token ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <span>
#include <vector>

#include "runtime/engine.h"
#include "server/local_job.h"
#include "server/scheduler.h"
#include "server_test_util.h"

using namespace k3;
using namespace k3::server;

namespace {

SchedulerOptions one_slot() {
  SchedulerOptions o;
  o.n_slots = 1;
  o.n_threads = 1;
  o.n_ctx = 256;
  return o;
}

std::shared_ptr<Job> greedy(std::vector<int32_t> prompt, int64_t n) {
  auto job = std::make_shared<Job>();
  job->kind = JobKind::Completion;
  job->prompt = std::move(prompt);
  job->params.sampler.temperature = 0;
  job->params.max_tokens = n;
  job->params.ignore_eos = true;
  return job;
}

// The ids a job produced, from its events.
std::vector<int32_t> ids_of(Scheduler& s, const std::shared_ptr<Job>& job, Event* done = nullptr) {
  std::vector<int32_t> ids;
  Event d = run_job(s, job, [&](const Event& e) { ids.insert(ids.end(), e.tokens.begin(), e.tokens.end()); });
  if (done) *done = d;
  return ids;
}

const std::vector<int32_t> kPrompt = {72, 101, 108, 108, 111, 44, 32, 119};

}  // namespace

TEST(LocalJob, GreedyGenerationMatchesTheEngineFedTheSameTokens) {
  SchedulerOptions o = one_slot();
  o.prompt_cache = false;  // else the prompt is decoded in two chunks, split at its snapshot point
  Scheduler s(test::shared_model(), test::shared_tokenizer(), o);
  Event done;
  std::vector<int32_t> gen = ids_of(s, greedy(kPrompt, 6), &done);
  ASSERT_EQ(gen.size(), 6u);
  EXPECT_EQ(done.stop, text::StopReason::Length);
  EXPECT_EQ(done.usage.prompt_tokens, static_cast<int64_t>(kPrompt.size()));
  EXPECT_EQ(done.usage.completion_tokens, 6);

  // The reference feeds the same tokens straight to an engine: the prompt in one call, then
  // each generated token, taking the argmax after each. (Any other split of the work differs
  // in the last bits, which flips this model's near tie at step 4.)
  runtime::Engine ref(test::shared_model(), {.n_threads = 1});
  const int64_t nv = ref.n_vocab();
  std::vector<runtime::BatchToken> batch;
  for (size_t i = 0; i < kPrompt.size(); ++i) batch.push_back({kPrompt[i], 0, -1, i + 1 == kPrompt.size()});
  std::vector<float> row = ref.decode(batch);
  for (size_t i = 0; i < gen.size(); ++i) {
    ASSERT_EQ(static_cast<int64_t>(row.size()), nv);
    EXPECT_EQ(std::max_element(row.begin(), row.end()) - row.begin(), gen[i]) << "step " << i;
    runtime::BatchToken b{gen[i], 0, -1, true};
    row = ref.decode(std::span<const runtime::BatchToken>(&b, 1));
  }
}

TEST(LocalJob, AStopRequestKeepsTheAnswerSoFar) {
  Scheduler s(test::shared_model(), test::shared_tokenizer(), one_slot());
  auto job = greedy(kPrompt, 200);
  size_t n_ids = 0;
  Event done = run_job(
      s, job, [&](const Event& e) { n_ids += e.tokens.size(); }, [&] { return n_ids >= 3; });
  EXPECT_EQ(done.stop, text::StopReason::Interrupted);
  EXPECT_EQ(done.finish_reason, "length");
  EXPECT_EQ(done.usage.completion_tokens, static_cast<int64_t>(n_ids));  // every token reported
  EXPECT_GE(n_ids, 3u);
  EXPECT_LT(n_ids, 200u);
}

TEST(LocalJob, TheSlotsKeptStateServesTheNextPromptOfTheSameOwner) {
  Scheduler s(test::shared_model(), test::shared_tokenizer(), one_slot());
  std::vector<int32_t> first = ids_of(s, greedy(kPrompt, 5));
  ASSERT_EQ(first.size(), 5u);
  // The next turn repeats the prompt and the decoded answer (the last token was never
  // decoded), then adds its own tokens.
  std::vector<int32_t> next = kPrompt;
  next.insert(next.end(), first.begin(), first.end());
  next.insert(next.end(), {32, 111, 107});
  auto job = greedy(next, 4);
  std::vector<int32_t> warm = ids_of(s, job);
  EXPECT_EQ(job->n_cached, static_cast<int64_t>(kPrompt.size() + first.size() - 1));

  auto other = greedy(next, 4);
  other->cache_owner = "someone else";  // never reuses another owner's state
  std::vector<int32_t> cold = ids_of(s, other);
  EXPECT_EQ(other->n_cached, 0);
  EXPECT_EQ(warm, cold);
}

TEST(LocalJob, WithoutAVocabularyEventsCarryTokenIds) {
  Scheduler s(test::shared_model(), nullptr, one_slot());
  auto job = greedy(kPrompt, 4);
  Event done;
  std::vector<int32_t> ids = ids_of(s, job, &done);
  EXPECT_EQ(ids.size(), 4u);
  Scheduler with_vocab(test::shared_model(), test::shared_tokenizer(), one_slot());
  EXPECT_EQ(ids, ids_of(with_vocab, greedy(kPrompt, 4)));
}
