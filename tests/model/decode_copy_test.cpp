// tests/model/decode_copy_test: the mapped expert store's decode copy (model/expert_source.h,
// kernels/decode_layout.h) leaves a golden model's logits unchanged bit for bit, in step mode
// (one-token products: the copy is read) and batch mode (the file rows are read).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "model/golden_util.h"
#include "runtime/engine.h"

namespace k3::test {
namespace {

std::vector<float> logits(const std::shared_ptr<model::Model>& m, const std::vector<int32_t>& tokens,
                          const char* mode) {
  runtime::EngineOptions opts;
  opts.n_threads = 2;
  opts.n_ubatch = static_cast<int64_t>(tokens.size());
  runtime::Engine eng(m, opts);
  return runtime::eval_logits(eng, tokens, runtime::EvalMode::parse(mode));
}

// small-k3mix has IQ1_M gate/up experts (and IQ2_XXS down, which has no decode layout).
TEST(DecodeCopy, GoldenLogitsUnchangedBitForBit) {
  const std::string name = "small-k3mix";
  std::shared_ptr<model::Model> m = model::Model::load(golden_dir() + "/" + name + ".gguf");
  const auto tokens = golden_tokens(name);
  const std::vector<float> step = logits(m, tokens, "step"), batch = logits(m, tokens, "batch");

  const model::ExpertSource::DecodeCopy small = m->experts().make_decode_copy(1024, 2, false);
  EXPECT_EQ(small.bytes, 0u);
  EXPECT_FALSE(small.skipped.empty());  // either no kernel here or "would not fit"

  const model::ExpertSource::DecodeCopy r = m->experts().make_decode_copy(UINT64_MAX, 2, false);
  if (r.inapplicable) GTEST_SKIP() << r.skipped;
  ASSERT_EQ(r.skipped, "");
  EXPECT_EQ(r.file_bytes, 1146880u);  // the IQ1_M experts: 10 tensors (k3 info)
  EXPECT_GE(r.bytes, r.file_bytes / 56 * 80);
  EXPECT_EQ(m->experts().make_decode_copy(UINT64_MAX, 2, false).skipped, "already made");

  const std::vector<float> step2 = logits(m, tokens, "step"), batch2 = logits(m, tokens, "batch");
  ASSERT_EQ(step2.size(), step.size());
  EXPECT_EQ(std::memcmp(step.data(), step2.data(), step.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(batch.data(), batch2.data(), batch.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace k3::test
