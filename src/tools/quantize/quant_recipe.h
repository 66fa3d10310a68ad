// tools/quant_recipe: which type each tensor gets when a model is quantized — llama-quantize's
// per-tensor rules (llama-quant.cpp's llama_tensor_get_type; docs/quantize.md) plus our K3
// presets.
// Contract: pure functions of names, shapes, model facts and options; nothing here reads
// tensor data, so the same rules can be applied to a header-only tensor list (a full-size K3
// plan) and to a real file. TypePlanner is stateful (llama-quantize's ffn_down / attn_v
// counters): feed it the tensors in processing_order(). Unknown file-type or type names throw
// k3::Error listing the accepted names.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gguf/value.h"
#include "quant/types.h"

namespace k3::tools {

// llama_ftype ids (general.file_type; the TYPE table of docs/quantize.md).
namespace ftype {
constexpr uint32_t ALL_F32 = 0, MOSTLY_F16 = 1, Q4_0 = 2, Q8_0 = 7, Q2_K = 10, Q3_K_S = 11, Q3_K_M = 12,
                   Q4_K_S = 14, Q4_K_M = 15, Q5_K_S = 16, Q5_K_M = 17, Q6_K = 18, IQ2_XXS = 19, IQ1_S = 24,
                   IQ1_M = 31, BF16 = 32, MXFP4_MOE = 38;
}

// A `--tensor-type REGEX=TYPE` rule; the pattern is lower-cased and searched anywhere in the
// tensor name (ECMAScript), as llama-quantize does.
struct TensorTypeRule {
  std::string pattern;
  quant::Type type = quant::Type::Q8_0;
  bool matches(const std::string& name) const;

  struct Compiled;  // the std::regex, kept out of this header
  std::shared_ptr<const Compiled> re;
};
// Parses "REGEX=TYPE"; throws naming the rule when the regex or the type is bad.
TensorTypeRule parse_tensor_type_rule(std::string_view text);

// What the TYPE argument of `k3 quantize` selects.
struct Recipe {
  std::string name;                  // as accepted on the command line, upper case ("Q4_K_M")
  uint32_t file_type = ftype::Q8_0;  // written as general.file_type
  quant::Type default_type = quant::Type::Q8_0;
  bool copy = false;  // COPY: every tensor unchanged
  // Preset rules, tried after the user's --tensor-type rules (the user's win).
  std::vector<std::pair<std::string, quant::Type>> preset_rules;
  // Tensors that may not be quantized and are stored as F16/BF16 are widened to F32.
  bool small_tensors_f32 = false;
};
// Accepted: F32, F16, BF16, Q8_0, Q6_K, Q4_K_M (alias Q4_K), Q4_K_S, Q3_K_S, Q2_K, IQ2_XXS,
// IQ1_M, IQ1_S, MXFP4_MOE, COPY, K3_REAP_IQ1M (case-insensitive).
Recipe parse_recipe(std::string_view name);
std::vector<std::string> recipe_names();

// The model facts the mixture rules look at (docs/quantize.md, "Type rules in short").
struct ModelFacts {
  std::string arch;
  int64_t n_expert = 0;
  int64_t n_gqa = 0;  // n_head / n_head_kv of layer 0 (0 when n_head_kv is 0)
  int64_t n_layer = 0;
  int64_t n_attention_wv = 0;  // number of V-like tensors (attn_v / attn_qkv / attn_kv_b)
  bool has_output = true;      // false: tied embeddings (no output.weight)
  bool is_llama_70b = false;
  bool is_falcon = false;
};
struct TensorDesc {
  std::string name;
  std::vector<int64_t> ne;
  quant::Type type = quant::Type::F32;
  int64_t dim(size_t i) const { return i < ne.size() ? ne[i] : 1; }
};
ModelFacts model_facts(const std::vector<std::pair<std::string, gguf::Value>>& kvs,
                       const std::vector<TensorDesc>& tensors);

// llama-quantize's processing order: by the layer number of a "blk.N." prefix (none = −1),
// then by name.
std::vector<size_t> processing_order(const std::vector<TensorDesc>& tensors);
// Whether llama-quantize may change this tensor's type at all (1-D tensors, norms, the router,
// conv taps, biases and the like never change).
bool may_quantize(const std::string& name, size_t n_dims);
// The shape fallback: the type used when ne[0] is not a multiple of `t`'s block size (F16 as
// the last resort; table in docs/quantize.md);
// throws for types without a fallback.
quant::Type shape_fallback(quant::Type t, int64_t ne0);
// The substitute for types that corrupt CUDA matmuls on sm_120 (IQ1_S → IQ1_M,
// IQ2_S → IQ2_XS, IQ3_S → Q3_K; same block size); other types are returned unchanged.
quant::Type safe_gpu_type(quant::Type t);

struct PlanOptions {
  Recipe recipe;
  std::vector<TensorTypeRule> rules;  // user --tensor-type rules, in command-line order
  bool pure = false;
  std::optional<quant::Type> output_type;      // --output-tensor-type
  std::optional<quant::Type> token_embd_type;  // --token-embedding-type
  bool avoid_unsafe_gpu = false;
};

struct TypeChoice {
  quant::Type type = quant::Type::F32;
  bool quantizable = false;  // may_quantize() held
  bool fell_back = false;    // the shape fallback changed the type
  std::string rule;          // what decided: "copy", "mixture", "--tensor-type X", ...
};

class TypePlanner {
 public:
  TypePlanner(ModelFacts facts, PlanOptions opt);
  // Call once per tensor, in processing_order().
  TypeChoice choose(const TensorDesc& t);

 private:
  quant::Type mixture(const TensorDesc& t, quant::Type def);
  ModelFacts f_;
  PlanOptions o_;
  std::vector<TensorTypeRule> preset_rules_;
  int64_t i_ffn_down_ = 0, i_attention_wv_ = 0;
};

}  // namespace k3::tools
