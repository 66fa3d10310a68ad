// Tests for k3 synth's library: tensor plan and metadata against docs/MODEL.md, the seed model
// card's census for the REAP55 shape, random-block validity against the real decoders, the
// vocabulary against the golden small-* models, determinism and type rules.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "core/error.h"
#include "gguf/census.h"
#include "gguf/file.h"
#include "quant/codec.h"
#include "tools/synth/synth.h"
#include "tools/synth/synth_blocks.h"

namespace fs = std::filesystem;
using namespace k3;
using k3::quant::Type;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / fmt::format("k3-synth-test-{}-{}", ::getpid(), counter()++);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

uint64_t disk_bytes(const std::string& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return ~0ull;
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

}  // namespace

// The seed model card (Kimi-K3-REAP55-IQ1_M-GGUF): "2573 tensors, 276 expert tensors with 400
// slots, expert parameters exactly 276 x 11,010,048 x 400, 319 GiB, zero sm_120-broken types",
// 8 shards. Computed by the census library from the written (sparse) files.
TEST(SynthCensus, KimiK3Reap55MatchesTheModelCard) {
  TempDir dir;
  tools::SynthConfig cfg = tools::synth_preset("kimi-k3-reap55");
  auto res = tools::write_synth(dir.file("Kimi-K3-REAP55-IQ1_M.gguf"), cfg);
  ASSERT_EQ(res.files.size(), 8u);
  EXPECT_NE(res.files[0].find("-00001-of-00008.gguf"), std::string::npos);

  auto f = gguf::GgufFile::open(res.files[0]);
  ASSERT_EQ(f->shards().size(), 8u);
  gguf::Census c = gguf::take_census(*f);
  EXPECT_TRUE(c.is_k3);
  EXPECT_EQ(c.tensor_count, 2573u);
  EXPECT_EQ(c.expert_tensors, 276u);
  ASSERT_EQ(c.expert_groups.size(), 1u);
  EXPECT_EQ(c.expert_groups[0].tensors, 276u);
  EXPECT_EQ(c.expert_groups[0].params_per_slot, 11010048u);
  EXPECT_EQ(c.expert_groups[0].slots, 400u);
  EXPECT_EQ(c.expert_params, 276ull * 11010048ull * 400ull);
  EXPECT_EQ(gguf::expert_group_text(c.expert_groups[0]), "276 × 11,010,048 × 400");
  const double gib = static_cast<double>(c.tensor_bytes) / (1ull << 30);
  EXPECT_NEAR(gib, 319.0, 0.5);
  EXPECT_NEAR(static_cast<double>(c.expert_bytes) / (1ull << 30), 262.4, 0.5);  // "262 GiB expert pool"
  EXPECT_EQ(c.n_kda, 69u);
  EXPECT_EQ(c.n_mla, 24u);
  EXPECT_EQ(c.n_dense, 1u);
  EXPECT_EQ(c.n_moe, 92u);
  // No sm_120-unsafe types (IQ1_S, IQ2_S, IQ3_S); exactly the recipe's four types.
  std::set<std::string> types;
  for (const auto& t : c.types) types.insert(quant::type_name(t.type));
  EXPECT_EQ(types, (std::set<std::string>{"F32", "Q8_0", "IQ1_M", "IQ2_XXS"}));
  for (const auto& t : c.types) {
    if (t.type == Type::IQ1_M) { EXPECT_EQ(t.tensors, 184u); }
    if (t.type == Type::IQ2_XXS) { EXPECT_EQ(t.tensors, 92u); }
  }
  // Sparse: 319 GiB of apparent size, almost no disk.
  uint64_t used = 0;
  for (const auto& p : res.files) used += disk_bytes(p);
  EXPECT_LT(used, 256ull << 20);
  EXPECT_GT(c.file_size, c.tensor_bytes);  // apparent size: the whole 319 GiB
}

TEST(SynthPlan, FullKimiK3Shape) {
  tools::SynthConfig cfg = tools::synth_preset("kimi-k3");
  auto plan = tools::synth_plan(cfg);
  // docs/MODEL.md's tensor list: 4 global + 93·4 every layer + 69·14 KDA + 24·9 MLA + 3 dense
  // + 92·11 MoE.
  EXPECT_EQ(plan.size(), 2573u);
  uint64_t expert_params = 0;
  for (const auto& t : plan)
    if (t.name.find("_exps") != std::string::npos) expert_params += t.ne[0] * t.ne[1] * t.ne[2];
  EXPECT_EQ(expert_params, 276ull * 11010048ull * 896ull);
  auto find = [&](const std::string& n) -> const tools::SynthTensor& {
    for (const auto& t : plan)
      if (t.name == n) return t;
    throw std::runtime_error("missing " + n);
  };
  EXPECT_EQ(find("blk.3.attn_q_b.weight").ne, (std::vector<int64_t>{1536, 18432}));
  EXPECT_EQ(find("blk.3.attn_kv_a_mqa.weight").ne, (std::vector<int64_t>{7168, 576}));
  EXPECT_EQ(find("blk.92.attn_k_b.weight").ne, (std::vector<int64_t>{128, 512, 96}));
  EXPECT_EQ(find("blk.92.attn_v_b.weight").ne, (std::vector<int64_t>{512, 128, 96}));
  EXPECT_EQ(find("blk.0.ffn_gate.weight").ne, (std::vector<int64_t>{7168, 33792}));
  EXPECT_EQ(find("blk.1.ffn_down_exps.weight").ne, (std::vector<int64_t>{3072, 3584, 896}));
  EXPECT_EQ(find("blk.1.ffn_down_exps.weight").type, Type::IQ2_XXS);
  EXPECT_EQ(find("blk.1.ffn_up_exps.weight").type, Type::IQ1_M);
  EXPECT_EQ(find("blk.1.ffn_gate_inp.weight").type, Type::F32);
  EXPECT_EQ(find("blk.0.ssm_conv1d_q.weight").type, Type::F32);
  EXPECT_EQ(find("blk.0.ssm_a").type, Type::F32);
  EXPECT_EQ(find("blk.0.ssm_f_b.weight").ne, (std::vector<int64_t>{128, 12288}));
  EXPECT_EQ(find("output.weight").type, Type::Q8_0);
  EXPECT_EQ(find("output.weight").ne, (std::vector<int64_t>{7168, 163840}));
}

TEST(SynthPlan, LayerMapIsTheReleasedOne) {
  // The released model: 0-indexed MLA layers 3, 7, …, 91 and 92; everything else KDA.
  auto mla = tools::synth_mla_map(tools::synth_preset("kimi-k3"));
  ASSERT_EQ(mla.size(), 93u);
  for (uint32_t il = 0; il < 93; ++il) EXPECT_EQ(mla[il], il % 4 == 3 || il == 92) << il;
  auto kv = tools::synth_metadata(tools::synth_preset("kimi-k3"));
  bool found = false;
  for (const auto& [k, v] : kv)
    if (k == "kimi-k3.attention.head_count_kv") {
      found = true;
      ASSERT_EQ(v.size(), 93u);
      EXPECT_EQ(v.elem, gguf::ValueType::INT32);
      for (uint32_t il = 0; il < 93; ++il) EXPECT_EQ(v.int_at(il), mla[il] ? 1 : 0);
    }
  EXPECT_TRUE(found);
}

TEST(SynthMetadata, RequiredKeysWithStrictTypes) {
  auto kv = tools::synth_metadata(tools::synth_preset("tiny"));
  std::map<std::string, gguf::Value> m(kv.begin(), kv.end());
  using VT = gguf::ValueType;
  // The required keys of docs/MODEL.md and their exact GGUF types.
  const std::pair<const char*, VT> required[] = {
      {"context_length", VT::UINT32},
      {"embedding_length", VT::UINT32},
      {"block_count", VT::UINT32},
      {"attention.layer_norm_rms_epsilon", VT::FLOAT32},
      {"attention.key_length_mla", VT::UINT32},
      {"attention.value_length_mla", VT::UINT32},
      {"attention.kv_lora_rank", VT::UINT32},
      {"ssm.conv_kernel", VT::UINT32},
      {"kda.head_dim", VT::UINT32},
      {"expert_feed_forward_length", VT::UINT32},
      {"expert_shared_count", VT::UINT32},
      {"expert_gating_func", VT::UINT32},
      {"attn_res.block_size", VT::UINT32},
      {"activation.situ_beta", VT::FLOAT32},
      {"activation.situ_linear_beta", VT::FLOAT32},
      {"attention.head_count", VT::UINT32},
      {"expert_weights_norm", VT::BOOL},
      {"kda.gate_lower_bound", VT::FLOAT32},
      {"expert_weights_scale", VT::FLOAT32},
  };
  for (const auto& [key, type] : required) {
    auto it = m.find(std::string("kimi-k3.") + key);
    ASSERT_NE(it, m.end()) << key;
    EXPECT_EQ(it->second.type, type) << key;
  }
  EXPECT_EQ(m.at("general.architecture").as_string(), "kimi-k3");
  EXPECT_EQ(m.at("kimi-k3.attention.key_length").as_uint(), 64u + 32u);  // C + R
  EXPECT_EQ(m.at("kimi-k3.expert_gating_func").as_uint(), 2u);
}

// The 272-token byte-level vocabulary is the golden small-* models' one, token for token.
TEST(SynthVocab, MatchesGoldenSmallVocabulary) {
  auto golden = gguf::GgufFile::open(K3_TEST_DATA_DIR "/golden/small-q8_0.gguf");
  auto kv = tools::synth_metadata(tools::synth_preset("tiny"));
  std::map<std::string, gguf::Value> m(kv.begin(), kv.end());
  for (const char* key : {"tokenizer.ggml.model", "tokenizer.ggml.pre"})
    EXPECT_EQ(m.at(key).as_string(), golden->get(key).as_string()) << key;
  for (const char* key :
       {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.padding_token_id"})
    EXPECT_EQ(m.at(key).as_uint(), golden->get(key).as_uint()) << key;
  const gguf::Value& gt = golden->get("tokenizer.ggml.tokens");
  const gguf::Value& st = m.at("tokenizer.ggml.tokens");
  ASSERT_EQ(st.size(), gt.size());
  for (size_t i = 0; i < gt.size(); ++i) EXPECT_EQ(st.string_at(i), gt.string_at(i)) << i;
  EXPECT_EQ(m.at("tokenizer.ggml.token_type").ints(), golden->get("tokenizer.ggml.token_type").ints());
}

TEST(SynthVocab, FullSizeControlTokensAtTheRealIds) {
  auto kv = tools::synth_metadata(tools::synth_preset("kimi-k3"));
  std::map<std::string, gguf::Value> m(kv.begin(), kv.end());
  const gguf::Value& t = m.at("tokenizer.ggml.tokens");
  ASSERT_EQ(t.size(), 163840u);
  EXPECT_EQ(t.string_at(163584), "[BOS]");
  EXPECT_EQ(t.string_at(163585), "[EOS]");
  EXPECT_EQ(t.string_at(163586), "<|end_of_msg|>");
  EXPECT_EQ(t.string_at(163587), "<|open|>");
  EXPECT_EQ(t.string_at(163593), "[EOT]");
  EXPECT_EQ(t.string_at(163838), "[UNK]");
  EXPECT_EQ(m.at("tokenizer.ggml.eos_token_id").as_uint(), 163586u);
  std::set<std::string> unique;
  for (size_t i = 0; i < t.size(); ++i) unique.insert(t.string_at(i));
  EXPECT_EQ(unique.size(), t.size());
}

// Every file type: random blocks decode (with the real decoders) to finite values with about
// the requested RMS and about zero mean.
TEST(SynthBlocks, DecodeFiniteWithTheRequestedMagnitude) {
  const double target = 0.02;
  for (uint32_t id = 0; id < 64; ++id) {
    const quant::TypeInfo* ti = quant::type_info(id);
    if (!ti || !ti->file_type) continue;
    if (ti->type == Type::I8 || ti->type == Type::I16 || ti->type == Type::I32 || ti->type == Type::I64)
      continue;
    const int64_t n = 256 * 64;
    std::vector<uint8_t> buf(quant::row_bytes(ti->type, n));
    tools::synth_fill_random(ti->type, buf.data(), n, target, 42);
    std::vector<float> y(n);
    quant::dequantize_row(ti->type, buf.data(), y.data(), n);
    double s2 = 0, s1 = 0;
    for (float v : y) {
      ASSERT_TRUE(std::isfinite(v)) << ti->name;
      s2 += double(v) * v;
      s1 += v;
    }
    const double rms = std::sqrt(s2 / n), mean = s1 / n;
    EXPECT_GT(rms, target / 1.6) << ti->name;
    EXPECT_LT(rms, target * 1.6) << ti->name;
    EXPECT_LT(std::fabs(mean), 0.25 * target) << ti->name;
  }
}

TEST(SynthBlocks, DeterministicAndSeedDependent) {
  std::vector<uint8_t> a(quant::row_bytes(Type::IQ1_M, 1 << 16)), b(a.size()), c(a.size());
  tools::synth_fill_random(Type::IQ1_M, a.data(), 1 << 16, 0.01, 7);
  tools::synth_fill_random(Type::IQ1_M, b.data(), 1 << 16, 0.01, 7);
  tools::synth_fill_random(Type::IQ1_M, c.data(), 1 << 16, 0.01, 8);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(SynthWrite, TinyIsDeterministicLoadsAndUsesTheRecipe) {
  TempDir dir;
  tools::SynthConfig cfg = tools::synth_preset("tiny");
  tools::write_synth(dir.file("a.gguf"), cfg);
  tools::write_synth(dir.file("b.gguf"), cfg);
  cfg.seed = 2;
  tools::write_synth(dir.file("c.gguf"), cfg);
  std::string a = slurp(dir.file("a.gguf"));
  EXPECT_EQ(a, slurp(dir.file("b.gguf")));
  EXPECT_NE(a, slurp(dir.file("c.gguf")));
  EXPECT_LT(a.size(), 2u << 20);  // small enough to embed

  auto f = gguf::GgufFile::open(dir.file("a.gguf"));
  gguf::Census c = gguf::take_census(*f);
  EXPECT_EQ(c.n_kda, 2u);
  EXPECT_EQ(c.n_mla, 2u);
  EXPECT_EQ(c.n_dense, 1u);
  EXPECT_EQ(c.n_moe, 3u);
  EXPECT_EQ(f->tensor("blk.1.ffn_gate_exps.weight")->type, Type::IQ1_M);
  EXPECT_EQ(f->tensor("blk.1.ffn_down_exps.weight")->type, Type::IQ2_XXS);
  EXPECT_EQ(f->tensor("blk.0.attn_q.weight")->type, Type::Q8_0);
  EXPECT_EQ(f->tensor("blk.0.attn_norm.weight")->type, Type::F32);
  // Norm weights are 1 + 0.1·N: decoded mean near 1.
  const auto* norm = f->tensor("output_norm.weight");
  double s = 0;
  for (int64_t i = 0; i < norm->n_elements(); ++i) s += reinterpret_cast<const float*>(norm->data)[i];
  EXPECT_NEAR(s / norm->n_elements(), 1.0, 0.05);
}

TEST(SynthRules, UserRulesWinAndMisfitsFallBack) {
  tools::SynthConfig cfg = tools::synth_preset("tiny");
  cfg.rules.insert(cfg.rules.begin(), tools::parse_type_rule("ffn_up_exps=q4_k"));
  cfg.rules.insert(cfg.rules.begin(), tools::parse_type_rule("ssm_f_a=IQ2_XXS"));  // rows of 128
  auto plan = tools::synth_plan(cfg);
  for (const auto& t : plan) {
    if (t.name == "blk.1.ffn_up_exps.weight") { EXPECT_EQ(t.type, Type::Q4_K); }
    if (t.name == "blk.1.ffn_gate_exps.weight") { EXPECT_EQ(t.type, Type::IQ1_M); }
    if (t.name == "blk.0.ssm_f_a.weight") {
      EXPECT_EQ(t.type, Type::Q8_0);  // rows of 128: not a multiple of 256
    }
    if (t.name == "blk.0.attn_output.weight") { EXPECT_EQ(t.type, Type::Q8_0); }
  }
  EXPECT_THROW(tools::parse_type_rule("no-equals"), k3::Error);
  EXPECT_THROW(tools::parse_type_rule("x=Q9_9"), k3::Error);
  EXPECT_THROW(tools::parse_type_rule("([=Q8_0"), k3::Error);
  EXPECT_THROW(tools::synth_preset("huge"), k3::Error);
  tools::SynthConfig bad = tools::synth_preset("tiny");
  bad.n_expert_used = 9;
  EXPECT_THROW(tools::synth_plan(bad), k3::Error);
}

TEST(SynthWrite, ShardsSplitIntoTheRequestedCount) {
  TempDir dir;
  tools::SynthConfig cfg = tools::synth_preset("tiny");
  cfg.shards = 3;
  auto res = tools::write_synth(dir.file("m.gguf"), cfg);
  ASSERT_EQ(res.files.size(), 3u);
  auto f = gguf::GgufFile::open(res.files[0]);
  EXPECT_EQ(f->tensors().size(), res.n_tensors);
}
