// tests/store/decode_copy_test: the decode copy of the mapped expert store (store/decode_copy.h,
// kernels/decode_layout.h) leaves a golden model's logits unchanged bit for bit, in step mode
// (one-token products: the copy is read) and batch mode (the file rows are read); install_store
// wraps the mapped store in it in mmap mode unless the copy is off.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "kernels/vec_dot.h"
#include "model/golden_util.h"
#include "quant/types.h"
#include "runtime/engine.h"
#include "store/decode_copy.h"
#include "store/engine_shape.h"
#include "store/install.h"

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

std::unique_ptr<model::ExpertSource> mapped(const model::Model& m) {
  return model::make_mapped_expert_source(m.gguf(), m.hparams());
}

// The first MoE layer's gate view of expert `e`, as the model's expert source serves it.
kernels::WeightView gate_of(const model::Model& m, int32_t e) {
  const uint32_t layer = m.hparams().n_layer_dense_lead;
  const kernels::WeightView v = m.experts().acquire(layer, e).gate;
  m.experts().release(layer, e);
  return v;
}

// small-k3mix has IQ1_M gate/up experts and IQ2_XXS down ones (a decode layout on the AVX2 and
// AVX-VNNI kernel paths only; CTest runs this suite under K3_CPU=avx2 too).
const std::string kName = "small-k3mix";

TEST(DecodeCopy, GoldenLogitsUnchangedBitForBit) {
  std::shared_ptr<model::Model> m = model::Model::load(golden_dir() + "/" + kName + ".gguf");
  const auto tokens = golden_tokens(kName);
  const std::vector<float> step = logits(m, tokens, "step"), batch = logits(m, tokens, "batch");

  store::DecodeCopy small = store::make_decode_copy(*m, mapped(*m), 1024, 2, false);
  EXPECT_EQ(small.bytes, 0u);
  EXPECT_FALSE(small.skipped.empty());  // either no kernel here or "would not fit"
  ASSERT_NE(small.source, nullptr);     // the mapped store itself, unwrapped

  store::DecodeCopy r = store::make_decode_copy(*m, std::move(small.source), UINT64_MAX, 2, false);
  if (r.inapplicable) GTEST_SKIP() << r.skipped;
  ASSERT_EQ(r.skipped, "");
  // the IQ1_M experts: 10 tensors of 2048 super-blocks (k3 info); IQ2_XXS: 5 of 2048
  const bool down = kernels::dot_kernel(quant::Type::IQ2_XXS)->dot_rows_decode != nullptr;
  EXPECT_EQ(r.file_bytes, 1146880u + (down ? 5u * 2048u * 66u : 0u));
  EXPECT_EQ(r.types, down ? "IQ1_M, IQ2_XXS" : "IQ1_M");
  EXPECT_GE(r.bytes, 10u * 2048u * 80u + (down ? 5u * 2048u * 144u : 0u));
  const model::ExpertSource* made = r.source.get();
  store::DecodeCopy again = store::make_decode_copy(*m, std::move(r.source), UINT64_MAX, 2, false);
  EXPECT_EQ(again.skipped, "already made");
  EXPECT_EQ(again.source.get(), made);  // not wrapped twice
  m->set_expert_source(std::move(again.source));

  const kernels::WeightView g0 = gate_of(*m, 0), g1 = gate_of(*m, 1);
  ASSERT_NE(g0.decode, nullptr);
  EXPECT_EQ(g1.decode_row(0), g0.decode_row(g0.rows));  // an expert's rows follow the one before
  EXPECT_EQ(g1.data, g0.row(g0.rows));                  // the file's rows as the mapped store gives them

  const std::vector<float> step2 = logits(m, tokens, "step"), batch2 = logits(m, tokens, "batch");
  ASSERT_EQ(step2.size(), step.size());
  EXPECT_EQ(std::memcmp(step.data(), step2.data(), step.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(batch.data(), batch2.data(), batch.size() * sizeof(float)), 0);
}

TEST(DecodeCopy, InstalledInMmapModeUnlessOff) {
  for (const bool on : {false, true}) {
    std::shared_ptr<model::Model> m = model::Model::load(golden_dir() + "/" + kName + ".gguf");
    store::MemoryOptions o;
    o.decode_copy = on;
    o.trunk_hugepages = false;
    runtime::EngineOptions eo;
    EXPECT_EQ(store::install_store(*m, o, store::shape_of(*m, eo), /*quiet=*/true), nullptr);
    const kernels::WeightView g = gate_of(*m, 3);
    if (!on) {
      EXPECT_EQ(g.decode, nullptr);
      continue;
    }
    if (!store::make_decode_copy(*m, mapped(*m), UINT64_MAX, 1, false).skipped.empty()) GTEST_SKIP();
    EXPECT_NE(g.decode, nullptr);
  }
}

}  // namespace
}  // namespace k3::test
