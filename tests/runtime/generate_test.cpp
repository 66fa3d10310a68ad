// Synthetic models load and run in the engine across shapes and quant mixes, and the
// generation loop feeds tokens back correctly: greedy generation equals the argmax of an
// independent full-sequence evaluation (runtime/eval_logits) at every step.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/eval_logits.h"
#include "runtime/generate.h"
#include "runtime/sampler.h"
#include "tools/synth/synth.h"

namespace fs = std::filesystem;
using namespace k3;

namespace {

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& name)
      : path((fs::temp_directory_path() / (std::to_string(::getpid()) + "-" + name)).string()) {}
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

std::shared_ptr<model::Model> make(const tools::SynthConfig& cfg, const std::string& name) {
  TempFile f(name);
  tools::write_synth(f.path, cfg);
  auto m = model::Model::load(f.path);  // the mapping outlives the unlinked file
  return m;
}

int32_t argmax(const float* row, int64_t n) {
  return static_cast<int32_t>(std::max_element(row, row + n) - row);
}

}  // namespace

TEST(SynthRun, GreedyGenerationMatchesFullSequenceArgmax) {
  auto model = make(tools::synth_preset("tiny"), "gen-tiny.gguf");
  runtime::Engine eng(model, {.n_threads = 1});
  runtime::SamplerParams sp;
  sp.temperature = 0.0f;
  runtime::Sampler sampler(sp);
  const std::vector<int32_t> prompt = {72, 101, 108, 108, 111};  // "Hello"
  std::vector<int32_t> gen;
  runtime::GenerateOptions go;
  go.n_predict = 6;
  auto st = runtime::generate(eng, sampler, prompt, go, [&](int32_t t) { gen.push_back(t); });
  ASSERT_EQ(gen.size(), 6u);
  EXPECT_EQ(st.stop, "length");
  EXPECT_EQ(st.n_prompt, 5);
  EXPECT_EQ(st.n_gen_decoded, 5);

  std::vector<int32_t> all = prompt;
  all.insert(all.end(), gen.begin(), gen.end() - 1);
  runtime::Engine ref(model, {.n_threads = 1});
  std::vector<float> logits = runtime::eval_logits(ref, all, runtime::EvalMode{});
  const int64_t nv = ref.n_vocab();
  ASSERT_EQ(static_cast<int64_t>(logits.size()), static_cast<int64_t>(all.size()) * nv);
  for (size_t i = 0; i < gen.size(); ++i)
    EXPECT_EQ(argmax(&logits[(prompt.size() - 1 + i) * nv], nv), gen[i]) << "step " << i;
  // A random model that is not degenerate: finite logits with some spread.
  float lo = *std::min_element(logits.begin(), logits.end());
  float hi = *std::max_element(logits.begin(), logits.end());
  EXPECT_TRUE(std::isfinite(lo) && std::isfinite(hi));
  EXPECT_GT(hi - lo, 0.1f);
}

TEST(SynthRun, ShapesAndQuantMixesLoadAndRun) {
  std::vector<std::pair<std::string, tools::SynthConfig>> cases;
  auto base = tools::synth_preset("tiny");
  cases.emplace_back("tiny", base);
  {
    auto c = base;
    c.q_lora_rank = 0;           // plain attn_q
    c.gate_lower_bound.reset();  // softplus gate
    c.attn_res_block = 0;        // plain residual stream
    cases.emplace_back("noqlora-softplus-nores", c);
  }
  {
    auto c = base;
    c.n_latent = 0;  // experts at n_embd (128: IQ types fall back)
    c.n_expert_shared = 0;
    c.routed_norm = false;
    c.attn_gate = false;
    c.n_layer = 5;
    c.mla_layers = {0, 4};
    cases.emplace_back("nolatent-noshared", c);
  }
  {
    auto c = base;
    c.trunk_type = quant::Type::F16;
    c.rules = {{"ffn_.*_exps", quant::Type::MXFP4}, {"attn_output", quant::Type::Q4_K}};
    c.n_vocab = 300;
    cases.emplace_back("f16-mxfp4", c);
  }
  {
    auto c = base;
    c.sparse = true;  // all-zero matrices are valid too
    cases.emplace_back("sparse", c);
  }
  for (const auto& [name, cfg] : cases) {
    SCOPED_TRACE(name);
    auto model = make(cfg, "shape-" + name + ".gguf");
    runtime::Engine eng(model, {.n_threads = 1});
    std::vector<runtime::BatchToken> b = {{1, 0, -1, true}, {2, 0, -1, true}, {3, 0, -1, true}};
    std::vector<float> logits = eng.decode(b);
    ASSERT_EQ(logits.size(), 3u * cfg.n_vocab);
    for (float v : logits) ASSERT_TRUE(std::isfinite(v));
  }
}
