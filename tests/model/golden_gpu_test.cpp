// tests/model/golden_gpu_test: every golden model with its layers on the GPU (CI: lavapipe),
// everything placed (-ngl all) and the routed experts kept on the CPU (-ngl all --cpu-moe), in
// batch, step and chunk:7, against the float64 reference with the model's acceptance rule.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "gpu/gpu_fixture.h"
#include "model/golden_util.h"
#include "model/gpu_placement.h"
#include "model/gpu_products.h"
#include "runtime/engine.h"

namespace k3::test {
namespace {

const char* kModels[] = {"archtest-s1", "tiny10-base", "tiny10-softplus", "tiny10-noqlora",
                         "small-q8_0",  "small-k3mix", "small-q2k",       "small-mxfp4"};

struct GpuCase {
  const char* model;
  bool cpu_moe;
};

class GoldenGpu : public ::testing::TestWithParam<GpuCase> {};

TEST_P(GoldenGpu, AllModesMeetAcceptance) {
  K3_NEED_GPU(dev);
  (void)dev;
  const std::string name = GetParam().model;
  auto m = model::Model::load(golden_dir() + "/" + name + ".gguf");
  model::GpuPlacement p;
  p.n_gpu_layers = model::GpuPlacement::kAllLayers;
  p.cpu_moe = GetParam().cpu_moe;
  try {
    model::place_on_gpu(*m, p);
  } catch (const k3::Error& e) {
    // A model with a weight type the GPU lacks: that type's matrices would be refused here.
    FAIL() << e.what();
  }
  ASSERT_NE(m->gpu(), nullptr);
  const auto& acc = manifest()["models"][name]["acceptance"];
  const double max_nmse = acc["nmse_vs_ref64_max"].get<double>();
  const int n_tok = manifest()["models"][name]["n_tokens"].get<int>();
  const int min_top1 = static_cast<int>(std::ceil(acc["top1_vs_ref64_min"].get<double>() * n_tok - 1e-9));
  const auto tokens = golden_tokens(name);
  const auto ref = golden_ref64(name);
  for (const char* mode : {"batch", "step", "chunk:7"}) {
    const uint64_t before = m->gpu()->products(), trips = m->gpu()->round_trips();
    runtime::Engine eng(m, {.n_threads = 2, .n_ubatch = static_cast<int64_t>(tokens.size())});
    const auto logits = runtime::eval_logits(eng, tokens, runtime::EvalMode::parse(mode));
    ASSERT_EQ(logits.size(), ref.size());
    const double e = nmse(logits, ref);
    const int top1 = top1_agree(logits, ref, static_cast<size_t>(eng.n_vocab()));
    fmt::print(
        "{:16s} gpu{} {:8s} NMSE {:.3e} (max {:.3e})  top-1 {}/{}  {} products on the GPU in {} round "
        "trips\n",
        name, GetParam().cpu_moe ? "+cpu-moe" : "", mode, e, max_nmse, top1, n_tok,
        m->gpu()->products() - before, m->gpu()->round_trips() - trips);
    EXPECT_LE(e, max_nmse) << name << " " << mode;
    EXPECT_GE(top1, min_top1) << name << " " << mode;
    EXPECT_GT(m->gpu()->products(), before) << "the products ran on the CPU";
    // Products of one input share a round trip (ops::Matmul::batch groups them).
    EXPECT_LT(m->gpu()->round_trips() - trips, m->gpu()->products() - before);
  }
}

std::vector<GpuCase> cases() {
  std::vector<GpuCase> v;
  for (const char* m : kModels) v.push_back({m, false});
  for (const char* m : kModels) v.push_back({m, true});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Models, GoldenGpu, ::testing::ValuesIn(cases()), [](const auto& info) {
  std::string n = std::string(info.param.model) + (info.param.cpu_moe ? "_cpu_moe" : "_all");
  for (char& c : n)
    if (c == '-') c = '_';
  return n;
});

}  // namespace
}  // namespace k3::test
