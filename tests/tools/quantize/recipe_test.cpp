// Type-choice rules (tools/quantize/quant_recipe.h) against independent references: the golden small-q2k and
// small-k3mix files (written by llama-quantize from the same F16 master as small-q8_0),
// llama-quantize's mixture and shape-fallback tables (docs/quantize.md), and the seed model card's
// census of the Kimi-K3 REAP55 IQ1_M release applied to a full-size synthetic K3 tensor list.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>

#include "core/error.h"
#include "gguf/file.h"
#include "tools/quantize/qtool_util.h"
#include "quant/types.h"
#include "tools/quantize/quant_recipe.h"
#include "tools/quantize/quantize.h"
#include "tools/quantize/quantize_imatrix.h"
#include "tools/synth/synth.h"

using k3::quant::Type;
using namespace k3::tools;
using k3::qtest::golden;

namespace {

// Plans `in` with the given options and checks every tensor's type and the order against `ref`.
void expect_same_types_and_order(const std::string& in, QuantizeOptions o, const std::string& ref,
                                 const Imatrix* im) {
  auto src = k3::gguf::GgufFile::open(golden(in));
  auto want = k3::gguf::GgufFile::open(golden(ref));
  QuantizePlan p = plan_quantize(*src, o, im);
  ASSERT_EQ(p.tensors.size(), want->tensors().size());
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    EXPECT_EQ(p.tensors[i].name, want->tensors()[i].name) << "order at " << i;
    EXPECT_EQ(k3::quant::type_name(p.tensors[i].to), k3::quant::type_name(want->tensors()[i].type))
        << p.tensors[i].name << " (" << p.tensors[i].rule << ")";
  }
}

}  // namespace

TEST(QuantRecipe, ParsesRecipesAndRejectsUnknownNames) {
  EXPECT_EQ(parse_recipe("q4_k_m").file_type, ftype::Q4_K_M);
  EXPECT_EQ(parse_recipe("Q4_K").file_type, ftype::Q4_K_M);
  EXPECT_EQ(parse_recipe("iq1_m").default_type, Type::IQ1_M);
  EXPECT_EQ(parse_recipe("MXFP4_MOE").file_type, 38u);
  EXPECT_TRUE(parse_recipe("copy").copy);
  Recipe reap = parse_recipe("K3_REAP_IQ1M");
  EXPECT_EQ(reap.file_type, ftype::Q8_0);
  EXPECT_TRUE(reap.small_tensors_f32);
  try {
    parse_recipe("Q7_X");
    FAIL() << "no error";
  } catch (const k3::Error& e) {
    EXPECT_NE(std::string(e.what()).find("Q7_X"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("IQ1_M"), std::string::npos);  // lists the accepted names
  }
}

TEST(QuantRecipe, TensorTypeRulesAreLowerCasedSearchRegexes) {
  TensorTypeRule r = parse_tensor_type_rule("BLK\\.(1[0-9])\\.FFN_DOWN_EXPS=IQ2_XXS");
  EXPECT_EQ(r.type, Type::IQ2_XXS);
  EXPECT_TRUE(r.matches("blk.12.ffn_down_exps.weight"));
  EXPECT_FALSE(r.matches("blk.2.ffn_down_exps.weight"));
  EXPECT_TRUE(parse_tensor_type_rule("attn_q=q8_0").matches("blk.3.attn_q.weight"));
  EXPECT_THROW(parse_tensor_type_rule("attn_q"), k3::Error);
  EXPECT_THROW(parse_tensor_type_rule("attn_q=q9_9"), k3::Error);
  EXPECT_THROW(parse_tensor_type_rule("(unclosed=q8_0"), k3::Error);
}

TEST(QuantRecipe, ShapeFallbackAndGpuSafeTypes) {
  // llama-quantize's shape fallback.
  EXPECT_EQ(shape_fallback(Type::Q2_K, 256), Type::Q2_K);
  EXPECT_EQ(shape_fallback(Type::Q2_K, 64), Type::Q4_0);
  EXPECT_EQ(shape_fallback(Type::IQ1_M, 64), Type::IQ4_NL);
  EXPECT_EQ(shape_fallback(Type::Q4_K, 64), Type::Q5_0);
  EXPECT_EQ(shape_fallback(Type::Q5_K, 96), Type::Q5_1);
  EXPECT_EQ(shape_fallback(Type::Q6_K, 64), Type::Q8_0);
  EXPECT_EQ(shape_fallback(Type::Q2_K, 48), Type::F16);
  EXPECT_THROW(shape_fallback(Type::Q8_0, 48), k3::Error);
  EXPECT_EQ(safe_gpu_type(Type::IQ1_S), Type::IQ1_M);
  EXPECT_EQ(safe_gpu_type(Type::IQ2_S), Type::IQ2_XS);
  EXPECT_EQ(safe_gpu_type(Type::IQ3_S), Type::Q3_K);
  EXPECT_EQ(safe_gpu_type(Type::IQ2_XXS), Type::IQ2_XXS);
}

// tiny10 is 64 wide: Q4_K/Q5_K tensors take llama-quantize's Q5_0/Q5_1 fallbacks, which
// we now produce (no Q8_0 substitute).
TEST(QuantRecipe, NarrowRowsFallBackToQ5LikeLlamaQuantize) {
  auto src = k3::gguf::GgufFile::open(golden("tiny10-base.gguf"));
  QuantizeOptions o;
  o.type = "Q4_K_S";
  QuantizePlan p = plan_quantize(*src, o, nullptr);
  int q50 = 0, q51 = 0;
  for (const TensorPlan& t : p.tensors) {
    if (t.to == Type::Q5_0) {
      ++q50;
      EXPECT_NE(t.rule.find("fallback Q4_K -> Q5_0"), std::string::npos) << t.name << ": " << t.rule;
    }
    if (t.to == Type::Q5_1) {
      ++q51;
      EXPECT_NE(t.rule.find("fallback Q5_K -> Q5_1"), std::string::npos) << t.name << ": " << t.rule;
    }
    if (t.to == Type::Q5_0 || t.to == Type::Q5_1) { EXPECT_NE(t.ne[0] % 256, 0) << t.name; }
    if (t.name.find("ffn_down_exps") != std::string::npos) {
      EXPECT_EQ(t.to, Type::Q5_0) << t.name;  // 32 wide
    }
  }
  EXPECT_GT(q50, 50);
  EXPECT_GE(q51, 1);  // the first attn_v-like tensors get Q5_K in Q4_K_S
}

TEST(QuantRecipe, WhichTensorsMayBeQuantized) {
  EXPECT_TRUE(may_quantize("blk.1.ffn_up_exps.weight", 3));
  EXPECT_TRUE(may_quantize("blk.0.ssm_beta.weight", 2));
  EXPECT_FALSE(may_quantize("blk.0.attn_norm.weight", 1));
  EXPECT_FALSE(may_quantize("blk.1.ffn_gate_inp.weight", 2));
  EXPECT_FALSE(may_quantize("blk.0.ssm_conv1d_q.weight", 3));
  EXPECT_FALSE(may_quantize("blk.0.ssm_dt.bias", 2));
  EXPECT_FALSE(may_quantize("blk.0.attn_q_a_norm.weight", 2));
}

TEST(QuantRecipe, ProcessingOrderIsLayerThenName) {
  std::vector<TensorDesc> t = {{"blk.10.a.weight", {32, 32}, Type::F32},
                               {"blk.2.b.weight", {32, 32}, Type::F32},
                               {"token_embd.weight", {32, 32}, Type::F32},
                               {"blk.2.a.weight", {32, 32}, Type::F32},
                               {"output.weight", {32, 32}, Type::F32}};
  std::vector<size_t> o = processing_order(t);
  std::vector<std::string> names;
  for (size_t i : o) names.push_back(t[i].name);
  EXPECT_EQ(names, (std::vector<std::string>{"output.weight", "token_embd.weight", "blk.2.a.weight",
                                             "blk.2.b.weight", "blk.10.a.weight"}));
}

// llama-quantize's own Q2_K mixture on small-* (file made from the F16 master); our plan from
// small-q8_0 must choose the same type for each of the 160 tensors, in the same order.
TEST(QuantRecipe, Q2KMixtureMatchesLlamaQuantize) {
  QuantizeOptions o;
  o.type = "Q2_K";
  o.allow_requantize = true;
  expect_same_types_and_order("small-q8_0.gguf", o, "small-q2k.gguf", nullptr);
}

TEST(QuantRecipe, ReapPresetMatchesGoldenK3Mix) {
  Imatrix im = load_imatrix(golden("small-imatrix.gguf"));
  QuantizeOptions o;
  o.type = "K3_REAP_IQ1M";
  o.allow_requantize = true;
  expect_same_types_and_order("small-q8_0.gguf", o, "small-k3mix.gguf", &im);
  // The same mix spelled as llama-quantize's command line for the golden file.
  o.type = "Q8_0";
  o.tensor_types = {"ffn_gate_exps=iq1_m", "ffn_up_exps=iq1_m", "ffn_down_exps=iq2_xxs"};
  expect_same_types_and_order("small-q8_0.gguf", o, "small-k3mix.gguf", &im);
}

// The golden small-mxfp4 is Q8_0 plus explicit MXFP4 expert overrides; the MXFP4_MOE file type
// gives the same expert types but, as its README notes, also the 3-D MLA tensors.
TEST(QuantRecipe, Mxfp4MoeTypes) {
  auto src = k3::gguf::GgufFile::open(golden("small-q8_0.gguf"));
  QuantizeOptions o;
  o.type = "MXFP4_MOE";
  o.allow_requantize = true;
  QuantizePlan p = plan_quantize(*src, o, nullptr);
  for (const TensorPlan& t : p.tensors) {
    const bool three_d = t.ne.size() >= 3 && t.ne[2] > 1;
    if (t.name.find("ssm_conv1d") != std::string::npos || t.ne.size() == 1 ||
        t.name.find("_norm") != std::string::npos || t.name.find("ffn_gate_inp") != std::string::npos ||
        t.name.find(".bias") != std::string::npos || t.name.find("ssm_a") != std::string::npos)
      EXPECT_EQ(t.to, Type::F32) << t.name;
    else if (three_d) EXPECT_EQ(t.to, Type::MXFP4) << t.name;
    else EXPECT_EQ(t.to, Type::Q8_0) << t.name;
  }
}

namespace {

// A full-size Kimi-K3 REAP55 tensor list as the release's source had it: native MXFP4 experts,
// BF16 dense weights, F32 small tensors (header only: nothing is written).
std::vector<TensorDesc> reap55_source(std::vector<std::pair<std::string, k3::gguf::Value>>* kvs) {
  SynthConfig cfg = synth_preset("kimi-k3-reap55");
  cfg.rules = {{"_exps", Type::MXFP4}};
  cfg.trunk_type = Type::BF16;
  std::vector<TensorDesc> v;
  for (const SynthTensor& t : synth_plan(cfg)) v.push_back({t.name, t.ne, t.type});
  *kvs = synth_metadata(cfg);
  return v;
}

std::map<Type, int> plan_census(const std::vector<TensorDesc>& tensors,
                                const std::vector<std::pair<std::string, k3::gguf::Value>>& kvs,
                                PlanOptions po, std::map<std::string, Type>* by_name = nullptr,
                                std::set<std::string>* quantizable = nullptr) {
  TypePlanner planner(model_facts(kvs, tensors), po);
  std::map<Type, int> census;
  for (size_t i : processing_order(tensors)) {
    TypeChoice c = planner.choose(tensors[i]);
    ++census[c.type];
    if (by_name) (*by_name)[tensors[i].name] = c.type;
    if (quantizable && c.quantizable) quantizable->insert(tensors[i].name);
  }
  return census;
}

}  // namespace

// The seed model card: 2573 tensors, 276 expert tensors × 400 slots, exactly
// 276 × 11,010,048 × 400 expert parameters, gate/up IQ1_M, down IQ2_XXS, dense Q8_0, no
// IQ1_S/IQ2_S/IQ3_S anywhere.
TEST(QuantRecipe, ReapPresetReproducesTheSeedCensus) {
  std::vector<std::pair<std::string, k3::gguf::Value>> kvs;
  std::vector<TensorDesc> src = reap55_source(&kvs);
  EXPECT_EQ(src.size(), 2573u);
  PlanOptions po;
  po.recipe = parse_recipe("K3_REAP_IQ1M");
  std::map<std::string, Type> by_name;
  std::set<std::string> quantizable;
  std::map<Type, int> census = plan_census(src, kvs, po, &by_name, &quantizable);

  int expert_tensors = 0;
  uint64_t expert_params = 0;
  for (const TensorDesc& t : src) {
    const Type got = by_name.at(t.name);
    if (t.name.find("_exps.weight") != std::string::npos) {
      ++expert_tensors;
      EXPECT_EQ(t.dim(2), 400) << t.name;
      EXPECT_EQ(t.dim(0) * t.dim(1), 11010048) << t.name;
      expert_params += static_cast<uint64_t>(t.dim(0) * t.dim(1) * t.dim(2));
      const bool down = t.name.find("ffn_down_exps") != std::string::npos;
      EXPECT_EQ(got, down ? Type::IQ2_XXS : Type::IQ1_M) << t.name;
    } else if (quantizable.count(t.name)) {
      EXPECT_EQ(got, Type::Q8_0) << t.name;
    } else {
      EXPECT_EQ(got, Type::F32) << t.name;  // norms, router, conv taps, biases
    }
  }
  EXPECT_EQ(expert_tensors, 276);
  EXPECT_EQ(expert_params, 276ull * 11010048ull * 400ull);
  EXPECT_EQ(census[Type::IQ1_M], 184);
  EXPECT_EQ(census[Type::IQ2_XXS], 92);
  EXPECT_EQ(census.count(Type::IQ1_S) + census.count(Type::IQ2_S) + census.count(Type::IQ3_S), 0u);
  EXPECT_EQ(census.count(Type::BF16) + census.count(Type::F16) + census.count(Type::MXFP4), 0u);
}

// llama-quantize's IQ1_M file type on the same model (its mixture rules for n_expert ≥ 4, ≠ 8),
// and --avoid-unsafe-gpu-types keeping IQ1_S out of an IQ1_S file.
TEST(QuantRecipe, LowBitMixturesOnFullK3) {
  std::vector<std::pair<std::string, k3::gguf::Value>> kvs;
  std::vector<TensorDesc> src = reap55_source(&kvs);
  PlanOptions po;
  po.recipe = parse_recipe("IQ1_M");
  std::map<std::string, Type> t;
  plan_census(src, kvs, po, &t);
  EXPECT_EQ(t.at("output.weight"), Type::Q5_K);
  EXPECT_EQ(t.at("token_embd.weight"), Type::Q2_K);
  EXPECT_EQ(t.at("blk.3.attn_output.weight"), Type::IQ2_XXS);
  EXPECT_EQ(t.at("blk.0.attn_v.weight"), Type::Q4_K);    // n_expert ≥ 4
  EXPECT_EQ(t.at("blk.0.ffn_down.weight"), Type::Q2_K);  // first n_layer/8 ffn_down tensors
  EXPECT_EQ(t.at("blk.90.ffn_down_exps.weight"), Type::IQ1_M);
  EXPECT_EQ(t.at("blk.90.ffn_up_exps.weight"), Type::IQ1_M);
  EXPECT_EQ(t.at("blk.3.attn_q_b.weight"), Type::IQ1_M);

  po.recipe = parse_recipe("IQ1_S");
  std::map<Type, int> plain = plan_census(src, kvs, po);
  EXPECT_GT(plain[Type::IQ1_S], 200);
  po.avoid_unsafe_gpu = true;
  std::map<Type, int> safe = plan_census(src, kvs, po);
  EXPECT_EQ(safe.count(Type::IQ1_S), 0u);
  EXPECT_EQ(safe[Type::IQ1_M], plain[Type::IQ1_S]);
}
