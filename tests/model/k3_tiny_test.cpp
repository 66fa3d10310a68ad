// tests/model/k3_tiny_test: the shipped trained model (models/k3-tiny) against the float64
// logits of the PyTorch twin (train/ref_logits.py) on a fixed chat + prose sequence, in
// batch, step and chunk:7 modes. The F16 master must match to 1e-9 (k3 runs F16 weights in
// exact F32 arithmetic); a quantized file must stay within the bound of
// tests/data/k3-tiny/manifest.json, which is 2x llama.cpp's own distance from the same float64
// logits where that was measured (the golden rule, tests/data/golden/README.md).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "model/golden_util.h"
#include "runtime/engine.h"

namespace k3::test {
namespace {

std::string tiny_data(const std::string& f) { return std::string(K3_TEST_DATA_DIR) + "/k3-tiny/" + f; }

const nlohmann::json& tiny_manifest() {
  static const nlohmann::json m = nlohmann::json::parse(read_text(tiny_data("manifest.json")));
  return m;
}

std::vector<std::string> tiny_models() {
  std::vector<std::string> names;
  for (const auto& [name, _] : tiny_manifest()["models"].items()) names.push_back(name);
  return names;
}

class K3Tiny : public ::testing::TestWithParam<std::string> {};

TEST_P(K3Tiny, MatchesTheFloat64TwinInEveryMode) {
  const std::string name = GetParam();
  const auto& spec = tiny_manifest()["models"][name];
  auto m = model::Model::load(std::string(K3_MODELS_DIR) + "/k3-tiny/" + name + ".gguf");
  const auto tokens = runtime::parse_token_list(read_text(tiny_data(tiny_manifest()["tokens"])), "tokens");
  const auto ref = read_f32(tiny_data(spec["ref64"]));
  const double max_nmse = spec["nmse_vs_ref64_max"].get<double>();
  const int top1_min = spec["top1_vs_ref64_min"].get<int>();
  for (const char* mode : {"batch", "step", "chunk:7"}) {
    runtime::EngineOptions opts;
    opts.n_threads = 2;
    runtime::Engine eng(m, opts);
    const auto logits = runtime::eval_logits(eng, tokens, runtime::EvalMode::parse(mode));
    ASSERT_EQ(logits.size(), ref.size()) << name;
    const double e = nmse(logits, ref);
    const int top1 = top1_agree(logits, ref, static_cast<size_t>(eng.n_vocab()));
    fmt::print("{:18s} {:8s} NMSE {:.3e} (max {:.3e})  top-1 {}/{}\n", name, mode, e, max_nmse, top1,
               tokens.size());
    EXPECT_LE(e, max_nmse) << name << " " << mode;
    EXPECT_GE(top1, top1_min) << name << " " << mode;
  }
}

INSTANTIATE_TEST_SUITE_P(Shipped, K3Tiny, ::testing::ValuesIn(tiny_models()), [](const auto& info) {
  std::string s = info.param;
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
});

}  // namespace
}  // namespace k3::test
