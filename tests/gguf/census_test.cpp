// Census numbers against values computed independently by tests/gguf/census_reference.py
// (plain-Python GGUF reader) on the golden models, plus a sparse REAP55-shaped synthetic
// model for the expert formula "276 × 11,010,048 × 400".
#include "gguf/census.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "gguf/gguf_test_util.h"

namespace k3::gguf {
namespace {

const TypeCensus* type_of(const Census& c, quant::Type t) {
  for (const TypeCensus& x : c.types)
    if (x.type == t) return &x;
  return nullptr;
}

TEST(GgufCensus, SmallQ8) {
  auto f = GgufFile::open(testing::golden("small-q8_0.gguf"));
  Census c = take_census(*f);
  EXPECT_TRUE(c.is_k3);
  EXPECT_EQ(c.architecture, "kimi-k3");
  EXPECT_EQ(c.tensor_count, 160u);
  EXPECT_EQ(c.kv_count, 42u);
  EXPECT_EQ(c.params, 12595256u);
  EXPECT_EQ(c.tensor_bytes, 13478880u);
  EXPECT_EQ(c.file_size, 13494624u);
  ASSERT_EQ(c.types.size(), 2u);
  EXPECT_EQ(c.types[0].type, quant::Type::F32);  // ordered by type id
  EXPECT_EQ(c.types[0].tensors, 69u);
  EXPECT_EQ(c.types[0].bytes, 131296u);
  EXPECT_EQ(c.types[0].params, 32824u);
  EXPECT_EQ(c.types[1].type, quant::Type::Q8_0);
  EXPECT_EQ(c.types[1].tensors, 91u);
  EXPECT_EQ(c.types[1].bytes, 13347584u);
  EXPECT_EQ(c.types[1].params, 12562432u);
  EXPECT_DOUBLE_EQ(c.bpw, 8.0 * 13478880 / 12595256);
  EXPECT_DOUBLE_EQ(c.bpw_file, 8.0 * 13494624 / 12595256);
  EXPECT_EQ(c.block_count, 6);
  ASSERT_EQ(c.layers.size(), 6u);
  const char* attn[] = {"KDA", "KDA", "KDA", "MLA", "KDA", "MLA"};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(c.layers[i].attention, attn[i]) << i;
    EXPECT_EQ(c.layers[i].ffn, i == 0 ? "dense" : "MoE") << i;
    EXPECT_EQ(c.layers[i].expert_slots, i == 0 ? 0u : 8u) << i;
  }
  EXPECT_EQ(c.n_kda, 4u);
  EXPECT_EQ(c.n_mla, 2u);
  EXPECT_EQ(c.n_dense, 1u);
  EXPECT_EQ(c.n_moe, 5u);
  EXPECT_EQ(c.expert_tensors, 15u);
  ASSERT_EQ(c.expert_groups.size(), 1u);
  EXPECT_EQ(expert_group_text(c.expert_groups[0]), "15 \u00d7 65,536 \u00d7 8");
  EXPECT_EQ(c.expert_groups[0].bytes, 8355840u);
  EXPECT_EQ(c.expert_params, 15u * 65536u * 8u);
  EXPECT_EQ(c.vocab_size, 272);
  EXPECT_EQ(c.tokenizer_model, "gpt2");
  EXPECT_TRUE(c.warnings.empty());
  uint64_t layer_tensors = 0;
  for (const LayerCensus& l : c.layers) layer_tensors += l.tensors;
  EXPECT_EQ(layer_tensors, 160u - 4u);  // all but the 4 global tensors
}

TEST(GgufCensus, OtherGoldenModels) {
  {
    Census c = take_census(*GgufFile::open(testing::golden("small-k3mix.gguf")));
    ASSERT_NE(type_of(c, quant::Type::IQ1_M), nullptr);
    EXPECT_EQ(type_of(c, quant::Type::IQ1_M)->tensors, 10u);
    EXPECT_EQ(type_of(c, quant::Type::IQ1_M)->bytes, 1146880u);
    EXPECT_EQ(type_of(c, quant::Type::IQ2_XXS)->tensors, 5u);
    EXPECT_EQ(type_of(c, quant::Type::IQ2_XXS)->params, 2621440u);
    EXPECT_EQ(type_of(c, quant::Type::Q8_0)->tensors, 76u);
    EXPECT_EQ(c.tensor_bytes, 6945760u);
    EXPECT_EQ(c.expert_groups[0].bytes, 1822720u);
  }
  {
    Census c = take_census(*GgufFile::open(testing::golden("small-q2k.gguf")));
    EXPECT_EQ(c.types.size(), 7u);
    EXPECT_EQ(type_of(c, quant::Type::Q2_K)->tensors, 59u);
    EXPECT_EQ(type_of(c, quant::Type::Q3_K)->bytes, 1323520u);
    EXPECT_EQ(type_of(c, quant::Type::Q4_0)->tensors, 6u);
    EXPECT_EQ(type_of(c, quant::Type::Q6_K)->params, 69632u);
  }
  {
    Census c = take_census(*GgufFile::open(testing::golden("archtest-s1.gguf")));
    EXPECT_EQ(c.tensor_count, 84u);
    EXPECT_EQ(c.params, 971753u);
    ASSERT_EQ(c.layers.size(), 2u);
    EXPECT_EQ(c.layers[0].attention, "MLA");  // head_count_kv is an array here
    EXPECT_EQ(c.layers[0].ffn, "dense");
    EXPECT_EQ(c.layers[1].attention, "KDA");
    EXPECT_EQ(c.layers[1].ffn, "MoE");
    ASSERT_EQ(c.expert_groups.size(), 1u);  // the *_exps.scale companions are not experts
    EXPECT_EQ(expert_group_text(c.expert_groups[0]), "3 \u00d7 36,864 \u00d7 2");
  }
  {
    Census c = take_census(*GgufFile::open(testing::golden("tiny10-noqlora.gguf")));
    EXPECT_EQ(c.params, 765220u);
    EXPECT_EQ(c.n_mla, 3u);
    EXPECT_EQ(c.n_kda, 7u);
    EXPECT_EQ(expert_group_text(c.expert_groups[0]), "27 \u00d7 1,536 \u00d7 8");
  }
  {
    // Not a model: no architecture, no layers, no experts.
    Census c = take_census(*GgufFile::open(testing::golden("small-imatrix.gguf")));
    EXPECT_FALSE(c.is_k3);
    EXPECT_EQ(c.general_type, "imatrix");
    EXPECT_EQ(c.block_count, -1);
    EXPECT_TRUE(c.layers.empty());
    EXPECT_EQ(c.tensor_count, 188u);
    EXPECT_EQ(c.params, 52167u);
    auto j = nlohmann::json::parse(census_json(c));
    EXPECT_TRUE(j["layers"].is_null());
    EXPECT_TRUE(j["architecture"].is_null());
  }
}

TEST(GgufCensus, JsonIsStable) {
  Census c = take_census(*GgufFile::open(testing::golden("small-q8_0.gguf")));
  auto j = nlohmann::json::parse(census_json(c));
  EXPECT_EQ(j["format"], "k3-info");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["tensor_count"], 160);
  EXPECT_EQ(j["params"], 12595256);
  EXPECT_EQ(j["types"][1]["type"], "Q8_0");
  EXPECT_EQ(j["types"][1]["tensors"], 91);
  EXPECT_EQ(j["hparams"]["block_count"], 6);
  EXPECT_EQ(j["hparams"]["attention.layer_norm_rms_epsilon"], 1e-05);
  EXPECT_EQ(j["hparams"]["kda.gate_lower_bound"], -5.0);
  EXPECT_EQ(j["hparams"]["expert_weights_norm"], true);
  EXPECT_EQ(j["hparams"]["attention.head_count_kv"], nlohmann::json::parse("[0,0,0,1,0,1]"));
  EXPECT_EQ(j["layers"]["mla"], nlohmann::json::parse("[3,5]"));
  EXPECT_EQ(j["layers"]["moe"], nlohmann::json::parse("[1,2,3,4,5]"));
  EXPECT_EQ(j["layers"]["per_layer"][3]["attention"], "MLA");
  EXPECT_EQ(j["experts"]["groups"][0]["text"], "15 \u00d7 65,536 \u00d7 8");
  EXPECT_EQ(j["tokenizer"]["vocab_size"], 272);
  EXPECT_TRUE(j["warnings"].empty());
}

TEST(GgufCensus, Helpers) {
  EXPECT_EQ(with_commas(0), "0");
  EXPECT_EQ(with_commas(999), "999");
  EXPECT_EQ(with_commas(1000), "1,000");
  EXPECT_EQ(with_commas(11010048), "11,010,048");
  EXPECT_EQ(index_ranges({0, 1, 2, 4, 6, 7}), "0-2,4,6-7");
  EXPECT_EQ(index_ranges({}), "");
}

// The REAP55 release shape: 93 layers, layer 0 dense, 92 latent-MoE layers of 400 experts,
// experts [3584, 3072, 400] (gate/up IQ1_M, down IQ2_XXS). Written sparse: only metadata
// takes disk space; the data section is a ~280 GB hole, which also exercises 64-bit offsets.
TEST(GgufCensus, Reap55ExpertFormula) {
  testing::ScratchDir dir;
  std::vector<int32_t> hkv(93);
  for (int i = 0; i < 93; ++i) hkv[i] = (i % 4 == 3) ? 1 : 0;
  std::vector<std::pair<std::string, Value>> kvs = {
      {"general.architecture", Value::string("kimi-k3")},
      {"kimi-k3.block_count", Value::u32(93)},
      {"kimi-k3.embedding_length", Value::u32(7168)},
      {"kimi-k3.expert_count", Value::u32(400)},
      {"kimi-k3.expert_used_count", Value::u32(16)},
      {"kimi-k3.leading_dense_block_count", Value::u32(1)},
      {"kimi-k3.attention.head_count", Value::u32(96)},
      {"kimi-k3.attention.head_count_kv", Value::array_i32(hkv)},
  };
  std::vector<TensorSpec> ts;
  for (int l = 1; l < 93; ++l)
    for (const char* n : {"gate", "up", "down"}) {
      TensorSpec s;
      s.name = fmt::format("blk.{}.ffn_{}_exps.weight", l, n);
      bool down = std::string(n) == "down";
      s.ne = down ? std::vector<int64_t>{3072, 3584, 400} : std::vector<int64_t>{3584, 3072, 400};
      s.type = down ? quant::Type::IQ2_XXS : quant::Type::IQ1_M;
      ts.push_back(s);
    }
  WriteOptions opt;
  opt.sparse_holes = true;
  write_gguf(dir.file("reap.gguf"), kvs, ts, opt);
  Census c = take_census(*GgufFile::open(dir.file("reap.gguf")));
  ASSERT_EQ(c.expert_groups.size(), 1u);
  EXPECT_EQ(expert_group_text(c.expert_groups[0]), "276 \u00d7 11,010,048 \u00d7 400");
  EXPECT_EQ(c.expert_params, 276ull * 11010048ull * 400ull);
  EXPECT_EQ(c.n_moe, 92u);
  EXPECT_EQ(c.n_dense, 1u);
  EXPECT_EQ(c.n_mla, 23u);
  EXPECT_EQ(c.n_kda, 70u);
  EXPECT_EQ(c.layers[92].expert_slots, 400u);
  EXPECT_EQ(type_of(c, quant::Type::IQ1_M)->bytes, 184ull * 11010048ull * 400ull / 256ull * 56ull);
  EXPECT_TRUE(c.warnings.empty());
}

TEST(GgufCensus, GpuRiskWarningsAndSlotMismatch) {
  testing::ScratchDir dir;
  TensorSpec a;
  a.name = "blk.0.ffn_up_exps.weight";
  a.ne = {256, 4, 3};
  a.type = quant::Type::IQ2_S;
  TensorSpec b;
  b.name = "blk.0.attn_q.weight";
  b.ne = {256, 2};
  b.type = quant::Type::IQ3_S;
  write_gguf(dir.file("w.gguf"),
             {{"general.architecture", Value::string("kimi-k3")},
              {"kimi-k3.block_count", Value::u32(1)},
              {"kimi-k3.expert_count", Value::u32(8)}},
             {a, b});
  Census c = take_census(*GgufFile::open(dir.file("w.gguf")));
  ASSERT_EQ(c.warnings.size(), 3u);
  EXPECT_NE(c.warnings[0].find("IQ3_S"), std::string::npos) << c.warnings[0];
  EXPECT_NE(c.warnings[1].find("IQ2_S"), std::string::npos) << c.warnings[1];
  EXPECT_NE(c.warnings[1].find("sm_120"), std::string::npos) << c.warnings[1];
  EXPECT_NE(c.warnings[2].find("3 expert slots but expert_count is 8"), std::string::npos) << c.warnings[2];
}

}  // namespace
}  // namespace k3::gguf
