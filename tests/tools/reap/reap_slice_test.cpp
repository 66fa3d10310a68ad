// reap slicing: on golden models with different expert encodings (Q8_0, IQ1_M/IQ2_XXS mix,
// MXFP4, F32 with .scale/.input_scale companions) every kept expert of the output is a
// byte-exact copy of its source expert, router rows and bias entries follow the kept list,
// everything else is byte-identical, only expert_count changes among the KVs, and the result
// loads and runs in the engine; sharded output too; bad requests are refused with the culprit
// named and leave no file behind.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "gguf/file.h"
#include "model/hparams.h"
#include "model/model.h"
#include "tools/reap/reap_test_util.h"
#include "runtime/engine.h"
#include "tools/reap/reap.h"
#include "tools/reap/reap_slice.h"

using namespace k3;
using reap_test::data;
using reap_test::Scratch;

namespace {

// A plan that differs per layer: the experts whose id has the layer's parity, topped up
// from the others, then cut to n_keep.
tools::ReapPlan parity_plan(const model::HParams& hp, uint32_t n_keep) {
  tools::ReapPlan p;
  p.n_expert = hp.n_expert;
  p.n_keep = n_keep;
  for (uint32_t il = hp.n_layer_dense_lead; il < hp.n_layer; ++il) {
    std::vector<int32_t> pick;
    for (uint32_t e = 0; e < hp.n_expert; ++e)
      if ((e + il) % 2 == 0) pick.push_back(int32_t(e));
    for (uint32_t e = 0; e < hp.n_expert && pick.size() < n_keep; ++e)
      if ((e + il) % 2 != 0) pick.push_back(int32_t(e));
    pick.resize(n_keep);
    std::sort(pick.begin(), pick.end());
    p.layers.push_back({il, pick});
  }
  return p;
}

bool is_expert_tensor(const std::string& name) {
  for (const char* s :
       {".ffn_gate_exps.", ".ffn_up_exps.", ".ffn_down_exps.", ".ffn_gate_inp.", ".exp_probs_b."})
    if (name.find(s) != std::string::npos) return true;
  return false;
}

uint32_t layer_of(const std::string& name) {
  return uint32_t(std::stoul(name.substr(4, name.find('.', 4) - 4)));
}

void expect_pruned_copy(const gguf::GgufFile& src, const gguf::GgufFile& out, const tools::ReapPlan& plan,
                        size_t expected_sliced_per_layer) {
  const model::HParams hp = model::load_hparams(src);
  // KVs: same keys, same order, same values, except expert_count.
  ASSERT_EQ(src.kvs().size(), out.kvs().size());
  for (size_t i = 0; i < src.kvs().size(); ++i) {
    const auto& [k, v] = src.kvs()[i];
    ASSERT_EQ(k, out.kvs()[i].first);
    const gguf::Value& w = out.kvs()[i].second;
    EXPECT_EQ(v.type, w.type) << k;
    if (k == "kimi-k3.expert_count") {
      EXPECT_EQ(w.as_uint(), plan.n_keep);
    } else {
      EXPECT_EQ(v.bits, w.bits) << k;
      EXPECT_EQ(v.str, w.str) << k;
      EXPECT_EQ(v.raw, w.raw) << k;
      EXPECT_EQ(v.strs, w.strs) << k;
    }
  }
  ASSERT_EQ(src.tensors().size(), out.tensors().size());
  std::map<uint32_t, size_t> sliced;
  for (size_t i = 0; i < src.tensors().size(); ++i) {
    const gguf::TensorInfo& a = src.tensors()[i];
    const gguf::TensorInfo& b = out.tensors()[i];
    ASSERT_EQ(a.name, b.name);
    EXPECT_EQ(a.type, b.type) << a.name;
    if (!is_expert_tensor(a.name)) {
      EXPECT_EQ(a.ne, b.ne) << a.name;
      ASSERT_EQ(a.nbytes, b.nbytes) << a.name;
      EXPECT_EQ(0, std::memcmp(a.data, b.data, a.nbytes)) << a.name;
      continue;
    }
    const uint32_t il = layer_of(a.name);
    sliced[il] += 1;
    const std::vector<int32_t>& kept = plan.layers.at(il - hp.n_layer_dense_lead).kept;
    std::vector<int64_t> ne = a.ne;
    ne.back() = plan.n_keep;
    EXPECT_EQ(ne, b.ne) << a.name;
    const uint64_t stride = a.nbytes / hp.n_expert;
    ASSERT_EQ(b.nbytes, stride * plan.n_keep) << a.name;
    for (size_t k = 0; k < kept.size(); ++k)
      EXPECT_EQ(0, std::memcmp(b.data + k * stride, a.data + uint64_t(kept[k]) * stride, stride))
          << a.name << " new expert " << k << " vs source expert " << kept[k];
    // Router rows and bias entries, read as numbers (all F32 in these models).
    if (a.name.find("ffn_gate_inp.weight") != std::string::npos ||
        a.name.find("exp_probs_b.bias") != std::string::npos) {
      ASSERT_EQ(a.type, quant::Type::F32);
      const int64_t row = a.ne.size() == 2 ? a.ne[0] : 1;
      const auto* fa = reinterpret_cast<const float*>(a.data);
      const auto* fb = reinterpret_cast<const float*>(b.data);
      for (size_t k = 0; k < kept.size(); ++k)
        for (int64_t c = 0; c < row; ++c) ASSERT_EQ(fb[int64_t(k) * row + c], fa[int64_t(kept[k]) * row + c]);
    }
  }
  for (uint32_t il = hp.n_layer_dense_lead; il < hp.n_layer; ++il)
    EXPECT_EQ(sliced[il], expected_sliced_per_layer) << "layer " << il;
}

struct Case {
  const char* model;
  uint32_t keep;
  size_t sliced_per_layer;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " keep " << c.keep; }

class ReapSlice : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(ReapSlice, KeptExpertsAreByteExactAndTheModelRuns) {
  const Case c = GetParam();
  Scratch s(std::string("slice-") + c.model);
  const std::string src_path = data(std::string("golden/") + c.model + ".gguf");
  auto src = gguf::GgufFile::open(src_path);
  const model::HParams hp = model::load_hparams(*src);
  const tools::ReapPlan plan = parity_plan(hp, c.keep);
  const tools::ReapWriteResult r = tools::write_pruned_gguf(*src, plan, s / "out.gguf");
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.n_sliced, c.sliced_per_layer * plan.layers.size());
  EXPECT_LT(r.bytes_out, r.bytes_in);
  auto out = gguf::GgufFile::open(s / "out.gguf");
  expect_pruned_copy(*src, *out, plan, c.sliced_per_layer);

  // Loads (all shapes validated against the new expert_count) and decodes.
  const auto toks = reap_test::golden_tokens(c.model);
  const std::vector<int32_t> head(toks.begin(), toks.begin() + 16);
  const auto logits = reap_test::all_logits(s / "out.gguf", head);
  auto m = model::Model::load(s / "out.gguf");
  EXPECT_EQ(m->hparams().n_expert, c.keep);
  ASSERT_EQ(logits.size(), head.size() * m->hparams().n_vocab);
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
}

INSTANTIATE_TEST_SUITE_P(Golden, ReapSlice,
                         ::testing::Values(Case{"small-q8_0", 4, 5}, Case{"small-k3mix", 5, 5},
                                           Case{"small-mxfp4", 3, 5},
                                           // F32 experts with .scale and .input_scale companions
                                           Case{"archtest-s1", 1, 11}),
                         [](const auto& info) {
                           std::string n = info.param.model;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

TEST(ReapSliceSplit, ShardedOutputHoldsTheSameTensors) {
  Scratch s("split");
  auto src = gguf::GgufFile::open(data("golden/small-q8_0.gguf"));
  const tools::ReapPlan plan = parity_plan(model::load_hparams(*src), 4);
  tools::write_pruned_gguf(*src, plan, s / "one.gguf");
  gguf::WriteOptions wo;
  wo.split.max_bytes = 2'000'000;
  const auto r = tools::write_pruned_gguf(*src, plan, s / "many.gguf", wo);
  ASSERT_GT(r.files.size(), 2u);
  auto one = gguf::GgufFile::open(s / "one.gguf");
  auto many = gguf::GgufFile::open(r.files.front());
  ASSERT_EQ(one->tensors().size(), many->tensors().size());
  for (const auto& t : one->tensors()) {
    const gguf::TensorInfo* u = many->tensor(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    ASSERT_EQ(t.nbytes, u->nbytes);
    EXPECT_EQ(0, std::memcmp(t.data, u->data, t.nbytes)) << t.name;
  }
  EXPECT_EQ(model::Model::load(r.files.front())->hparams().n_expert, 4u);
}

TEST(ReapSliceErrors, RefusesBadRequestsAndLeavesNoFile) {
  Scratch s("errors");
  const std::string src_path = data("golden/small-k3mix.gguf");
  auto src = gguf::GgufFile::open(src_path);
  const model::HParams hp = model::load_hparams(*src);  // 8 experts, 3 used
  auto expect_error = [&](const std::function<void()>& fn, const std::string& needle) {
    try {
      fn();
      ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what(); }
    EXPECT_TRUE(s.files().empty() || (s.files().size() == 1 && s.files()[0] == "missing-up.gguf"))
        << "left " << s.files().size() << " files";
  };

  // Keep counts.
  expect_error([&] { tools::check_prunable(*src, 9); }, "more than the model's 8 experts");
  expect_error([&] { tools::check_prunable(*src, 2); }, "fewer than the 3 experts each token uses");
  expect_error([&] { tools::check_prunable(*src, 0); }, "at least 1");
  // Ratios: R is the fraction removed.
  EXPECT_EQ(tools::keep_from_ratio(8, 3, 0.5), 4u);
  EXPECT_EQ(tools::keep_from_ratio(896, 16, 0.5536), 400u);
  EXPECT_EQ(tools::keep_from_ratio(896, 16, 0.5), 448u);
  for (double bad : {0.0, 1.0, -0.25, 1.5, std::nan("")})
    expect_error([&] { tools::keep_from_ratio(8, 3, bad); }, "--prune-ratio must be between 0 and 1");
  expect_error([&] { tools::keep_from_ratio(8, 3, 0.7); }, "fewer than the 3 each token uses");

  // A plan that does not fit the model.
  tools::ReapPlan plan = parity_plan(hp, 4);
  tools::ReapPlan short_plan = plan;
  short_plan.layers.pop_back();
  expect_error([&] { tools::write_pruned_gguf(*src, short_plan, s / "x.gguf"); }, "MoE layers");
  tools::ReapPlan unsorted = plan;
  std::swap(unsorted.layers[0].kept[0], unsorted.layers[0].kept[1]);
  expect_error([&] { tools::write_pruned_gguf(*src, unsorted, s / "x.gguf"); }, "ascending");

  // Output directory missing.
  expect_error([&] { tools::write_pruned_gguf(*src, plan, s / "no-such-dir/x.gguf"); }, "no-such-dir");
  expect_error([&] { tools::check_output_location(s / "no-such-dir/x.gguf", "-o"); }, "does not exist");
  // Writing over the input model.
  {
    tools::ReapOptions o;
    o.n_keep = 4;
    o.output = src_path;
    expect_error([&] { tools::check_reap_request(*src, o); }, "is the input model itself");
  }

  // A model without one of the expert tensors.
  reap_test::write_edited(src_path, s / "missing-up.gguf", {"blk.2.ffn_up_exps.weight"});
  auto broken = gguf::GgufFile::open(s / "missing-up.gguf");
  expect_error([&] { tools::check_prunable(*broken, 4); }, "missing tensor blk.2.ffn_up_exps.weight");
  expect_error([&] { tools::write_pruned_gguf(*broken, plan, s / "x.gguf"); }, "blk.2.ffn_up_exps.weight");
}
