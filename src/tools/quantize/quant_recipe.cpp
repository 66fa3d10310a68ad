// tools/quant_recipe: llama-quantize's per-tensor type rules (see quant_recipe.h). The rules are
// re-stated from llama.cpp's llama-quant.cpp (llama_tensor_get_type, and llama-quantize's
// documented behaviour for the K-quant mixes it lists; summary in docs/quantize.md); the golden
// small-q2k / small-k3mix files, made by llama-quantize, are the check (tests/tools/quantize).
#include "tools/quantize/quant_recipe.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <regex>

#include "core/error.h"
#include "quant/codec.h"

namespace k3::tools {

using quant::Type;

struct TensorTypeRule::Compiled {
  std::regex re;
};

bool TensorTypeRule::matches(const std::string& name) const { return re && std::regex_search(name, re->re); }

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}
bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

TensorTypeRule make_rule(const std::string& pattern, Type type, std::string_view context) {
  TensorTypeRule r;
  r.pattern = lower(pattern);
  r.type = type;
  try {
    r.re = std::make_shared<const TensorTypeRule::Compiled>(
        TensorTypeRule::Compiled{std::regex(r.pattern, std::regex::ECMAScript)});
  } catch (const std::regex_error& e) {
    fail("{}: '{}' is not a valid regular expression ({})", context, pattern, e.what());
  }
  return r;
}

// Layer number of a "blk.N." name, −1 when there is none.
int64_t layer_of(const std::string& name) {
  if (name.compare(0, 4, "blk.") != 0) return -1;
  size_t i = 4;
  int64_t v = 0;
  bool any = false;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) && v < (1 << 30)) {
    v = v * 10 + (name[i] - '0');
    ++i;
    any = true;
  }
  if (!any || i >= name.size() || name[i] != '.') return -1;
  return v;
}

// ggml_n_dims: trailing extents of 1 do not count.
size_t n_dims_of(const std::vector<int64_t>& ne) {
  size_t n = 1;
  for (size_t i = 0; i < ne.size(); ++i)
    if (ne[i] > 1) n = i + 1;
  return n;
}

bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

bool is_v_like(const std::string& n) {
  return contains(n, "attn_qkv.weight") || contains(n, "attn_kv_b.weight") || contains(n, "attn_v.weight");
}

bool is_float_type(Type t) { return t == Type::F32 || t == Type::F16 || t == Type::BF16; }

struct RecipeRow {
  const char* name;
  uint32_t id;
  Type def;
};
// The file types we produce (llama_ftype ids); llama-quantize accepts more, which need quantizers
// (Q4_1, IQ3_S...) or mixture rules we do not carry. (Q5_0/Q5_1 are produced only as the
// shape fallbacks of Q4_K/Q5_K.)
constexpr RecipeRow kRecipes[] = {
    {"F32", ftype::ALL_F32, Type::F32},
    {"F16", ftype::MOSTLY_F16, Type::F16},
    {"BF16", ftype::BF16, Type::BF16},
    {"Q8_0", ftype::Q8_0, Type::Q8_0},
    {"Q6_K", ftype::Q6_K, Type::Q6_K},
    {"Q4_K_M", ftype::Q4_K_M, Type::Q4_K},
    {"Q4_K_S", ftype::Q4_K_S, Type::Q4_K},
    {"Q3_K_S", ftype::Q3_K_S, Type::Q3_K},
    {"Q2_K", ftype::Q2_K, Type::Q2_K},
    {"IQ2_XXS", ftype::IQ2_XXS, Type::IQ2_XXS},
    {"IQ1_M", ftype::IQ1_M, Type::IQ1_M},
    {"IQ1_S", ftype::IQ1_S, Type::IQ1_S},
    {"MXFP4_MOE", ftype::MXFP4_MOE, Type::MXFP4},
};

}  // namespace

TensorTypeRule parse_tensor_type_rule(std::string_view text) {
  size_t eq = text.rfind('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
    fail("--tensor-type '{}': expected REGEX=TYPE (e.g. ffn_down_exps=iq2_xxs)", text);
  std::string_view tname = text.substr(eq + 1);
  auto t = quant::type_from_name(tname);
  if (!t || !quant::type_info(*t).file_type)
    fail("--tensor-type '{}': unknown tensor type '{}'", text, tname);
  return make_rule(std::string(text.substr(0, eq)), *t, fmt::format("--tensor-type '{}'", text));
}

std::vector<std::string> recipe_names() {
  std::vector<std::string> v;
  for (const RecipeRow& r : kRecipes) v.emplace_back(r.name);
  v.emplace_back("COPY");
  v.emplace_back("K3_REAP_IQ1M");
  return v;
}

Recipe parse_recipe(std::string_view name) {
  std::string u = upper(name);
  if (u == "Q4_K") u = "Q4_K_M";
  Recipe r;
  r.name = u;
  if (u == "COPY") {
    r.copy = true;
    return r;
  }
  if (u == "K3_REAP_IQ1M") {
    // The Kimi-K3 REAP55 release (seed model card): gate/up experts IQ1_M, down experts
    // IQ2_XXS, dense weights Q8_0, small tensors F32; file type Q8_0 as llama-quantize writes
    // for a Q8_0 base with overrides (golden small-k3mix).
    r.file_type = ftype::Q8_0;
    r.default_type = Type::Q8_0;
    r.preset_rules = {{"ffn_(gate|up)_exps", Type::IQ1_M}, {"ffn_down_exps", Type::IQ2_XXS}};
    r.small_tensors_f32 = true;
    return r;
  }
  for (const RecipeRow& row : kRecipes) {
    if (u == row.name) {
      r.file_type = row.id;
      r.default_type = row.def;
      return r;
    }
  }
  std::string all;
  for (const std::string& n : recipe_names()) all += (all.empty() ? "" : ", ") + n;
  fail("unknown quantization type '{}' (accepted: {})", name, all);
}

ModelFacts model_facts(const std::vector<std::pair<std::string, gguf::Value>>& kvs,
                       const std::vector<TensorDesc>& tensors) {
  ModelFacts f;
  auto find = [&](const std::string& key) -> const gguf::Value* {
    for (const auto& kv : kvs)
      if (kv.first == key) return &kv.second;
    return nullptr;
  };
  if (const gguf::Value* a = find("general.architecture"); a && a->type == gguf::ValueType::STRING)
    f.arch = a->as_string();
  auto int_of = [&](const std::string& suffix, int64_t def) -> int64_t {
    const gguf::Value* v = find(f.arch + "." + suffix);
    if (!v) return def;
    if (v->is_array()) return v->size() ? v->int_at(0) : def;  // per-layer arrays: layer 0
    return v->is_integer() ? v->as_int() : def;
  };
  f.n_expert = int_of("expert_count", 0);
  f.n_layer = int_of("block_count", 0);
  const int64_t n_head = int_of("attention.head_count", 0);
  const int64_t n_head_kv = int_of("attention.head_count_kv", n_head);
  f.n_gqa = n_head_kv > 0 ? n_head / n_head_kv : 0;
  f.is_falcon = f.arch == "falcon";
  f.is_llama_70b = f.arch == "llama" && f.n_layer == 80;
  f.has_output = false;
  for (const TensorDesc& t : tensors) {
    if (t.name == "output.weight") f.has_output = true;
    if (is_v_like(t.name)) ++f.n_attention_wv;
  }
  return f;
}

std::vector<size_t> processing_order(const std::vector<TensorDesc>& tensors) {
  std::vector<size_t> idx(tensors.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::vector<int64_t> layer(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) layer[i] = layer_of(tensors[i].name);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    if (layer[a] != layer[b]) return layer[a] < layer[b];
    return tensors[a].name < tensors[b].name;
  });
  return idx;
}

bool may_quantize(const std::string& name, size_t n_dims) {
  if (n_dims < 2 || !name.ends_with("weight")) return false;
  static const char* const kNever[] = {"_norm.weight",
                                       "ffn_gate_inp.weight",
                                       "ffn_gate_tid2eid.weight",
                                       "altup",
                                       "laurel",
                                       "per_layer_model_proj",
                                       "ssm_conv1d",
                                       "shortconv.conv.weight",
                                       "indexer.k_proj.weight",
                                       "indexer.q_proj.weight",
                                       "time_mix_first.weight",
                                       "time_mix_w0.weight",
                                       "time_mix_w1.weight",
                                       "time_mix_w2.weight",
                                       "time_mix_v0.weight",
                                       "time_mix_v1.weight",
                                       "time_mix_v2.weight",
                                       "time_mix_a0.weight",
                                       "time_mix_a1.weight",
                                       "time_mix_a2.weight",
                                       "time_mix_g1.weight",
                                       "time_mix_g2.weight",
                                       "time_mix_decay_w1.weight",
                                       "time_mix_decay_w2.weight",
                                       "time_mix_lerp_fused.weight",
                                       "attn_rel_b.weight",
                                       ".position_embd",
                                       "sam.pos_embd",
                                       "sam.neck.",
                                       "sam.net_",
                                       ".rel_pos",
                                       ".patch_embd",
                                       ".patch_merger",
                                       "a.rvq.codebook",
                                       "mm.a.code_embd"};
  for (const char* bad : kNever)
    if (contains(name, bad)) return false;
  if (name == "position_embd.weight" || name == "token_types.weight") return false;
  return true;
}

Type shape_fallback(Type t, int64_t ne0) {
  if (ne0 % quant::type_info(t).block_elems == 0) return t;
  Type fb;
  switch (t) {
    case Type::IQ1_S:
    case Type::IQ1_M:
    case Type::IQ2_XXS:
    case Type::IQ2_XS:
    case Type::IQ2_S:
    case Type::IQ3_XXS:
    case Type::IQ3_S:
    case Type::IQ4_XS: fb = Type::IQ4_NL; break;
    case Type::Q2_0:
    case Type::Q2_K:
    case Type::Q3_K:
    case Type::TQ1_0:
    case Type::TQ2_0: fb = Type::Q4_0; break;
    case Type::Q4_K: fb = Type::Q5_0; break;
    case Type::Q5_K: fb = Type::Q5_1; break;
    case Type::Q6_K: fb = Type::Q8_0; break;
    default:
      fail("rows of {} elements cannot be stored as {} (block of {}) and {} has no fallback type", ne0,
           quant::type_name(t), quant::type_info(t).block_elems, quant::type_name(t));
  }
  if (ne0 % quant::type_info(fb).block_elems != 0) return Type::F16;
  return fb;
}

Type safe_gpu_type(Type t) {
  switch (t) {
    case Type::IQ1_S: return Type::IQ1_M;
    case Type::IQ2_S: return Type::IQ2_XS;
    case Type::IQ3_S: return Type::Q3_K;
    default: return t;
  }
}

TypePlanner::TypePlanner(ModelFacts facts, PlanOptions opt) : f_(std::move(facts)), o_(std::move(opt)) {
  for (const auto& [pattern, type] : o_.recipe.preset_rules)
    preset_rules_.push_back(make_rule(pattern, type, "preset " + o_.recipe.name));
}

Type TypePlanner::mixture(const TensorDesc& t, Type def) {
  const std::string& n = t.name;
  const uint32_t ft = o_.recipe.file_type;
  const bool iq_low = ft == ftype::IQ2_XXS || ft == ftype::IQ1_S || ft == ftype::IQ1_M;
  Type nt = def;

  if (n == "output.weight" || (!f_.has_output && n == "token_embd.weight")) {
    if (ft == ftype::MXFP4_MOE) return Type::Q8_0;
    if (f_.is_falcon || t.dim(0) % quant::type_info(def).block_elems != 0) return Type::Q8_0;
    if (iq_low) return Type::Q5_K;
    return def != Type::Q8_0 ? Type::Q6_K : def;
  }
  if (ft == ftype::MXFP4_MOE) return t.dim(2) > 1 ? Type::MXFP4 : Type::Q8_0;
  if (n == "token_embd.weight" || n == "per_layer_token_embd.weight") {
    if (iq_low) return Type::Q2_K;
    return def;
  }
  if (iq_low) {
    if (is_v_like(n)) {
      nt = (f_.n_gqa >= 4 || f_.n_expert >= 4) ? Type::Q4_K : Type::Q2_K;
      ++i_attention_wv_;
    } else if (contains(n, "attn_k.weight")) {
      if (f_.n_expert == 8) nt = Type::Q4_K;
    } else if (contains(n, "ffn_down")) {
      if (i_ffn_down_ < f_.n_layer / 8) nt = Type::Q2_K;
      ++i_ffn_down_;
    } else if (contains(n, "attn_output.weight")) {
      if (f_.n_expert == 8) nt = Type::Q5_K;
      else if (ft == ftype::IQ1_S || ft == ftype::IQ1_M) nt = Type::IQ2_XXS;
    }
    return nt;
  }
  if (is_v_like(n)) {
    if (ft == ftype::Q2_K) nt = f_.n_gqa >= 4 ? Type::Q4_K : Type::Q3_K;
    else if (ft == ftype::Q4_K_M && use_more_bits(i_attention_wv_, f_.n_attention_wv)) nt = Type::Q6_K;
    else if (ft == ftype::Q4_K_S && i_attention_wv_ < 4) nt = Type::Q5_K;
    if (f_.is_llama_70b && (nt == Type::Q3_K || nt == Type::Q4_K)) nt = Type::Q5_K;
    if (f_.n_expert == 8) nt = Type::Q8_0;
    ++i_attention_wv_;
  } else if (contains(n, "attn_k.weight")) {
    if (f_.n_expert == 8) nt = Type::Q8_0;
  } else if (contains(n, "ffn_down")) {
    int64_t i_layer = i_ffn_down_;
    if (f_.n_expert > 1) {
      // MoE: experts are not in layer order, so the layer comes from the name.
      i_layer = layer_of(n);
      if (i_layer < 0 || i_layer >= f_.n_layer)
        fail("tensor {}: cannot determine its layer (n_layer = {})", n, f_.n_layer);
    }
    const int64_t n_layer = f_.n_layer;
    if (ft == ftype::Q2_K) {
      nt = Type::Q3_K;
    } else if (ft == ftype::Q4_K_M) {
      if (f_.is_falcon)
        nt = i_layer < n_layer / 16 ? Type::Q6_K : use_more_bits(i_layer, n_layer) ? Type::Q5_K : Type::Q4_K;
      else if (use_more_bits(i_layer, n_layer)) nt = Type::Q6_K;
    } else if (ft == ftype::Q4_K_S && !f_.is_falcon && i_layer < n_layer / 8) {
      nt = Type::Q5_K;
    }
    ++i_ffn_down_;
  } else if (contains(n, "attn_output.weight")) {
    if (!f_.is_falcon) {
      if (f_.n_expert == 8) {
        if (ft == ftype::Q2_K || ft == ftype::Q3_K_S || ft == ftype::Q4_K_S || ft == ftype::Q4_K_M)
          nt = Type::Q5_K;
      } else if (ft == ftype::Q2_K) {
        nt = Type::Q3_K;
      }
    }
  }
  return nt;
}

TypeChoice TypePlanner::choose(const TensorDesc& t) {
  TypeChoice c;
  c.type = t.type;
  if (o_.recipe.copy) {
    c.rule = "copy";
    return c;
  }
  c.quantizable = may_quantize(t.name, n_dims_of(t.ne));
  if (!c.quantizable) {
    if (o_.recipe.small_tensors_f32 && (t.type == Type::F16 || t.type == Type::BF16)) {
      c.type = Type::F32;
      c.rule = "small tensor -> F32";
    } else {
      c.rule = "not quantized";
    }
    return c;
  }
  const Type def = o_.recipe.default_type;
  if (o_.token_embd_type && (t.name == "token_embd.weight" || t.name == "per_layer_token_embd.weight")) {
    c.type = *o_.token_embd_type;
    c.rule = "--token-embedding-type";
  } else if (o_.output_type && t.name == "output.weight") {
    c.type = *o_.output_type;
    c.rule = "--output-tensor-type";
  } else if (is_float_type(def)) {
    c.type = def;
    c.rule = "file type";
  } else {
    bool matched = false;
    for (const auto* rules : {&o_.rules, &preset_rules_}) {
      for (const TensorTypeRule& r : *rules) {
        if (r.matches(t.name)) {
          c.type = r.type;
          c.rule = (rules == &o_.rules ? "--tensor-type " : "preset ") + r.pattern;
          matched = true;
          break;
        }
      }
      if (matched) break;
    }
    if (!matched) {
      c.type = o_.pure ? def : mixture(t, def);
      c.rule = o_.pure ? "pure" : "mixture";
    }
    Type fb = c.type;
    try {
      fb = shape_fallback(c.type, t.dim(0));
    } catch (const Error& e) { fail("tensor {} [{}]: {}", t.name, fmt::join(t.ne, ", "), e.what()); }
    if (fb != c.type) {
      c.rule += fmt::format(" (ne[0]={} fallback {} -> {})", t.dim(0), quant::type_name(c.type),
                            quant::type_name(fb));
      c.type = fb;
      c.fell_back = true;
    }
  }
  if (o_.avoid_unsafe_gpu) {
    Type s = safe_gpu_type(c.type);
    if (s != c.type) {
      c.rule += fmt::format(" (GPU-safe {} -> {})", quant::type_name(c.type), quant::type_name(s));
      c.type = s;
    }
  }
  return c;
}

}  // namespace k3::tools
