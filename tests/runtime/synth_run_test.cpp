// Synthetic models load and run in the engine across shapes and quant mixes. (The generation
// loop's own test is tests/server/local_job_test.cpp.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/eval_logits.h"
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

}  // namespace

TEST(SynthRun, ShapesAndQuantMixesLoadAndRun) {
  std::vector<std::pair<std::string, tools::SynthConfig>> cases;
  auto base = tools::synth_preset("tiny");
  cases.emplace_back("tiny", base);
  {
    auto c = base;
    c.q_lora_rank = 0;               // plain attn_q
    c.kda_gate_lower_bound.reset();  // softplus gate
    c.attn_res_block_size = 0;       // plain residual stream
    cases.emplace_back("noqlora-softplus-nores", c);
  }
  {
    auto c = base;
    c.n_embd_exp_latent = 0;  // experts at n_embd (128: IQ types fall back)
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
