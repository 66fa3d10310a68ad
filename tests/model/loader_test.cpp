// tests/model/loader_test: hyperparameters and weight binding. A golden model is rewritten
// with one thing changed (a key's type, a missing key or tensor, a wrong shape) and loading
// must fail with a k3::Error naming that key or tensor; the things llama.cpp tolerates
// (extra tensors, dropped trailing 1-dims, head_count as an array) must load.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>

#include "core/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "model/golden_util.h"
#include "model/hparams.h"

namespace k3::test {
namespace {

using gguf::Value;

struct Edit {
  std::function<void(std::vector<std::pair<std::string, Value>>&)> kvs;
  std::function<void(std::vector<gguf::TensorSpec>&)> tensors;
};

// Writes a copy of golden NAME with the edit applied and returns its path.
std::string rewrite(const std::string& name, const Edit& e) {
  auto src = gguf::GgufFile::open(golden_dir() + "/" + name + ".gguf");
  auto kvs = src->kvs();
  std::vector<gguf::TensorSpec> ts;
  for (const auto& t : src->tensors()) {
    gguf::TensorSpec s;
    s.name = t.name;
    s.ne = t.ne;
    s.type = t.type;
    s.data = t.data;
    ts.push_back(s);
  }
  if (e.kvs) e.kvs(kvs);
  if (e.tensors) e.tensors(ts);
  const std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("k3_loader_test_{}.gguf", ::getpid())).string();
  gguf::write_gguf(path, kvs, ts);
  return path;
}

void set_kv(std::vector<std::pair<std::string, Value>>& kvs, const std::string& key, Value v) {
  for (auto& [k, val] : kvs)
    if (k == key) {
      val = std::move(v);
      return;
    }
  kvs.emplace_back(key, std::move(v));
}

void drop_kv(std::vector<std::pair<std::string, Value>>& kvs, const std::string& key) {
  std::erase_if(kvs, [&](const auto& kv) { return kv.first == key; });
}

// Loading the edited model must throw an error mentioning every fragment.
void expect_load_error(const std::string& name, const Edit& e, std::vector<std::string> frags) {
  const std::string path = rewrite(name, e);
  try {
    model::Model::load(path);
    ADD_FAILURE() << "no error; expected one mentioning " << frags[0];
  } catch (const Error& err) {
    for (const auto& f : frags) EXPECT_NE(std::string(err.what()).find(f), std::string::npos) << err.what();
  }
  std::remove(path.c_str());
}

TEST(Loader, GoldenHyperparameters) {
  auto m = golden_model("tiny10-base");
  const auto& hp = m->hparams();
  EXPECT_EQ(hp.n_layer, 10u);
  EXPECT_EQ(hp.n_embd, 64u);
  EXPECT_EQ(hp.n_head, 4u);
  EXPECT_EQ(hp.n_vocab, 100u);
  // MLA at 1-indexed {4, 8, 10} = 0-indexed {3, 7, 9}, from head_count_kv only.
  for (uint32_t il = 0; il < hp.n_layer; ++il) EXPECT_EQ(hp.is_kda(il), il != 3 && il != 7 && il != 9) << il;
  EXPECT_TRUE(hp.kda_gate_lower_bound.has_value());
  EXPECT_FLOAT_EQ(*hp.kda_gate_lower_bound, -5.0f);
  EXPECT_EQ(hp.attn_res_block_size, 4u);
  EXPECT_EQ(hp.n_expert, 8u);
  EXPECT_EQ(hp.n_expert_used, 3u);
  EXPECT_TRUE(hp.expert_weights_norm);
  EXPECT_FLOAT_EQ(hp.expert_weights_scale, 2.5f);
  EXPECT_EQ(hp.expert_in(), 48u);
  EXPECT_FALSE(golden_model("tiny10-softplus")->hparams().kda_gate_lower_bound.has_value());
  EXPECT_FALSE(golden_model("tiny10-noqlora")->weights().layers[3].mla.q_lora);
  EXPECT_TRUE(m->weights().layers[3].mla.q_lora);
}

TEST(Loader, ArchtestQuirksLoad) {
  // head_count stored as an array, single-head tensors with trailing 1-dims dropped, 3-D conv
  // weights, and 35 tensors K3 ignores.
  auto m = golden_model("archtest-s1");
  const auto& hp = m->hparams();
  EXPECT_EQ(hp.n_head, 1u);
  EXPECT_FALSE(hp.is_kda(0));
  EXPECT_TRUE(hp.is_kda(1));
  EXPECT_EQ(hp.n_rot, 64u);
  EXPECT_EQ(hp.expert_in(), 192u);
  EXPECT_FALSE(hp.expert_weights_norm);
  EXPECT_EQ(hp.expert_weights_scale, 0.0f);
}

TEST(Loader, QuantizedWeightsAreUsedInPlace) {
  auto m = golden_model("small-q8_0");
  const auto& f = m->gguf();
  const auto& w = m->weights().layers[0].kda.wq;
  EXPECT_EQ(w.type, quant::Type::Q8_0);
  EXPECT_EQ(w.data, f.tensor("blk.0.attn_q.weight")->data);  // a view, not a copy
  const auto ex = m->experts().acquire(1, 5);
  const auto* gate = f.tensor("blk.1.ffn_gate_exps.weight");
  EXPECT_EQ(ex.gate.data, gate->data + 5 * gate->nbytes / 8);
  EXPECT_EQ(ex.down.rows, 256);
  m->experts().release(1, 5);
}

TEST(Loader, StrictKeyTypes) {
  expect_load_error("tiny10-base", {[](auto& kv) { set_kv(kv, "kimi-k3.block_count", Value::i32(10)); }, {}},
                    {"kimi-k3.block_count", "UINT32", "INT32"});
  expect_load_error(
      "tiny10-base",
      {[](auto& kv) { set_kv(kv, "kimi-k3.attention.layer_norm_rms_epsilon", Value::f64(1e-5)); }, {}},
      {"layer_norm_rms_epsilon", "FLOAT32"});
  expect_load_error("tiny10-base",
                    {[](auto& kv) { set_kv(kv, "kimi-k3.expert_weights_norm", Value::u32(1)); }, {}},
                    {"expert_weights_norm", "BOOL"});
  expect_load_error(
      "tiny10-base",
      {[](auto& kv) {
         set_kv(kv, "kimi-k3.attention.head_count_kv", Value::array_i32({0, 0, 0, 1, 0, 0, 0, 1, 0}));
       },
       {}},
      {"head_count_kv", "9 entries"});
}

TEST(Loader, RequiredKeys) {
  for (const char* key :
       {"kimi-k3.attention.layer_norm_rms_epsilon", "kimi-k3.attention.kv_lora_rank",
        "kimi-k3.attention.key_length_mla", "kimi-k3.ssm.conv_kernel", "kimi-k3.kda.head_dim",
        "kimi-k3.expert_gating_func", "kimi-k3.attn_res.block_size", "kimi-k3.activation.situ_beta"}) {
    expect_load_error("tiny10-base", {[key](auto& kv) { drop_kv(kv, key); }, {}}, {key, "missing"});
  }
  expect_load_error("tiny10-base",
                    {[](auto& kv) { set_kv(kv, "general.architecture", Value::string("llama")); }, {}},
                    {"general.architecture", "kimi-k3"});
}

TEST(Loader, TensorsChecked) {
  expect_load_error("tiny10-base",
                    {{},
                     [](auto& ts) {
                       std::erase_if(ts,
                                     [](const auto& t) { return t.name == "blk.3.attn_kv_a_mqa.weight"; });
                     }},
                    {"blk.3.attn_kv_a_mqa.weight", "missing"});
  expect_load_error("tiny10-base",
                    {{},
                     [](auto& ts) {
                       for (auto& t : ts)
                         if (t.name == "blk.1.ffn_up_exps.weight") std::swap(t.ne[0], t.ne[1]);
                     }},
                    {"blk.1.ffn_up_exps.weight", "shape"});
  expect_load_error("tiny10-base",
                    {{},
                     [](auto& ts) {
                       for (auto& t : ts)
                         if (t.name == "blk.0.ssm_f_a.weight") std::swap(t.ne[0], t.ne[1]);
                     }},
                    {"blk.0.ssm_f_a.weight", "expected [64, 16]"});
}

}  // namespace
}  // namespace k3::test
