// store::shape_of is the one place an engine shape comes from: for the options each command
// builds its engine with, the shape (and so the memory plan) is what that engine holds —
// n_ctx 0 is the model's training context (4096 for a file without one), the f16 cache flag
// follows the cache type, k3 serve's sequences are 2 × slots with the prompt cache (each
// slot's snapshot is a sequence) and its micro-batch is the engine's, k3 reap plans its
// calibration engine.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "core/error.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "server/scheduler.h"
#include "store/engine_shape.h"
#include "store/memory_options.h"
#include "store/memory_plan.h"
#include "tools/reap/reap_saliency.h"
#include "tools/synth/synth.h"

namespace fs = std::filesystem;
using namespace k3;

namespace {

struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("k3-engine-shape-test-" + std::to_string(::getpid()));
  Scratch() { fs::create_directories(dir); }
  ~Scratch() { fs::remove_all(dir); }
};

// A tiny synth model whose training context is n_ctx_train.
std::shared_ptr<model::Model> synth_model(uint32_t n_ctx_train) {
  static const Scratch scratch;
  const std::string p = (scratch.dir / ("ctx" + std::to_string(n_ctx_train) + ".gguf")).string();
  if (!fs::exists(p)) {
    tools::SynthConfig c = tools::synth_preset("tiny");
    c.n_ctx_train = n_ctx_train;
    c.seed = 3;
    tools::write_synth(p, c);
  }
  return model::Model::load(p);
}

TEST(EngineShape, FollowsTheEngineOptions) {
  auto m = synth_model(1000);
  runtime::EngineOptions eo;
  eo.n_ctx = 300;
  eo.n_seq_max = 3;
  eo.n_ubatch = 64;
  eo.cache_type = model::CacheType::F16;
  const store::EngineShape s = store::shape_of(*m, eo);
  EXPECT_EQ(s.n_ctx, 300);
  EXPECT_EQ(s.n_seq, 3);
  EXPECT_EQ(s.n_ubatch, 64);
  EXPECT_TRUE(s.cache_f16);
  eo.cache_type = model::CacheType::F32;
  EXPECT_FALSE(store::shape_of(*m, eo).cache_f16);
}

TEST(EngineShape, ContextZeroIsTheModelsTrainingContext) {
  auto m = synth_model(1000);
  runtime::EngineOptions eo;  // n_ctx 0: the model's (k3 run and k3 chat with -c 0)
  const store::EngineShape s = store::shape_of(*m, eo);
  EXPECT_EQ(s.n_ctx, 1000);
  EXPECT_EQ(s.n_seq, 1);
  EXPECT_EQ(s.n_ubatch, eo.n_ubatch);
  EXPECT_FALSE(s.cache_f16);
  // The engine built from the same options holds that context and those sequences.
  runtime::Engine engine(m, eo);
  EXPECT_EQ(engine.n_ctx(), s.n_ctx);
  EXPECT_EQ(engine.n_seq_max(), s.n_seq);

  // A file without a context length: the plan and the engine both hold 4096 tokens (the engine
  // used to grow without bound there while the plan assumed 4096).
  auto no_ctx = synth_model(0);
  EXPECT_EQ(store::shape_of(*no_ctx, eo).n_ctx, 4096);
  runtime::Engine unbounded_before(no_ctx, eo);
  EXPECT_EQ(unbounded_before.n_ctx(), 4096);
}

TEST(EngineShape, TheMlaCacheNeverReallocatesAndBytesCountCapacity) {
  // The first cache row reserves the whole context, so a sequence's cache never doubles (or
  // holds two copies while it moves), and state_bytes() reports what is allocated: the same
  // after 5 tokens as after 205, and in proportion to the context.
  auto m = synth_model(1000);
  auto bytes_after = [&](int64_t n_ctx, int n_tokens) {
    runtime::EngineOptions eo;
    eo.n_ctx = n_ctx;
    runtime::Engine engine(m, eo);
    std::vector<runtime::BatchToken> batch;
    for (int i = 0; i < 5; ++i) batch.push_back({i + 1, 0, -1, i == 4});
    engine.decode(batch);
    for (int i = 5; i < n_tokens; ++i) {
      runtime::BatchToken t{7, 0, -1, true};
      engine.decode(std::span<const runtime::BatchToken>(&t, 1));
    }
    return engine.state_bytes();
  };
  const size_t at5 = bytes_after(300, 5), at205 = bytes_after(300, 205), at5_big = bytes_after(600, 5);
  EXPECT_EQ(at5, at205);
  EXPECT_GT(at5_big, at5);                 // the reservation is the context's
  const size_t fixed = 2 * at5 - at5_big;  // KDA state, the part that does not scale
  EXPECT_EQ(at5_big - fixed, 2 * (at5 - fixed));
}

TEST(EngineShape, TheWorkEstimateCoversTheScratchAndTheScratchIsReused) {
  // The forward pass's working memory (model/scratch.h) grows to the largest size each buffer
  // was asked for and is then reused: once a batch has been decoded, decoding it again (or
  // single tokens) holds the same bytes, and the bytes stay inside the plan's "work" line for
  // the micro-batch, so --ram-budget counts them. (An expert slot's buffers follow the most
  // tokens routed to the expert in that slot, so different batches can still raise them.)
  auto m = synth_model(1000);
  for (int ub : {1, 16, 64}) {
    runtime::EngineOptions eo;
    eo.n_ctx = 400;
    eo.n_ubatch = ub;
    runtime::Engine engine(m, eo);
    std::vector<runtime::BatchToken> batch;
    for (int i = 0; i < 4 * ub; ++i) batch.push_back({1 + (i * 7) % 50, 0, -1, i + 1 == 4 * ub});
    engine.decode(batch);  // four micro-batches of ub tokens
    const size_t warm = engine.scratch_bytes();
    EXPECT_GT(warm, 0u);
    for (int step = 0; step < 5; ++step) {
      runtime::BatchToken t{7, 0, -1, true};
      engine.decode(std::span<const runtime::BatchToken>(&t, 1));
    }
    engine.seq_clear(0);
    engine.decode(batch);  // the same tokens at the same positions: the same routing
    EXPECT_EQ(engine.scratch_bytes(), warm) << "ub " << ub;
    const store::MemoryPlan plan = store::plan_memory(*m, store::kUnlimited, store::shape_of(*m, eo));
    EXPECT_LE(warm, plan.work) << "ub " << ub << ": scratch " << warm << " bytes, plan work " << plan.work;
  }
}

TEST(EngineShape, ServeCountsThePromptCacheSnapshots) {
  auto m = synth_model(1000);
  server::SchedulerOptions so;
  so.n_slots = 3;
  so.n_ctx = 0;
  so.prompt_cache = true;
  const store::EngineShape with = store::shape_of(*m, so.engine_options());
  EXPECT_EQ(with.n_seq, 6);
  EXPECT_EQ(with.n_ctx, 1000);
  EXPECT_FALSE(with.cache_f16);
  so.prompt_cache = false;
  const store::EngineShape without = store::shape_of(*m, so.engine_options());
  EXPECT_EQ(without.n_seq, 3);
  const store::MemoryPlan pw = store::plan_memory(*m, store::kUnlimited, with);
  const store::MemoryPlan po = store::plan_memory(*m, store::kUnlimited, without);
  EXPECT_EQ(pw.state, 2 * po.state);

  // Micro-batches: the engine's default, or a step's whole batch (every slot's next token plus
  // n_batch prompt tokens) when that is shorter.
  so.n_batch = 2048;
  EXPECT_EQ(store::shape_of(*m, so.engine_options()).n_ubatch, runtime::EngineOptions{}.n_ubatch);
  so.n_batch = 16;
  EXPECT_EQ(store::shape_of(*m, so.engine_options()).n_ubatch, 16 + 3);
}

TEST(EngineShape, ReapPlansItsCalibrationEngine) {
  auto m = synth_model(1000);
  tools::ReapCalibOptions ro;
  ro.n_ctx = 100;
  store::EngineShape s = store::shape_of(*m, tools::reap_engine_options(ro));
  EXPECT_EQ(s.n_ctx, 100);
  EXPECT_EQ(s.n_ubatch, 100);
  EXPECT_EQ(s.n_seq, 1);
  ro.n_ctx = 2048;
  s = store::shape_of(*m, tools::reap_engine_options(ro));
  EXPECT_EQ(s.n_ctx, 2048);
  EXPECT_EQ(s.n_ubatch, 512);
  ro.n_ctx = 0;
  EXPECT_THROW(tools::reap_engine_options(ro), Error);
}

}  // namespace
